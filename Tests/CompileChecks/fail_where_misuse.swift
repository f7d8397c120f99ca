// Compile check: misuse of the type-safe query builder (`where { … }`) is a compile error, not a query that
// fails when it runs. Must NOT compile.
import ActorStore
import Foundation

enum Mood: String, PersistableEnum {
    case calm, wild
}

final class Dog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var chip = Data()
    @Persisted var mood = Mood.calm
    @Persisted var owner: Person?
    @Persisted var tags: List<String>
}

final class Person: Object {
    @Persisted var name = ""
    @Persisted var dogs: List<Dog>
}

/// Stands for `Results.where`.
func dogs(where condition: (Query<Dog>) -> Query<Bool>) {}

func misuse() {
    // Ordering applies to numbers and dates: not to strings, and not across types.
    // expected-error-contains: requires that 'Query<String>' conform to 'BinaryInteger'
    dogs { $0.name > 3 }
    // expected-error-contains: requires that 'Query<String>' conform to 'StringProtocol'
    dogs { $0.name < "m" }
    // expected-error-contains: binary operator '>' cannot be applied to operands of type 'Query<Mood>'
    dogs { $0.mood > .calm }

    // String operators apply to strings.
    // expected-error-contains: value of type 'Query<Int>' has no dynamic member 'starts'
    dogs { $0.age.starts(with: "x") }
    // String options do not apply to bytes.
    // expected-error-contains: dynamic key path member lookup cannot refer to instance method 'contains'
    dogs { $0.chip.contains(Data([1]), options: .caseInsensitive) }

    // Comparisons need a value of the property's type.
    // expected-error-contains: binary operator '==' cannot be applied to operands of type 'Query<Int>' and 'String'
    dogs { $0.age == "x" }
    // expected-error-contains: requires that 'Query<Person?>' conform to 'StringProtocol'
    dogs { $0.owner == "x" }

    // Aggregates apply to collections (of numbers, for sum and avg).
    // expected-error-contains: value of type 'Query<String>' has no dynamic member 'avg'
    dogs { $0.name.avg > 3 }
    // expected-error-contains: value of type 'Query<Int>' has no dynamic member 'avg'
    dogs { $0.age.avg > 3 }
    // expected-error-contains: no exact matches in reference to property 'avg'
    dogs { $0.tags.avg > 3 }

    // Looking for an element in a list of strings takes no string options.
    // expected-error-contains: no exact matches in call to instance method 'contains'
    dogs { $0.tags.contains("x", options: .caseInsensitive) }
    // expected-error-contains: value of type 'Query<Dog>' has no dynamic member 'unknown'
    dogs { $0.unknown == 3 }
}
