import ActorStorePersistence
import Foundation

/// Helpers shared by the query methods of ``ComposableQuery``.
enum QueryCalls {
    /// The query key path of a Swift key path (`\Dog.owner?.name` → `owner.name`); a key path that reads no
    /// `@Persisted` property is a programmer error.
    static func keyPath<Root: ObjectBase>(_ keyPath: AnyKeyPath, _ root: Root.Type) -> QueryKeyPath {
        guard let properties = ClassRegistry.info(for: root).propertyPath(of: keyPath) else {
            preconditionFailure(
                "\(keyPath) does not read a @Persisted property of \(root) (through to-one links): queries, sorting "
                    + "and aggregates need stored properties.")
        }
        return QueryKeyPath(properties.map { .property($0.name) })
    }

    /// Sort keys from Foundation sort descriptors (their key path and order; their comparator is not used:
    /// values sort as in predicates, strings by UTF-8 bytes).
    static func sortKeys<Root: ObjectBase>(_ descriptors: [SortDescriptor<Root>]) -> [QuerySortKey] {
        descriptors.map { descriptor in
            guard let path = descriptor.keyPath else {
                preconditionFailure("A SortDescriptor without a key path cannot sort a realm query.")
            }
            return QuerySortKey(path: keyPath(path, Root.self), ascending: descriptor.order == .forward)
        }
    }

    /// An aggregate's value as `T` (an average of integers as a `Double`, a sum as the property's type).
    static func convert<T: _PersistableScalar>(_ value: Value, to type: T.Type) -> T? {
        if let converted = T._rlmFromStored(_StoredValue(value)) { return converted }
        let scalar = T._rlmScalarKind.scalar
        switch value {
        case .int(let v):
            switch scalar {
            case .double: return T._rlmFromStored(_StoredValue(.double(Double(v))))
            case .float: return T._rlmFromStored(_StoredValue(.float(Float(v))))
            case .decimal128: return T._rlmFromStored(_StoredValue(.decimal128(Decimal128(Int(v)).bits)))
            default: return nil
            }
        case .double, .float, .decimal128:
            guard let d = QueryValues.double(value) else { return nil }
            switch scalar {
            case .double: return T._rlmFromStored(_StoredValue(.double(d)))
            case .float: return T._rlmFromStored(_StoredValue(.float(Float(d))))
            case .decimal128: return T._rlmFromStored(_StoredValue(.decimal128(Decimal128(d).bits)))
            case .int8, .int16, .int32, .int64:
                guard d.isFinite, let i = Int64(exactly: d.rounded(.towardZero)) else { return nil }
                return T._rlmFromStored(_StoredValue(.int(i)))
            default: return nil
            }
        default: return nil
        }
    }
}
