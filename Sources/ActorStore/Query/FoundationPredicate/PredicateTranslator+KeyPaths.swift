import ActorStorePersistence
import Foundation

// How `#Predicate` key paths, variables and subqueries become query key paths.

extension PredicateTranslator {
    // MARK: Key paths

    /// The term for `base[keyPath: keyPath]`, where `base` is a value of type `rootType`.
    func member(
        _ base: PredicateTerm, rootType: Any.Type, keyPath: AnyKeyPath, node: Any
    ) throws(RealmError) -> PredicateTerm {
        switch base {
        case .path(let path):
            if let objectType = rootType as? ObjectBase.Type {
                guard let properties = Self.persistedProperties(read: keyPath, on: objectType) else {
                    throw unsupported(
                        node,
                        "reads \(keyPath), which is not a @Persisted property of "
                            + "\(ClassRegistry.info(for: objectType).className) (computed and non-persisted "
                            + "properties cannot be queried)")
                }
                var next = path
                next.components += properties.map { .property($0.name) }
                return .path(next)
            }
            if let collection = rootType as? any PredicateCountable.Type {
                var count = path
                count.components.append(.count)
                if keyPath == collection.countKeyPath { return .path(count) }
                if keyPath == collection.isEmptyKeyPath {
                    return .predicate(.comparison(QueryComparison(.keyPath(count), .equal, .value(.int(0)))))
                }
                throw unsupported(node, "reads a member of \(rootType) other than count and isEmpty")
            }
            throw unsupported(
                node,
                "reads a member of \(rootType) (\(keyPath)); only @Persisted properties of model classes and "
                    + "count/isEmpty of their collections can be queried")
        case .filtered(let collection, let variable, let predicate):
            let count = QueryExpression.subqueryCount(collection: collection, variable: variable, predicate: predicate)
            if let array = rootType as? any PredicateCountable.Type {
                if keyPath == array.countKeyPath { return .expression(count) }
                if keyPath == array.isEmptyKeyPath {
                    return .predicate(.comparison(QueryComparison(count, .equal, .value(.int(0)))))
                }
            }
            throw unsupported(node, "reads a member of a filtered collection other than count and isEmpty")
        default:
            throw unsupported(node, "reads a key path of something that is not a property or the queried object")
        }
    }

    /// The properties `keyPath` reads from an `objectType` through to-one links, or nil if it reads
    /// anything else.
    static func persistedProperties(read keyPath: AnyKeyPath, on objectType: ObjectBase.Type) -> [PropertyInfo]? {
        guard let properties = ClassRegistry.info(for: objectType).propertyPath(of: keyPath),
            let last = properties.last, Self.keyPath(keyPath, reads: last),
            properties.count > 1 || Self.keyPath(keyPath, readsUnchanged: last, of: objectType)
        else { return nil }
        return properties
    }

    /// Whether `keyPath`'s value type is `property`'s type (up to optionals): rejects computed properties
    /// of another type that happen to read one persisted property (`var isOld: Bool { age > 10 }`).
    private static func keyPath(_ keyPath: AnyKeyPath, reads property: PropertyInfo) -> Bool {
        let valueType = unwrappedType(type(of: keyPath).valueType)
        let kind = property.kind
        if kind.scalar == .link, kind.collection == .single, !kind.isLinkingObjects, let target = kind.linkTarget {
            return ObjectIdentifier(valueType) == ObjectIdentifier(target)
        }
        return ObjectIdentifier(valueType) == ObjectIdentifier(unwrappedType(kind.swiftType))
    }

    /// Whether reading `keyPath` on an object gives `property`'s value unchanged, found by setting the
    /// property of fresh unmanaged instances to two sample values and reading them back (once per key
    /// path). Rejects computed properties that transform one persisted property of the same type
    /// (`var shout: String { name.uppercased() }`), which the key path probe alone takes for `name`.
    /// Types without samples (enums, links, collections, ObjectId, Decimal128) are taken as read.
    private static func keyPath(
        _ keyPath: AnyKeyPath, readsUnchanged property: PropertyInfo, of type: ObjectBase.Type
    ) -> Bool {
        if let known = verifiedKeyPaths.withLock({ $0[keyPath] }) { return known }
        let kind = property.kind
        guard kind.collection == .single, !kind.isLinkingObjects,
            let scalarType = kind.swiftType as? any _PersistableScalar.Type
        else { return true }
        let samples: [Value] =
            switch kind.scalar {
            case .bool: [.bool(true), .bool(false)]
            case .int8, .int16, .int32, .int64: [.int(7), .int(-3)]
            case .float: [.float(1.5), .float(-2.25)]
            case .double: [.double(1.5), .double(-2.25)]
            case .string: [.string("ActorStore probe a"), .string("actorstore Probe B")]
            case .data: [.data(Data([1, 2])), .data(Data([3]))]
            case .date: [.date(Date(timeIntervalSince1970: 12_345)), .date(Date(timeIntervalSince1970: -5))]
            case .uuid: [.uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))), .uuid(UUID())]
            default: []
            }
        var unchanged = true
        for sample in samples {
            guard let value = scalarType._rlmFromStored(_StoredValue(sample)) else { break }
            let instance = type.init()
            guard instance._slots.indices.contains(property.ordinal) else { break }
            instance._slots[property.ordinal] = value
            guard let read = instance[keyPath: keyPath] as? any _PersistableScalar, read._rlmToStored.raw == sample
            else {
                unchanged = false
                break
            }
        }
        verifiedKeyPaths.withLock { $0[keyPath] = unchanged }
        return unchanged
    }

    /// ``keyPath(_:readsUnchanged:of:)``'s answers.
    private static let verifiedKeyPaths = Locked<[AnyKeyPath: Bool]>([:])

    /// `variable`'s term.
    func variable(_ id: PredicateExpressions.VariableID, node: Any) throws(RealmError) -> PredicateTerm {
        guard let path = bindings[id] else { throw unsupported(node, "uses a variable from outside the predicate") }
        return .path(path)
    }

    /// Runs `body` with `id` standing for `path`.
    func binding<R>(
        _ id: PredicateExpressions.VariableID, to path: QueryKeyPath, _ body: () throws(RealmError) -> R
    ) throws(RealmError) -> R {
        let saved = bindings[id]
        bindings[id] = path
        defer { bindings[id] = saved }
        return try body()
    }

    /// `wrapped.flatMap { variable in transform }`: optional chaining (`$0.owner?.name`).
    func optionalChain(
        _ wrapped: Any, variable: PredicateExpressions.VariableID, transform: Any, node: Any
    ) throws(RealmError) -> PredicateTerm {
        guard case .path(let path) = try term(wrapped) else {
            throw unsupported(node, "chains (?.) on something that is not a property")
        }
        let inner = try binding(variable, to: path) { () throws(RealmError) in try term(transform) }
        switch inner {
        case .path, .optionalPredicate:
            // A path through a nil link reads nil, as the optional chain does.
            return inner
        case .predicate(let predicate):
            return .optionalPredicate(guard: path, predicate)
        default:
            throw unsupported(node, "chains (?.) into something other than a property or a condition")
        }
    }

    // MARK: Subqueries

    /// The variable name for a subquery opened at the current depth.
    private var subqueryVariable: String { subqueryDepth == 0 ? "$v" : "$v\(subqueryDepth)" }

    /// `collection.filter { variable in test }`.
    func filter(
        _ collection: Any, variable: PredicateExpressions.VariableID, test: Any, node: Any
    ) throws(RealmError) -> PredicateTerm {
        let (path, name, predicate) = try subquery(
            over: term(collection), variable: variable, test: test, negated: false, node: node)
        return .filtered(collection: path, variable: name, predicate)
    }

    /// `SUBQUERY(collection, $v, test).@count > 0` (`contains(where:)`), or `SUBQUERY(collection, $v, NOT
    /// test).@count == 0` (`allSatisfy`).
    func subqueryCondition(
        _ collection: Any, variable: PredicateExpressions.VariableID, test: Any, all: Bool, node: Any
    ) throws(RealmError) -> PredicateTerm {
        let (path, name, predicate) = try subquery(
            over: term(collection), variable: variable, test: test, negated: all, node: node)
        let count = QueryExpression.subqueryCount(collection: path, variable: name, predicate: predicate)
        return .predicate(.comparison(QueryComparison(count, all ? .equal : .greater, .value(.int(0)))))
    }

    private func subquery(
        over collection: PredicateTerm, variable: PredicateExpressions.VariableID, test: Any, negated: Bool, node: Any
    ) throws(RealmError) -> (QueryKeyPath, String, QueryPredicate) {
        let path: QueryKeyPath
        let name: String
        var conditions: [QueryPredicate] = []
        switch collection {
        case .path(let collectionPath):
            path = collectionPath
            name = subqueryVariable
        case .filtered(let collectionPath, let filterVariable, let filter):
            path = collectionPath
            name = filterVariable
            conditions.append(filter)
        default:
            throw unsupported(node, "iterates something that is not a collection property")
        }
        subqueryDepth += 1
        defer { subqueryDepth -= 1 }
        let condition = try binding(variable, to: QueryKeyPath(variable: name, [])) { () throws(RealmError) in
            try self.condition(test)
        }
        conditions.append(negated ? negate(condition) : condition)
        return (path, name, allOf(conditions))
    }
}
