import ActorStorePersistence
import Foundation

// MARK: - Collections

extension Query where T: _QueryCollection {
    /// The number of elements: `$0.dogs.count > 3`. For the values of a to-many property (`$0.dogs.age`), the
    /// number of elements of the collection they come from (`dogs.@count`).
    public var count: Query<Int> { aggregate(.count, "count") }
}

extension Query where T: _QueryCollection, T._QueryElement: _PersistableScalar {
    /// Whether any element equals `rhs`: `$0.tags == "x"`, `$0.dogs.age == 3`.
    public static func == (lhs: Query, rhs: T._QueryElement) -> Query<Bool> {
        lhs.compare(.equal, .expression(constant(rhs)))
    }

    /// Whether any element differs from `rhs`.
    public static func != (lhs: Query, rhs: T._QueryElement) -> Query<Bool> {
        lhs.compare(.notEqual, .expression(constant(rhs)))
    }

    /// Whether any element is one of `values`: `$0.dogs.name.in(["Rex", "Fido"])`.
    public func `in`<S: Sequence>(_ values: S) -> Query<Bool> where S.Element == T._QueryElement {
        isIn(values.map(constant))
    }

    /// Whether any element is one of `values` (the same as `in(_:)`).
    public func containsAny<S: Sequence>(in values: S) -> Query<Bool> where S.Element == T._QueryElement {
        isIn(values.map(constant))
    }
}

extension Query where T: _QueryStoredCollection, T._QueryElement: _PersistableScalar {
    /// Whether the collection holds `element`: `$0.tags.contains("x")` (`'x' IN tags`).
    public func contains(_ element: T._QueryElement) -> Query<Bool> { including(constant(element)) }
}

extension Query where T: _QueryCollection, T._QueryElement: _QueryComparable {
    /// Whether any element is less than `rhs`: `$0.dogs.age < 2`.
    public static func < (lhs: Query, rhs: T._QueryElement) -> Query<Bool> {
        lhs.compare(.less, .expression(constant(rhs)))
    }

    /// Whether any element is at most `rhs`.
    public static func <= (lhs: Query, rhs: T._QueryElement) -> Query<Bool> {
        lhs.compare(.lessOrEqual, .expression(constant(rhs)))
    }

    /// Whether any element is greater than `rhs`.
    public static func > (lhs: Query, rhs: T._QueryElement) -> Query<Bool> {
        lhs.compare(.greater, .expression(constant(rhs)))
    }

    /// Whether any element is at least `rhs`.
    public static func >= (lhs: Query, rhs: T._QueryElement) -> Query<Bool> {
        lhs.compare(.greaterOrEqual, .expression(constant(rhs)))
    }

    /// Whether any element lies in `range`, bounds included: `$0.dogs.age.contains(1...5)`.
    ///
    /// Realm's `List.contains(range)` requires all elements in the range; here, as for the values of a to-many
    /// property, one is enough. For all of them, compare `min` and `max`.
    public func contains(_ range: ClosedRange<T._QueryElement._QueryBound>) -> Query<Bool> {
        between(range.lowerBound, range.upperBound)
    }

    /// The smallest element: `$0.dogs.age.min < 1` (`dogs.@min.age`).
    public var min: Query<T._QueryElement> { aggregate(.min, "min") }

    /// The largest element.
    public var max: Query<T._QueryElement> { aggregate(.max, "max") }
}

extension Query where T: _QueryCollection, T._QueryElement: _QueryNumeric {
    /// The sum of the elements (0 when empty).
    public var sum: Query<T._QueryElement> { aggregate(.sum, "sum") }

    /// The average of the elements: `$0.dogs.age.avg >= 3` (`dogs.@avg.age`).
    public var avg: Query<T._QueryElement._QueryAverage> { aggregate(.avg, "avg") }
}

extension Query where T: _QueryToMany, T._QueryElement: _QueryString {
    /// Whether any of the strings contains `value`: `$0.dogs.name.contains("ex")`. (On a list of strings,
    /// `contains` looks for an element instead.)
    public func contains(_ value: String, options: StringOptions = []) -> Query<Bool> {
        compare(.contains, .expression(constant(value)), options.queryOptions)
    }
}

extension Query where T: _QueryToMany, T._QueryElement: _QueryData {
    /// Whether any of the byte strings contains `value`.
    public func contains(_ value: Data) -> Query<Bool> { compare(.contains, .expression(constant(value))) }
}

extension Query where T: _QueryCollection, T._QueryElement: ObjectBase {
    /// A property of the elements: `$0.dogs.age`, the ages of the dogs.
    public subscript<V>(dynamicMember member: KeyPath<T._QueryElement, V>) -> Query<ToMany<V>> {
        appendingMember(member, of: T._QueryElement.self)
    }

    /// A to-many property of the elements, flattened: `$0.dogs.toys`, the toys of all the dogs.
    public subscript<V: _QueryCollection>(dynamicMember member: KeyPath<T._QueryElement, V>) -> Query<
        ToMany<V._QueryElement>
    > {
        appendingMember(member, of: T._QueryElement.self)
    }

    /// A map property of the elements: `$0.dogs.scores["speed"] > 3` holds when it does for some dog.
    public subscript<V: _QueryMap>(dynamicMember member: KeyPath<T._QueryElement, V>) -> Query<V> {
        appendingMember(member, of: T._QueryElement.self)
    }

    /// Whether the collection holds `object` (the same stored object): `$0.dogs.contains(rex)`.
    public func contains(_ object: T._QueryElement) -> Query<Bool> { including(objectConstant(object)) }

    /// Whether the collection holds one of `objects`.
    public func containsAny<S: Sequence>(in objects: S) -> Query<Bool> where S.Element == T._QueryElement {
        isIn(objects.map(objectConstant))
    }
}

extension Query where T: _QueryCollection, T._QueryElement: _QueryLink {
    /// A property of the linked objects: `$0.dogs.owner.name`, the names of the dogs' owners.
    public subscript<V>(dynamicMember member: KeyPath<T._QueryElement._QueryLinked, V>) -> Query<ToMany<V>> {
        appendingMember(member, of: T._QueryElement._QueryLinked.self)
    }

    /// A to-many property of the linked objects, flattened.
    public subscript<V: _QueryCollection>(dynamicMember member: KeyPath<T._QueryElement._QueryLinked, V>)
        -> Query<ToMany<V._QueryElement>>
    {
        appendingMember(member, of: T._QueryElement._QueryLinked.self)
    }

    /// A map property of the linked objects.
    public subscript<V: _QueryMap>(dynamicMember member: KeyPath<T._QueryElement._QueryLinked, V>) -> Query<V> {
        appendingMember(member, of: T._QueryElement._QueryLinked.self)
    }

    /// Whether any link refers to `rhs`, or, for `nil`, whether any is empty.
    public static func == (lhs: Query, rhs: T._QueryElement._QueryLinked?) -> Query<Bool> {
        lhs.compare(.equal, .expression(objectConstant(rhs)))
    }

    /// Whether any link refers to another object than `rhs`, or, for `nil`, whether any is not empty.
    public static func != (lhs: Query, rhs: T._QueryElement._QueryLinked?) -> Query<Bool> {
        lhs.compare(.notEqual, .expression(objectConstant(rhs)))
    }

    /// Whether any link refers to one of `objects`.
    public func `in`<S: Sequence>(_ objects: S) -> Query<Bool> where S.Element == T._QueryElement._QueryLinked {
        isIn(objects.map(objectConstant))
    }
}

// MARK: - Maps

extension Query where T: _QueryMap {
    /// The value for `key`: `$0.scores["math"] > 3` (false when the key is absent).
    public subscript(key: String) -> Query<T._QueryMapValue> {
        var path = self.path
        _ = path.toMany.popLast()
        path.components.append(.mapKey(key))
        return Query<T._QueryMapValue>(.path(path))
    }

    /// The keys: `$0.scores.keys == "math"` holds when the map has the key "math".
    public var keys: Query<ToMany<String>> {
        var path = self.path
        path.components.append(.allKeys)
        return Query<ToMany<String>>(.path(path))
    }

    /// The values: `$0.scores.values > 3` holds when any value is greater than 3.
    public var values: Query<ToMany<T._QueryMapValue>> {
        var path = self.path
        path.components.append(.allValues)
        return Query<ToMany<T._QueryMapValue>>(.path(path))
    }

    /// The number of entries.
    public var count: Query<Int> { aggregate(.count, "count") }
}

extension Query where T: _QueryMap, T._QueryMapValue: _PersistableScalar {
    /// Whether some value equals `value`: `$0.scores.contains(3)` (`3 IN scores`).
    public func contains(_ value: T._QueryMapValue) -> Query<Bool> { including(constant(value)) }
}

extension Query where T: _QueryMap, T._QueryMapValue: _QueryComparable {
    /// The smallest value.
    public var min: Query<T._QueryMapValue> { aggregate(.min, "min") }

    /// The largest value.
    public var max: Query<T._QueryMapValue> { aggregate(.max, "max") }
}

extension Query where T: _QueryMap, T._QueryMapValue: _QueryNumeric {
    /// The sum of the values (0 when empty).
    public var sum: Query<T._QueryMapValue> { aggregate(.sum, "sum") }

    /// The average of the values.
    public var avg: Query<T._QueryMapValue._QueryAverage> { aggregate(.avg, "avg") }
}

// MARK: - AnyRealmValue

extension Query where T == AnyRealmValue {
    /// Whether the value equals `rhs`: same type and value (numbers compare across types), or the same object.
    public static func == (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.equal, .expression(rhs.queryExpression))
    }

    /// Whether the value differs from `rhs`.
    public static func != (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.notEqual, .expression(rhs.queryExpression))
    }

    /// Whether the value is less than `rhs` (false when their types cannot be compared).
    public static func < (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.less, .expression(rhs.queryExpression))
    }

    /// Whether the value is at most `rhs` (false when their types cannot be compared).
    public static func <= (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.lessOrEqual, .expression(rhs.queryExpression))
    }

    /// Whether the value is greater than `rhs` (false when their types cannot be compared).
    public static func > (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.greater, .expression(rhs.queryExpression))
    }

    /// Whether the value is at least `rhs` (false when their types cannot be compared).
    public static func >= (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.greaterOrEqual, .expression(rhs.queryExpression))
    }

    /// Whether the value is one of `values`: `$0.value.in([.int(1), .string("one")])`.
    public func `in`<S: Sequence>(_ values: S) -> Query<Bool> where S.Element == AnyRealmValue {
        isIn(values.map(\.queryExpression))
    }
}

extension Query where T: _QueryCollection, T._QueryElement == AnyRealmValue {
    /// Whether any element equals `rhs`.
    public static func == (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.equal, .expression(rhs.queryExpression))
    }

    /// Whether any element is greater than `rhs` (elements of other types do not count).
    public static func > (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.greater, .expression(rhs.queryExpression))
    }

    /// Whether any element is less than `rhs` (elements of other types do not count).
    public static func < (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.less, .expression(rhs.queryExpression))
    }

    /// Whether any element is one of `values`.
    public func `in`<S: Sequence>(_ values: S) -> Query<Bool> where S.Element == AnyRealmValue {
        isIn(values.map(\.queryExpression))
    }
}

extension Query where T: _QueryStoredCollection, T._QueryElement == AnyRealmValue {
    /// Whether the collection holds `element`: `$0.values.contains(.int(3))`.
    public func contains(_ element: AnyRealmValue) -> Query<Bool> { including(element.queryExpression) }
}

extension Query where T: _QueryMap, T._QueryMapValue == AnyRealmValue {
    /// Whether some value equals `value`.
    public func contains(_ value: AnyRealmValue) -> Query<Bool> { including(value.queryExpression) }
}
