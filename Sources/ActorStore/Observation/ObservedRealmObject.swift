import ActorStorePersistence
import Foundation
import Observation

/// One object as an `@Observable` value that updates itself, and writes to it: the view a detail screen
/// holds (Realm Swift's `@ObservedRealmObject`, in Swift 6).
///
/// ```swift
/// let rex = try ObservedRealmObject(puppies.results[0], in: realm)
/// Text(rex.object?.name ?? "deleted")                 // re-renders when Rex changes
/// try await rex.write { $0.name = "Rex II" }          // the binding's `$rex.name = "Rex II"`
/// ```
///
/// ``object`` is the object frozen at the newest version that changed it, or nil once it is deleted
/// (observation then ends). ``changedProperties`` lists what the last update changed, with old and new
/// values. The view starts from the frozen object it is given: if the object changed since that version,
/// the first update arrives at once.
///
/// - Important: The view is isolated to the actor that makes it (usually the main actor), like
///   ``ObservedResults``; its ``object`` is `Sendable`.
@Observable
public final class ObservedRealmObject<T: Object>: ObservedView {
    typealias Source = ObjectSource<T>

    /// What an update sets (one stored property, so that one update is one change for observers).
    struct State: Sendable {
        var object: Frozen<T>?
        var properties: [PropertyChange]
    }

    private var state: State

    /// Why observation stopped early (the realm's files were closed, a key path no longer matches the
    /// model); nil while it runs.
    public internal(set) var error: RealmError?

    /// The realm the object belongs to, for writes (see ``write(_:)``).
    public let realm: Realm

    @ObservationIgnored private var task: Task<Void, Never>?

    /// The object at the newest version that changed it; nil once it was deleted.
    public var object: Frozen<T>? { state.object }

    /// The watched properties the last update changed, each with its old and new value (empty before the
    /// first update and after deletion). With coalescing, a property changed by several commits reports
    /// its value before the first and after the last.
    public var changedProperties: [PropertyChange] { state.properties }

    /// Whether the object was deleted (``object`` is then nil).
    public var isDeleted: Bool { state.object == nil }

    /// Observes one object.
    ///
    /// - Parameters:
    ///   - object: The object, frozen at any version (a row of ``ObservedResults/results``, say).
    ///   - realm: A realm open on the object's file.
    ///   - keyPaths: The properties (`"name"`, `"dogs.age"`) whose changes count; nil for all of them (and
    ///     of objects they link to, up to four links away).
    ///   - isolation: The actor the view belongs to: leave the default, the caller's.
    /// - Throws: `RealmError.invalidObject` when `realm` is open on another file, `RealmError.invalidKeyPath`
    ///   when a key path names no stored property, `RealmError.closed` when the realm's files are closed.
    public convenience init(
        _ object: Frozen<T>, in realm: Realm, keyPaths: [String]? = nil, isolation: isolated any Actor = #isolation
    ) throws(RealmError) {
        let paths = try keyPaths.map { (paths) throws(RealmError) in
            try KeyPathNames.parse(paths, object.binding.info, in: object.context.snapshot.state)
        }
        try self.init(object, realm: realm, paths: paths, isolation: isolation)
    }

    /// Observes one object, where only the given properties (`\.name`, `\.owner?.name`, `\.dogs.age`)
    /// count. See ``init(_:in:keyPaths:isolation:)-(_,_,[String]?,_)``.
    /// - Throws: `RealmError.invalidObject` when `realm` is open on another file, `RealmError.closed` when
    ///   the realm's files are closed.
    public convenience init(
        _ object: Frozen<T>, in realm: Realm, keyPaths: [PartialKeyPath<T>],
        isolation: isolated any Actor = #isolation
    ) throws(RealmError) {
        try self.init(
            object, realm: realm, paths: KeyPathNames.names(keyPaths, object.binding.info), isolation: isolation)
    }

    private init(
        _ object: Frozen<T>, realm: Realm, paths: [[String]]?, isolation: isolated any Actor
    ) throws(RealmError) {
        guard object.context.fileKey == realm.fileKey else {
            throw RealmError(
                .invalidObject,
                "The \(object.binding.info.className) to observe belongs to another realm's file: observe it "
                    + "with a Realm open on that file.")
        }
        let info = ClassRegistry.info(for: T.self)
        let file = try ObservedFile(engine: realm.engine, fileKey: realm.fileKey, root: info)
        let observation = try ObjectObservation(
            file: file, info: info, key: object.key, keyPaths: paths, origin: object.context)
        self.realm = realm
        self.state = State(object: object, properties: [])
        task = ObservedDriver.start(self, ObjectSource<T>(observation, key: object.key), isolation: isolation)
    }

    deinit { task?.cancel() }

    /// Stops observing: the view keeps its last values and changes no more; the versions it held for
    /// observing are released. Releasing the view does the same.
    public func cancel() {
        task?.cancel()
        task = nil
    }

    /// Runs `block` on the live object in a write transaction on ``realm`` and commits it: the Swift 6 form
    /// of a Realm binding's `$dog.name = "Rex"`. The view shows the change once the commit reaches it.
    ///
    /// ```swift
    /// try await rex.write { $0.age += 1 }
    /// ```
    /// - Throws: `RealmError.invalidObject` when the object was deleted; the block's error; the commit's
    ///   (see ``Realm/write(_:)->_``).
    public nonisolated(nonsending) func write(_ block: @Sendable (T) throws -> Void) async throws {
        guard let object = state.object else {
            throw RealmError(
                .invalidObject,
                "The \(ClassRegistry.info(for: T.self).className) to change was deleted: nothing was written.")
        }
        try await realm.write(object, block)
    }

    /// Shows the object after an update; observation ends once it is deleted.
    func apply(_ update: State) -> Bool {
        state = update
        return update.object != nil
    }
}

/// The updates of an ``ObservedRealmObject``: an object observation's deliveries.
final class ObjectSource<T: Object>: ObservedSource {
    typealias Update = ObservedRealmObject<T>.State

    private let observation: ObjectObservation
    private let key: ObjectKey
    var pending: [ChangeSubscription.Batch] = []

    init(_ observation: ObjectObservation, key: ObjectKey) {
        self.observation = observation
        self.key = key
    }

    func next() async throws(RealmError) -> Update? {
        try await observation.next().map(update)
    }

    var subscription: ChangeSubscription { observation.subscription }

    func update(for batches: [ChangeSubscription.Batch]) throws(RealmError) -> Update? {
        Self.merged(try observation.deliveries(for: batches).map { update($0) })
    }

    private func update(_ delivery: ObjectObservation.Delivery) -> Update {
        switch delivery {
        case .change(let context, let properties, _, _):
            Update(object: context.frozen(T.self, key), properties: properties)
        case .deleted: Update(object: nil, properties: [])
        }
    }

    /// The object after `second`, with each property changed by either: its value before `first` and
    /// after `second`.
    static func merge(_ first: Update, _ second: Update) -> Update {
        guard second.object != nil else { return second }
        var properties = first.properties
        for change in second.properties {
            if let i = properties.firstIndex(where: { $0.name == change.name }) {
                properties[i] = PropertyChange(
                    name: change.name, oldValue: properties[i].oldValue, newValue: change.newValue)
            } else {
                properties.append(change)
            }
        }
        return Update(object: second.object, properties: properties)
    }
}
