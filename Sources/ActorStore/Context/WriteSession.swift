import ActorStorePersistence
import Foundation

/// One write transaction of a ``Realm``: adds, creates, updates and deletes objects on the engine's
/// transaction.
///
/// Realm's mutating calls (`add`, `create`, property setters) do not throw, so a failure inside a
/// transaction (a duplicate primary key, a value that does not fit, a full disk while building the
/// record) is latched (`fail(_:)`, held by the realm's `TransactionState`); later operations of the
/// transaction are skipped, and `write` / `commitWrite` roll the whole transaction back and throw it.
/// Nothing of a failed transaction is ever committed.
final class WriteSession {
    unowned let context: RealmContext
    let transaction: WriteTransaction
    /// The task that began the transaction (to tell a nested `beginWrite` from a concurrent one).
    let owner: Int?
    // `@exclusivity(unchecked)` on this state: a session is confined to its realm's actor and none of these is
    // accessed re-entrantly while being modified (no access is held across a call).
    @exclusivity(unchecked) var adding = Set<ObjectIdentifier>()
    @exclusivity(unchecked) var addDepth = 0
    @exclusivity(unchecked) var encoding: [(object: ObjectBase, property: PropertyInfo, slot: any _Persistable)] = []
    @exclusivity(unchecked) var fixups: [(object: ObjectBase, property: PropertyInfo, slot: any _Persistable)] =
        []
    @exclusivity(unchecked) var policy = Realm.UpdatePolicy.error
    /// The frozen objects `create(_:value:)` is copying right now (a link back to one of them is a cycle).
    @exclusivity(unchecked) var copying = Set<FrozenObjectIdentity>()
    /// The copies the outermost `create(_:value:)` made of frozen objects: an object reached twice (a list
    /// holding it twice, two links to it) is copied once.
    @exclusivity(unchecked) var copies: [FrozenObjectIdentity: ObjectKey] = [:]
    /// Link columns of those copies to write when the outermost operation ends (they reach a cycle).
    @exclusivity(unchecked) var copyFixups: [CopyFixup] = []
    /// Embedded objects inserted by the add or create under way: a second link to one would give it two parents.
    @exclusivity(unchecked) var embeddedAdded = Set<ObjectIdentifier>()
    /// The row and column a property set is encoding a value for (see `set`).
    @exclusivity(unchecked) var target: (table: TableID, key: ObjectKey, column: Int)?
    /// The row array of inserts of objects without links, reused from one to the next (see `insert(_:)`).
    var insertRow: [Value] = []
    /// The column array of property sets, reused from one to the next (see `update(_:ordinal:value:)`).
    @exclusivity(unchecked) var updateColumns: [(column: Int, value: Value)] = []
    /// The binding of the class inserted last (bulk inserts are usually of one class).
    @exclusivity(unchecked) var lastInsert: (type: ObjectIdentifier, bindings: SchemaBindings, binding: TableBinding)?

    init(context: RealmContext, transaction: WriteTransaction, owner: Int?) {
        self.context = context
        self.transaction = transaction
        self.owner = owner
    }

    /// Whether the current task may use and end this transaction: it began it. (A transaction begun outside
    /// any task would be every task's; `beginWrite()` being `async` rules that out.)
    ///
    /// True at once while the synchronous block of `write(_:)` runs: the block cannot suspend, so nothing but
    /// the task that began the transaction runs on the actor until it returns (and asking the task for its
    /// identity on every property set was a measurable share of a bulk insert).
    var belongsToCurrentTask: Bool { runsWriteBlock || owner == nil || owner == Realm.currentTaskID() }

    /// Whether the synchronous block of `write(_:)` that began this transaction is running (see
    /// `belongsToCurrentTask`).
    @exclusivity(unchecked) var runsWriteBlock = false

    /// The first failure of this session's transaction (its latch, held by the realm's `TransactionState`),
    /// or nil while nothing failed.
    var failure: RealmError? { context.transaction.failure(of: self) }

    /// Latches `error` as the transaction's failure, unless one is already latched.
    func fail(_ error: RealmError) {
        context.transaction.fail(error, in: self)
    }

    /// Runs one engine operation; a failure is recorded. Row locations are stale afterwards.
    func run<T>(_ operation: () throws(StorageError) -> T) -> T? {
        defer { context.invalidateLocations() }
        do throws(StorageError) {
            return try operation()
        } catch {
            fail(RealmError(error))
            return nil
        }
    }

    // MARK: Tables

    /// The binding of `info`'s class, creating its table (and those of classes it links to) if needed.
    func binding(for info: ObjectSchemaInfo) -> TableBinding? {
        if let problem = context.joinProblems[ObjectIdentifier(info.type)] {
            fail(RealmError(.schemaMismatch, "\(info.className) cannot be written to this file: \(problem)."))
            return nil
        }
        if let binding = context.bindings.binding(for: info.type) { return binding }
        let problems = context.problems(of: info)
        guard problems.isEmpty else {
            fail(RealmError(.schemaMismatch, "\(info.className) cannot be stored: " + problems.joined(separator: " ")))
            return nil
        }
        let new = SchemaCheck.closure(of: [info]).filter { transaction.tableID(named: $0.className) == nil }
        let differences = SchemaCheck.differences(SchemaCheck.closure(of: [info]), transaction)
        guard differences.isEmpty else {
            fail(
                RealmError(
                    .schemaMismatch,
                    "\(info.className) does not match the stored schema: " + differences.joined(separator: "; ")))
            return nil
        }
        if !new.isEmpty {
            let schema = transaction.state.schema + new.map(\.tableSchema)
            guard run({ () throws(StorageError) in try transaction.setSchema(schema) }) != nil else { return nil }
        }
        context.rebind()
        return context.bindings.binding(for: info.type)
    }
}
