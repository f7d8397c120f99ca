import ActorStorePersistence
import Foundation

/// One `@Persisted` property of a model class, as discovered from a probe instance. A class, so that the
/// per-object loops of inserts and creates pass it around by reference instead of copying its fields.
final class PropertyInfo: @unchecked Sendable {
    // @unchecked: every field is a `let`; `kind` holds metatypes (immutable) and `accessor` closures that
    // capture only metatypes.
    let name: String
    /// Index of the property's slot in an object (its construction order).
    let ordinal: Int
    let kind: _PropertyKind
    let options: PersistedOptions
    let accessor: PropertyAccessor
    /// For `LinkingObjects`: the linking property of the origin class.
    let originProperty: String?
    /// The initial value of a fresh instance, encoded; nil when it differs between instances (`UUID()`,
    /// `ObjectId.generate()`, `Date()`) or is not a plain value, so each use needs a fresh instance.
    let stableDefault: Value?

    init(
        name: String, ordinal: Int, kind: _PropertyKind, options: PersistedOptions, accessor: PropertyAccessor,
        originProperty: String?, stableDefault: Value?
    ) {
        self.name = name
        self.ordinal = ordinal
        self.kind = kind
        self.options = options
        self.accessor = accessor
        self.originProperty = originProperty
        self.stableDefault = stableDefault
    }
}

/// The schema of one model class: its properties, primary key, and any problem found while discovering
/// it. Made once per class per process (see ``ClassRegistry``) and immutable afterwards.
final class ObjectSchemaInfo: @unchecked Sendable {
    // @unchecked: every stored property is a `let` of Sendable-by-content data (metatypes, strings,
    // PropertyInfo), except `keyPathCache`, which is guarded by its own lock.
    let type: ObjectBase.Type
    let className: String
    let isEmbedded: Bool
    /// Indexed by ordinal.
    let properties: [PropertyInfo]
    /// The order properties are declared in (superclass first): the order of `create(_:value:)` arrays.
    let declarationOrder: [PropertyInfo]
    let slotCount: Int
    let primaryKey: PropertyInfo?
    let problems: [String]
    /// Whether every stored property of the class (and of its superclasses below `Object` or
    /// `EmbeddedObject`) is `@Persisted`: a managed instance then holds nothing but its row, and a loop may
    /// point an instance nothing refers to any more at its next row (`RealmContext.loopObject`). False
    /// when the class has a stored property of its own (`var scratch = 0`, a `lazy var`), whose value would
    /// otherwise carry over from one row to the next.
    let managedInstancesHoldOnlyTheirRow: Bool
    private let byName: [String: Int]
    private let keyPathCache = Locked<[AnyKeyPath: [PropertyInfo]]>([:])

    init(
        type: ObjectBase.Type, className: String, properties: [PropertyInfo], declarationOrder: [PropertyInfo],
        slotCount: Int, problems: [String], managedInstancesHoldOnlyTheirRow: Bool
    ) {
        self.type = type
        self.managedInstancesHoldOnlyTheirRow = managedInstancesHoldOnlyTheirRow
        self.className = className
        self.isEmbedded = type is EmbeddedObject.Type
        self.properties = properties
        self.declarationOrder = declarationOrder
        self.slotCount = slotCount
        self.primaryKey = properties.first { $0.options.primaryKey }
        self.storedProperties = properties.filter { !$0.kind.isLinkingObjects }
        self.hasLinks = storedProperties.contains { $0.kind.linkTarget != nil }
        self.problems = problems
        var byName: [String: Int] = [:]
        for property in properties { byName[property.name] = property.ordinal }
        self.byName = byName
    }

    func property(named name: String) -> PropertyInfo? { byName[name].map { properties[$0] } }

    /// The properties stored as columns (all but `LinkingObjects`), in ordinal order.
    let storedProperties: [PropertyInfo]
    /// Whether any stored property can refer to other objects (links, or collections of them).
    let hasLinks: Bool

    /// The table schema this class maps to.
    var tableSchema: TableSchema {
        TableSchema(
            className,
            columns: storedProperties.map { property in
                ColumnSchema(
                    property.name, property.kind.columnType,
                    linkTarget: property.kind.linkTarget.map { ClassRegistry.info(for: $0).className },
                    indexed: property.options.indexed || property.options.primaryKey,
                    primaryKey: property.options.primaryKey)
            }, isEmbedded: isEmbedded)
    }

    /// The ordinal of the property a key path reads (`\Dog.name`), found once per key path by reading it
    /// from a probe instance; nil if the key path reads no `@Persisted` property of this class (or goes on
    /// through a link: see ``propertyPath(of:)``).
    func ordinal(of keyPath: AnyKeyPath) -> Int? {
        guard let path = propertyPath(of: keyPath), path.count == 1 else { return nil }
        return path[0].ordinal
    }

    /// The properties a key path reads, from this class through to-one links (`\Dog.owner?.name` is
    /// `owner`, then `Person.name`); nil if it reads something else (a computed property reading several,
    /// a non-`@Persisted` property, a property of a collection's elements). Found once per key path with
    /// probe instances.
    func propertyPath(of keyPath: AnyKeyPath) -> [PropertyInfo]? {
        guard let path = recordedPath(of: keyPath) else { return nil }
        let throughCollection = path.dropLast().contains { $0.kind.collection != .single }
        return throughCollection ? nil : path
    }

    /// ``propertyPath(of:)``, also following the elements of lists and sets of objects (`\Person.dogs.age`
    /// is `dogs`, then `Dog.age`: see `List`'s dynamic members): the paths observers can watch.
    func observedPath(of keyPath: AnyKeyPath) -> [PropertyInfo]? { recordedPath(of: keyPath) }

    private func recordedPath(of keyPath: AnyKeyPath) -> [PropertyInfo]? {
        if let hit = keyPathCache.withLock({ $0[keyPath] }) { return hit }
        let probe = type.init()
        let recorder = KeyPathProbe()
        probe._probe = recorder
        _ = probe[keyPath: keyPath]
        guard let path = recorder.path(from: probe) else { return nil }
        keyPathCache.withLock { $0[keyPath] = path }
        return path
    }

    /// Calls `body` for each property given in `value` (a dictionary by name, an array in declaration
    /// order, or an object of the same class); `body` returns whether it accepted the value.
    /// - Returns: the names of properties whose given value was rejected (dictionary keys that name no stored
    ///   property are skipped, not rejected); nil if `value` is none of these forms (the caller may know
    ///   others, such as a frozen object, and reports the rest).
    func forEachGivenValue(in value: Any, _ body: (PropertyInfo, Any) -> Bool) -> [String]? {
        var rejected: [String] = []
        if let dictionary = value as? [String: Any] {
            // Keys that are not stored properties are ignored, as Realm does ("Realm will ignore any properties
            // in the JSON not defined by the Object"): a JSON document may carry more than the model keeps.
            for (name, given) in dictionary {
                guard let property = property(named: name), !property.kind.isLinkingObjects else { continue }
                if !body(property, given) { rejected.append(name) }
            }
        } else if let array = value as? [Any] {
            let stored = declarationOrder.filter { !$0.kind.isLinkingObjects }
            for (property, given) in zip(stored, array) where !body(property, given) {
                rejected.append(property.name)
            }
            if array.count > stored.count { rejected.append("(\(array.count - stored.count) extra array values)") }
        } else if let object = value as? ObjectBase, Swift.type(of: object) == type {
            for property in storedProperties {
                guard let given = object[property.name] else { continue }
                if !body(property, given) { rejected.append(property.name) }
            }
        } else {
            return nil
        }
        return rejected
    }
}

/// The process-wide table of discovered model classes.
enum ClassRegistry {
    private static let infos = Locked<[ObjectIdentifier: ObjectSchemaInfo]>([:])

    /// The schema of `type`, discovering it on first use.
    static func info(for type: ObjectBase.Type) -> ObjectSchemaInfo {
        let id = ObjectIdentifier(type)
        if let info = infos.withLock({ $0[id] }) { return info }
        // Discover outside the lock: making probe instances re-enters `info(for:)`.
        let info = discover(type)
        return infos.withLock { table in
            if let existing = table[id] { return existing }
            table[id] = info
            return info
        }
    }

    /// Every class discovered so far in this process.
    static var allDiscovered: [ObjectSchemaInfo] { infos.withLock { Array($0.values) } }

    private static func makeProbe(_ type: ObjectBase.Type) -> ObjectBase {
        let stack = ConstructionStack.current
        let savedValues = PushedValues()
        stack.values.swapContents(with: savedValues)
        let saved = (stack.height, stack.discovering, stack.managedConstruction)
        stack.height = 0
        stack.discovering = ObjectIdentifier(type)
        stack.managedConstruction = false
        let probe = type.init()
        stack.values.swapContents(with: savedValues)
        (stack.height, stack.discovering, stack.managedConstruction) = saved
        return probe
    }

    private static func discover(_ type: ObjectBase.Type) -> ObjectSchemaInfo {
        let className = String(describing: type)
        let probe = makeProbe(type)
        let second = makeProbe(type)
        var problems: [String] = []
        // Mirror lists a class's own stored properties; walk up to put superclass properties first.
        var levels: [Mirror] = []
        var mirror: Mirror? = Mirror(reflecting: probe)
        while let current = mirror, current.subjectType != ObjectBase.self, current.subjectType != Object.self,
            current.subjectType != EmbeddedObject.self
        {
            levels.append(current)
            mirror = current.superclassMirror
        }
        var declared: [PropertyInfo] = []
        /// Stored properties without `@Persisted`: ignored, unless they are the model's only properties or
        /// collections, which a user of Realm's older `dynamic var` style would expect to be stored.
        var unpersisted: [(name: String, value: Any)] = []
        /// Whether a stored property other than a `@Persisted` wrapper was found (lazy storage included).
        var hasOwnState = false
        for level in levels.reversed() {
            for child in level.children {
                guard let wrapper = child.value as? any PersistedDescribing, let label = child.label else {
                    hasOwnState = true
                    if let label = child.label, !label.hasPrefix("$__lazy") { unpersisted.append((label, child.value)) }
                    continue
                }
                let name = label.hasPrefix("_") ? String(label.dropFirst()) : label
                let ordinal = wrapper.position - probe._slotBase
                guard probe._slots.indices.contains(ordinal) else {
                    problems.append(
                        "'\(className).\(name)' could not be located: declare @Persisted properties as stored "
                            + "properties with an initial value or Realm's default, and give the class an init().")
                    continue
                }
                let slot = probe._slots[ordinal]
                var origin: String?
                if let linking = slot as? any LinkingObjectsDescribing { origin = linking.originProperty }
                var stable: Value?
                let kind = wrapper.kind
                if kind.scalar != .link, kind.collection == .single, !kind.isLinkingObjects {
                    let a = wrapper.accessor.encode(slot, _Encoder(session: nil))
                    let b = wrapper.accessor.encode(second._slots[ordinal], _Encoder(session: nil))
                    if a == b { stable = a }
                } else if !kind.isLinkingObjects {
                    switch kind.collection {
                    case .single: stable = .null
                    case .list: stable = .list([])
                    case .set: stable = .set([])
                    case .map: stable = .map([])
                    }
                }
                declared.append(
                    PropertyInfo(
                        name: name, ordinal: ordinal, kind: kind, options: wrapper.options, accessor: wrapper.accessor,
                        originProperty: origin, stableDefault: stable))
            }
        }
        let collectionPrefixes = ["List<", "MutableSet<", "Map<", "LinkingObjects<"]
        for (name, value) in unpersisted {
            let typeName = String(describing: Swift.type(of: value))
            guard declared.isEmpty || collectionPrefixes.contains(where: { typeName.hasPrefix($0) }) else { continue }
            problems.append(
                "'\(className).\(name)' is not @Persisted, so it would never be stored: declare it as "
                    + "`@Persisted var \(name)` (Realm's older `@objc dynamic var` and `let \(name) = List<…>()` "
                    + "declarations are not read).")
        }
        if declared.count != probe._slots.count {
            problems.append(
                "\(className) has \(probe._slots.count) @Persisted values but \(declared.count) @Persisted properties "
                    + "were found; declare @Persisted only on stored properties of Object subclasses.")
        }
        var byOrdinal = declared
        byOrdinal.sort { $0.ordinal < $1.ordinal }
        if Set(byOrdinal.map(\.ordinal)) != Set(0..<byOrdinal.count) {
            problems.append("\(className)'s @Persisted properties could not be matched to their storage.")
            byOrdinal = declared.enumerated().map { i, p in
                PropertyInfo(
                    name: p.name, ordinal: i, kind: p.kind, options: p.options, accessor: p.accessor,
                    originProperty: p.originProperty, stableDefault: p.stableDefault)
            }
        }
        problems += validate(className, type: type, byOrdinal)
        return ObjectSchemaInfo(
            type: type, className: className, properties: byOrdinal,
            declarationOrder: byOrdinal.count == declared.count ? declared : byOrdinal,
            slotCount: probe._slots.count, problems: problems, managedInstancesHoldOnlyTheirRow: !hasOwnState)
    }

    private static func validate(_ className: String, type: ObjectBase.Type, _ properties: [PropertyInfo]) -> [String] {
        var problems: [String] = []
        let keys = properties.filter { $0.options.primaryKey }
        if keys.count > 1 {
            problems.append(
                "\(className) declares more than one primary key (\(keys.map { "'\($0.name)'" }.joined(separator: ", "))); "
                    + "keep one.")
        }
        if type is EmbeddedObject.Type, let key = keys.first {
            problems.append("'\(className).\(key.name)': an EmbeddedObject cannot have a primary key.")
        }
        if !(type is Object.Type) && !(type is EmbeddedObject.Type) {
            problems.append("\(className) must subclass Object or EmbeddedObject, not ObjectBase.")
        }
        let keyTypes: Set<ScalarType> = [.int8, .int16, .int32, .int64, .string, .uuid, .objectId]
        let indexTypes: Set<ScalarType> = [.int8, .int16, .int32, .int64, .bool, .string, .uuid, .objectId, .date]
        for property in properties {
            let label = "'\(className).\(property.name)'"
            if let problem = property.kind.problem { problems.append("\(label): \(problem)") }
            if property.name.utf8.count > SchemaValidation.maxNameBytes {
                problems.append("\(label): property names are limited to \(SchemaValidation.maxNameBytes) bytes.")
            }
            let single = property.kind.collection == .single && !property.kind.isLinkingObjects
            if property.options.primaryKey, !(single && keyTypes.contains(property.kind.scalar)) {
                problems.append(
                    "\(label) cannot be a primary key: its type is \(property.kind.swiftType); primary keys must be "
                        + "Int, String, UUID or ObjectId (or optionals of these).")
            }
            if property.options.indexed, !(single && indexTypes.contains(property.kind.scalar)) {
                problems.append(
                    "\(label) cannot be indexed: its type is \(property.kind.swiftType); indexes support Int, Bool, "
                        + "String, UUID, ObjectId and Date (or optionals of these).")
            }
            if property.kind.isLinkingObjects, (property.originProperty ?? "").isEmpty {
                problems.append("\(label): LinkingObjects needs @Persisted(originProperty: \"...\").")
            }
        }
        if className.utf8.count > SchemaValidation.maxNameBytes {
            problems.append("The class name \(className) is longer than \(SchemaValidation.maxNameBytes) bytes.")
        }
        return problems
    }
}

/// Records the `@Persisted` properties a key path reads from a probe instance.
///
/// Reading a to-one link property of a probe returns a fresh probe of the target class sharing this
/// recorder, so `\Dog.owner?.name` records `owner` on the `Dog` probe, then `name` on the `Person` probe.
/// Reading a list or set of objects returns an unmanaged collection holding one such probe, so
/// `\Person.dogs.age` (a dynamic member of `List`, reading `age` of each element) records `dogs`, then
/// `age` on the `Dog` probe. A key path is a valid property path when each read happened on the probe the
/// previous read returned.
/// Probes live for one ``ObjectSchemaInfo/propertyPath(of:)`` call on one thread.
final class KeyPathProbe {
    private var reads: [(object: ObjectIdentifier, property: PropertyInfo, returned: ObjectIdentifier?)] = []
    /// Keeps the probes handed out alive, so their identities stay unique while recording.
    private var probes: [ObjectBase] = []

    /// Records that `object` read its property `ordinal`; returns the probe to hand back for a to-one link,
    /// or to put in the collection handed back for a list or set of objects.
    func record(_ object: ObjectBase, _ ordinal: Int, _ kind: _PropertyKind) -> ObjectBase? {
        let info = ClassRegistry.info(for: type(of: object))
        guard ordinal < info.properties.count else { return nil }
        var next: ObjectBase?
        if let target = kind.linkTarget, kind.collection != .map, !kind.isLinkingObjects {
            let probe = target.init()
            probe._probe = self
            probes.append(probe)
            next = probe
        }
        reads.append((ObjectIdentifier(object), info.properties[ordinal], next.map(ObjectIdentifier.init)))
        return next
    }

    /// The chain of properties read starting at `root`, or nil if the reads do not form one chain.
    func path(from root: ObjectBase) -> [PropertyInfo]? {
        guard !reads.isEmpty else { return nil }
        var expected: ObjectIdentifier? = ObjectIdentifier(root)
        for read in reads {
            guard read.object == expected else { return nil }
            expected = read.returned
        }
        return reads.map(\.property)
    }
}
