import ActorStorePersistence
import Foundation

// The marker protocols that decide which operators a `Query<T>` has, and the types that conform to them.

/// Types that order in queries (`<`, ranges, `min`, `max`): numbers, `Date`, and their optionals. Public only
/// because `Query`'s constraints name it.
public protocol _QueryComparable: _PersistableScalar {
    /// The type of range bounds: the type itself, or the wrapped type of an optional.
    associatedtype _QueryBound: _PersistableScalar & Comparable
}

/// Numbers, which also `sum` and `avg` in queries. Public only because `Query`'s constraints name it.
public protocol _QueryNumeric: _QueryComparable {
    /// The type of an average: `Double` for integers and floating-point numbers, `Decimal128` for decimals.
    associatedtype _QueryAverage: _PersistableScalar
}

/// `String` and `String?`: the string operators of queries. Public only because `Query`'s constraints name it.
public protocol _QueryString: _PersistableScalar, _QueryStringValues {}

/// `Data` and `Data?`: the binary operators of queries. Public only because `Query`'s constraints name it.
public protocol _QueryData: _PersistableScalar, _QueryDataValues {}

/// Strings and collections of strings (`String`, `String?`, `List<String>`, `MutableSet<String>`,
/// `ToMany<String>`): the operands of `starts(with:)`, `ends(with:)`, `equals`, `notEquals` and `like`, which
/// on a collection hold when any element matches. Public only because `Query`'s constraints name it.
public protocol _QueryStringValues {}

/// Byte strings and collections of them (`Data`, `Data?`, `List<Data>`, `MutableSet<Data>`, `ToMany<Data>`):
/// the operands of `starts(with:)` and `ends(with:)`, which on a collection hold when any element matches.
/// Public only because `Query`'s constraints name it.
public protocol _QueryDataValues {}

/// Optional links (`Person?`): queried through their properties, compared by identity. Public only because
/// `Query`'s constraints name it.
public protocol _QueryLink {
    /// The class linked to.
    associatedtype _QueryLinked: ObjectBase
}

/// Optional enums (`Taste?`), for `rawValue`. Public only because `Query`'s constraints name it.
public protocol _QueryOptionalEnum {
    /// The optional raw value type.
    associatedtype _QueryRawValue
}

/// Collections whose elements a query compares one by one (``List``, ``MutableSet``, ``LinkingObjects``,
/// ``ToMany``). Public only because `Query`'s constraints name it.
public protocol _QueryCollection {
    /// The type of the elements.
    associatedtype _QueryElement
}

/// ``List`` and ``MutableSet``: collections a value can be looked for in (`$0.tags.contains("x")`). Public only
/// because `Query`'s constraints name it.
public protocol _QueryStoredCollection: _QueryCollection {}

/// ``ToMany``: the values of a property across a to-many relationship, whose string `contains` is a substring
/// search, as for a single string. Public only because `Query`'s constraints name it.
public protocol _QueryToMany: _QueryCollection {}

/// ``Map``: queried by key, over its keys or its values. Public only because `Query`'s constraints name it.
public protocol _QueryMap {
    /// The type of the values.
    associatedtype _QueryMapValue
}

extension Int: _QueryNumeric {
    public typealias _QueryBound = Int
    public typealias _QueryAverage = Double
}
extension Int8: _QueryNumeric {
    public typealias _QueryBound = Int8
    public typealias _QueryAverage = Double
}
extension Int16: _QueryNumeric {
    public typealias _QueryBound = Int16
    public typealias _QueryAverage = Double
}
extension Int32: _QueryNumeric {
    public typealias _QueryBound = Int32
    public typealias _QueryAverage = Double
}
extension Int64: _QueryNumeric {
    public typealias _QueryBound = Int64
    public typealias _QueryAverage = Double
}
extension Float: _QueryNumeric {
    public typealias _QueryBound = Float
    public typealias _QueryAverage = Double
}
extension Double: _QueryNumeric {
    public typealias _QueryBound = Double
    public typealias _QueryAverage = Double
}
extension Decimal128: _QueryNumeric {
    public typealias _QueryBound = Decimal128
    public typealias _QueryAverage = Decimal128
}
extension Date: _QueryComparable {
    public typealias _QueryBound = Date
}
extension Optional: _QueryComparable where Wrapped: _QueryComparable {
    public typealias _QueryBound = Wrapped._QueryBound
}
extension Optional: _QueryNumeric where Wrapped: _QueryNumeric {
    public typealias _QueryAverage = Wrapped._QueryAverage
}
extension String: _QueryString {}
extension Optional: _QueryString where Wrapped: _QueryString {}
extension Data: _QueryData {}
extension Optional: _QueryData where Wrapped: _QueryData {}
extension Optional: _QueryStringValues where Wrapped: _QueryString {}
extension List: _QueryStringValues where Element: _QueryString {}
extension MutableSet: _QueryStringValues where Element: _QueryString {}
extension ToMany: _QueryStringValues where Element: _QueryString {}
extension Optional: _QueryDataValues where Wrapped: _QueryData {}
extension List: _QueryDataValues where Element: _QueryData {}
extension MutableSet: _QueryDataValues where Element: _QueryData {}
extension ToMany: _QueryDataValues where Element: _QueryData {}
extension Optional: _QueryLink where Wrapped: ObjectBase {
    public typealias _QueryLinked = Wrapped
}
extension Optional: _QueryOptionalEnum where Wrapped: PersistableEnum {
    public typealias _QueryRawValue = Wrapped.RawValue?
}
extension List: _QueryStoredCollection {
    public typealias _QueryElement = Element
}
extension MutableSet: _QueryStoredCollection {
    public typealias _QueryElement = Element
}
extension LinkingObjects: _QueryCollection {
    public typealias _QueryElement = Element
}
extension Map: _QueryMap {
    public typealias _QueryMapValue = Value
}

/// The values of one property across the elements of a to-many relationship, as a ``Query`` sees them:
/// `$0.dogs.age` is a `Query<ToMany<Int>>`, the ages of a person's dogs.
///
/// Comparisons hold when any of the values matches (`$0.dogs.age < 2`: some dog is younger than 2;
/// `$0.dogs.name.contains("ex")`: some dog's name contains "ex"), aggregates combine them
/// (`$0.dogs.age.avg >= 3`), and the properties of objects continue the path (`$0.dogs.owner.name`). A
/// to-many property of the elements flattens: `$0.dogs.toys` is a `Query<ToMany<Toy>>`. The type has no
/// values; it exists only to select the operators of `Query`.
public enum ToMany<Element>: _QueryToMany {
    /// The type of the values.
    public typealias _QueryElement = Element
}
