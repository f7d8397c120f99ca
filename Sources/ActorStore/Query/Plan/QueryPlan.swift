import ActorStorePersistence
import Foundation

// Resolving a query: names become columns of the version being read, types are checked, and the
// predicate becomes a tree of `PlanNode`s the executor runs per object. Resolution happens when a query is
// built (so `filter` throws for an unknown property at once), and the plan is kept for the evaluations
// while the schema stays the same (see `ResolvedQuery.swift`): a schema change resolves the query again,
// so the plan always matches the version's schema.

/// The tables of the version being queried, by class.
struct QuerySchema {
    let bindings: SchemaBindings
    let state: DatabaseState

    /// The table of `info`'s class, or nil when the version has none (then it has no objects), or when
    /// the class was not bound and does not match its stored table (reading it would read defaults).
    func binding(for info: ObjectSchemaInfo) -> TableBinding? {
        if let binding = bindings.byClass[ObjectIdentifier(info.type)] { return binding }
        guard let id = state.tableIDs[info.className], let schema = state.tables[id]?.schema,
            SchemaCheck.canBind(info, to: schema)
        else { return nil }
        return TableBinding(info: info, tableID: id, stored: schema)
    }
}

/// A class as a query resolves it: a model class, or a class of the file read without its model class
/// (``Realm/dynamicObjects(_:)``, a migration's objects).
enum QueryClass: Sendable {
    /// A model class: its declared properties, bound to the version's table.
    case model(ObjectSchemaInfo)
    /// A class by its stored schema: its columns (retired ones hidden), links to other stored classes.
    case stored(TableSchema)

    var className: String {
        switch self {
        case .model(let info): info.className
        case .stored(let table): table.name
        }
    }

    /// The names of the properties a key path may use, for error messages.
    var propertyNames: [String] {
        switch self {
        case .model(let info): info.properties.map(\.name)
        case .stored(let table): table.columns.map(\.name).filter { !SchemaCheck.isRetired($0) }
        }
    }
}

extension QuerySchema {
    /// The table of `queried`'s class at this version, or nil when the version has none.
    func tableID(for queried: QueryClass) -> TableID? {
        switch queried {
        case .model(let info): binding(for: info)?.tableID
        case .stored(let table): state.tableIDs[table.name]
        }
    }
}

/// The type a query expression yields, for type checking.
enum QueryType: Equatable, CustomStringConvertible {
    case bool, int, float, double, decimal, string, data, date, uuid, objectId
    /// Objects of a class (a link).
    case object(String)
    /// The constant `nil`.
    case null
    /// An `AnyRealmValue` property: compares with a constant of any type (values of different types are
    /// unequal and unordered, numbers compare across widths).
    case mixed

    init(_ scalar: ScalarType, target: String?) {
        switch scalar {
        case .bool: self = .bool
        case .int8, .int16, .int32, .int64: self = .int
        case .float: self = .float
        case .double: self = .double
        case .decimal128: self = .decimal
        case .string: self = .string
        case .data: self = .data
        case .date: self = .date
        case .uuid: self = .uuid
        case .objectId: self = .objectId
        case .link: self = .object(target ?? "?")
        case .mixed: self = .mixed
        }
    }

    init(_ value: Value) {
        switch value {
        case .null: self = .null
        case .bool: self = .bool
        case .int: self = .int
        case .float: self = .float
        case .double: self = .double
        case .decimal128: self = .decimal
        case .string: self = .string
        case .data: self = .data
        case .date: self = .date
        case .uuid: self = .uuid
        case .objectId: self = .objectId
        case .link, .typedLink, .list, .set, .map: self = .object("?")
        }
    }

    var isNumeric: Bool {
        switch self {
        case .int, .float, .double, .decimal: true
        default: false
        }
    }

    /// Whether values of the two types can be compared with `op`.
    func accepts(_ other: QueryType, _ op: QueryOperator) -> Bool {
        if self == .mixed || other == .mixed { return true }
        if self == .null || other == .null { return op == .equal || op == .notEqual || op == .in }
        switch op {
        case .equal, .notEqual, .in:
            return isNumeric ? other.isNumeric : self == other
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            if isNumeric { return other.isNumeric }
            switch self {
            case .date, .string, .uuid, .objectId: return self == other
            default: return false
            }
        case .beginsWith, .endsWith, .contains, .like:
            return (self == .string || self == .data) && self == other
        }
    }

    var description: String {
        switch self {
        case .bool: "Bool"
        case .int: "Int"
        case .float: "Float"
        case .double: "Double"
        case .decimal: "Decimal128"
        case .string: "String"
        case .data: "Data"
        case .date: "Date"
        case .uuid: "UUID"
        case .objectId: "ObjectId"
        case .object(let name): "\(name) object"
        case .null: "nil"
        case .mixed: "AnyRealmValue"
        }
    }
}

/// One property read along a key path.
struct PlanStep: Sendable {
    /// The property's name.
    let name: String
    /// Whether the property is a `LinkingObjects` (computed from backlinks; model classes only).
    let isLinkingObjects: Bool
    /// The table of the objects this step reads from; nil when the version has no such table.
    let table: TableID?
    /// The column read, or -1 (the table lacks it: it reads as the default; or a `LinkingObjects`).
    let column: Int
    let type: ColumnType
    /// For `LinkingObjects`: the origin table and its linking column.
    let backlink: (table: TableID, column: Int)?
    /// For links (and `LinkingObjects`): the class reached.
    let target: QueryClass?
    let targetTable: TableID?

    /// Whether the step leads to several values or objects (a collection or linking objects).
    var isToMany: Bool { backlink != nil || isLinkingObjects || type.collection != .single }
}

/// What is done with the values of a key path's last step.
enum PlanTerminal: Sendable {
    case values
    case count
    case min, max, sum, avg
    case allKeys, allValues
    case mapKey(String)
}

/// A resolved key path: where it starts (the object queried, or a `SUBQUERY` variable by depth), the
/// steps through links, and what is done at the end.
struct PlanPath: Sendable {
    let source: Int
    /// Steps up to and including the last property read. Every step but the last is a link or a
    /// collection of links.
    let steps: [PlanStep]
    let terminal: PlanTerminal
    /// For an aggregate of a property of linked objects (`dogs.@avg.age`): that property.
    let inner: PlanStep?
    /// Whether the path yields several values per object (it crosses a to-many step without aggregating).
    let isMulti: Bool
    let type: QueryType
}

/// A side of a comparison.
indirect enum PlanOperand: Sendable {
    case constant(Value)
    case list([Value])
    case path(PlanPath)
    /// `SUBQUERY(collection, $v, predicate).@count`: the variable is bound at depth `depth`.
    case subqueryCount(PlanPath, depth: Int, PlanNode)

    var isMulti: Bool {
        switch self {
        case .list: true
        case .path(let path): path.isMulti
        default: false
        }
    }
}

/// A resolved condition.
indirect enum PlanNode: Sendable {
    case constant(Bool)
    case not(PlanNode)
    case and([PlanNode])
    case or([PlanNode])
    /// A test of the queried object's own row: the fast path for `column op constant`.
    case rowTest(RowTest)
    case compare(PlanOperand, QueryOperator, PlanOperand, QueryOptions, QueryQuantifier?)
    case between(PlanOperand, Value, Value, QueryQuantifier?)
}

/// A compiled test of a row (see `RowTestCompiler`).
///
/// A struct rather than a bare function type: `Optional` and `Array` hold a bare function value in its most
/// general representation (its argument passed indirectly), so a closure taken out of one and called was
/// wrapped in a reabstraction thunk that copied the row view on every call — two thunks per condition per
/// row, about a fifth of a scan's time. A struct's stored closure keeps its own representation.
struct RowPredicate: Sendable {
    let test: @Sendable (RowView) -> Bool
    init(_ test: @escaping @Sendable (RowView) -> Bool) { self.test = test }
}

/// A compiled test of one row (see `RowTestCompiler`), with the comparison it came from (for index planning).
struct RowTest: Sendable {
    let column: Int
    let scalar: ScalarType
    let op: QueryOperator
    let operand: PlanOperand
    let options: QueryOptions
    let test: @Sendable (RowView) -> Bool
}

extension PlanOperand {
    var isConstant: Bool {
        switch self {
        case .constant, .list: true
        default: false
        }
    }
}

extension QueryOperator {
    /// The operator with its sides swapped (`<` for `>`), or nil for operators that do not mirror.
    var mirrored: QueryOperator? {
        switch self {
        case .equal: .equal
        case .notEqual: .notEqual
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        default: nil
        }
    }
}
