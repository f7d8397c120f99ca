import ActorStore
import Foundation
import Testing

// Models of the seeds' Filtering examples.

final class QSDog: Object {
    @Persisted var name = ""
    @Persisted var color = ""
    @Persisted var age = 0
}

final class QSWord: Object {
    @Persisted var value = ""
}

final class QSStudent: Object {
    @Persisted var age = 0
}

final class QSTeacher: Object {
    @Persisted var name = ""
    @Persisted var student: List<QSStudent>
}

final class QSEmployee: Object {
    @Persisted var name = ""
    @Persisted(originProperty: "employees") var companies: LinkingObjects<QSCompany>
}

final class QSCompany: Object {
    @Persisted var name = ""
    @Persisted var employees: List<QSEmployee>
    @Persisted var ceo: QSEmployee?
}
