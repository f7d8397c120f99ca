import Testing

// Test files are grouped by feature (WriteTests, QueryTests, MigrationTests, ...). Where a test came from is
// kept as a tag, shown in test reports and usable in Xcode's test plans.

extension Tag {
    /// An example or stated behaviour of Realm Swift's documentation (the guide's Models, Relationships,
    /// Collections, Writes, Realms, Threading, Filtering and Migrations sections), translated to ActorStore
    /// (`@Persisted` for `dynamic var`, `update: .modified` for `update: true`, `try await realm.write { realm
    /// in ... }` for `try! realm.write { ... }`) and asserting that it behaves as the documentation says.
    @Tag static var seed: Self

    /// Found by an audit of the seeds (the guide's Models, Writes, Realms and Threading sections, the Realms
    /// overview and the RLMRealm API reference) for examples and stated behaviours the seed tests did not
    /// cover. Each divergence the audit found was fixed, or (an object deleted in a cancelled transaction is
    /// valid again) documented as a deliberate difference and tested as such.
    @Tag static var audit: Self

    /// A defect found in review, or a trap an audit found reachable through the public API or a file (an input
    /// that used to stop the program or, for the index planner's huge doubles, silently lose matches); the
    /// test states the behaviour that now holds.
    @Tag static var regression: Self
}
