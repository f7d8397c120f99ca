// Compile check: the forms of the type-safe query builder (`where { … }`) compile, each to a `Query<Bool>`.
// Must compile, without warnings.
import ActorStore
import Foundation

enum Mood: String, PersistableEnum {
    case calm, wild
}

final class Toy: Object {
    @Persisted var name = ""
    @Persisted var price = 0.0
}

final class Dog: Object {
    @Persisted var name = ""
    @Persisted var nickname: String?
    @Persisted var age = 0
    @Persisted var maximumAge: Int?
    @Persisted var limit = 0
    @Persisted var weight: Float = 0
    @Persisted var isGood = true
    @Persisted var birthday = Date(timeIntervalSince1970: 0)
    @Persisted var chip = Data()
    @Persisted var mood = Mood.calm
    @Persisted var previousMood: Mood?
    @Persisted var owner: Person?
    @Persisted var toys: List<Toy>
    @Persisted var tags: List<String>
    @Persisted var ratings: MutableSet<Int>
    @Persisted var scores: Map<String, Int>
    @Persisted var friends: Map<String, Dog?>
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<Person>
}

final class Person: Object {
    @Persisted var name = ""
    @Persisted var dogs: List<Dog>
}

typealias Condition<T> = (Query<T>) -> Query<Bool>

func dogConditions(rex: Person) -> [Condition<Dog>] {
    [
        { $0.age < 2 && $0.name.starts(with: "B", options: .caseInsensitive) },
        { $0.isGood },
        { !$0.isGood || $0.age >= 3 },
        { $0.name == "Rex" && $0.age != 3 && $0.weight > 1.5 && $0.birthday <= Date() },
        { $0.nickname == nil || $0.nickname != "Rex" },
        { $0.maximumAge > 3 },
        { $0.age > $0.limit && $0.maximumAge != $0.maximumAge },
        { $0.name.contains("ex", options: [.caseInsensitive, .diacriticInsensitive]) },
        { $0.name.ends(with: "x") && $0.name.like("R?x*", caseInsensitive: true) },
        { $0.name.equals("rex", options: .caseInsensitive) || $0.name.notEquals("fido") },
        { $0.nickname.starts(with: "R") },
        { $0.name.in(["Rex", "Fido"]) && $0.age.in([1, 2, 3]) },
        { $0.age.contains(1...5) && $0.birthday.contains(Date(timeIntervalSince1970: 0)..<Date()) },
        { $0.chip.starts(with: Data([1])) && $0.chip != Data() },
        { $0.mood == .wild && $0.previousMood != nil && $0.mood.rawValue.starts(with: "w") },
        { $0.owner == nil || $0.owner == rex || $0.owner.name == "Jim" },
        { $0.owner.in([rex]) },
        { $0.owner.dogs.count > 1 },
        { $0.toys.count > 3 && $0.toys.price.avg >= 3 && $0.toys.price.max < 10 && $0.toys.price.sum > 1 },
        { $0.toys.name == "ball" && $0.toys.name.contains("al") && $0.toys.name.in(["ball", "bone"]) },
        { ($0.toys.price < 2 && $0.toys.name.starts(with: "b")).count > 0 },
        { $0.tags.contains("x") && $0.tags == "y" && $0.tags.starts(with: "z") && $0.tags.containsAny(in: ["a"]) },
        { $0.ratings.contains(5) && $0.ratings.min >= 1 && $0.ratings.contains(1...3) && $0.ratings.avg > 2.5 },
        { $0.scores["math"] > 3 && $0.scores.keys == "art" && $0.scores.values > 1 && $0.scores.count == 2 },
        { $0.scores.contains(3) && $0.scores.max < 10 && $0.scores.avg > 2.5 },
        { $0.friends["best"].name == "Fido" && $0.friends.values.age > 3 },
        { $0.owners.count == 0 || $0.owners.name == "Jim" },
    ]
}

func personConditions(rex: Dog) -> [Condition<Person>] {
    [
        { $0.dogs.age < 2 },
        { $0.dogs.contains(rex) && $0.dogs.containsAny(in: [rex]) },
        { $0.dogs.owner.name == "Jim" && $0.dogs.owner == nil },
        { $0.dogs.toys.name == "ball" && $0.dogs.toys.count > 1 },
        { $0.dogs.scores["math"] > 3 },
        { $0.dogs.birthday.max > Date() && $0.dogs.age.contains(1...5) },
    ]
}
