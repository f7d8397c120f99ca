import ActorStorePersistence
import Foundation

/// Turns a ``QueryPredicate`` into a ``PlanNode`` for one class at one version.
struct QueryResolver {
    let schema: QuerySchema
    let root: QueryClass
    /// The classes of the `SUBQUERY` variables in scope, by depth (index 0 is the object queried).
    private var scopes: [(name: String?, info: QueryClass)]

    init(schema: QuerySchema, queried: QueryClass) {
        QueryResolutionCounter.current?.increment()
        self.schema = schema
        self.root = queried
        self.scopes = [(nil, queried)]
    }

    static func error(_ message: String, at position: Int? = nil) -> RealmError {
        RealmError(.invalidQuery, "Invalid query: " + message + (position.map { " (at offset \($0))" } ?? "") + ".")
    }

    // MARK: Predicates

    mutating func resolve(_ predicate: QueryPredicate) throws(RealmError) -> PlanNode {
        switch predicate {
        case .constant(let value): return .constant(value)
        case .not(let inner): return .not(try resolve(inner))
        case .and(let parts):
            var nodes: [PlanNode] = []
            for part in parts { nodes.append(try resolve(part)) }
            return .and(nodes)
        case .or(let parts):
            var nodes: [PlanNode] = []
            for part in parts { nodes.append(try resolve(part)) }
            return .or(nodes)
        case .comparison(let comparison): return try resolve(comparison)
        case .between(let value, let lower, let upper, let quantifier):
            let operand = try resolve(value)
            guard case .constant(let low) = try resolve(lower), case .constant(let high) = try resolve(upper) else {
                throw Self.error("BETWEEN needs two constant bounds, as in `age BETWEEN {1, 5}`")
            }
            let type = operandType(operand)
            for bound in [low, high] {
                guard type.accepts(QueryType(bound), .less), !bound.isNull else {
                    throw Self.error(
                        "BETWEEN compares numbers or dates; \(describe(value)) is \(type) and its bound is "
                            + "\(QueryType(bound))")
                }
            }
            try checkQuantifier(quantifier, operand, describe(value))
            return .between(operand, low, high, quantifier)
        }
    }

    private mutating func resolve(_ comparison: QueryComparison) throws(RealmError) -> PlanNode {
        var lhs = try resolve(comparison.lhs)
        var rhs = try resolve(comparison.rhs)
        var lhsExpression = comparison.lhs
        var rhsExpression = comparison.rhs
        var op = comparison.op
        // `5 < age` reads as `age > 5`, so the key path is on the left (string operators stay as written).
        if case .constant = lhs, !(rhs.isConstant), let mirrored = op.mirrored {
            swap(&lhs, &rhs)
            swap(&lhsExpression, &rhsExpression)
            op = mirrored
        }
        let lhsText = describe(lhsExpression)
        let rhsText = describe(rhsExpression)
        let lhsType = type(of: lhsExpression, lhs)
        if lhsType == .mixed { rhs = Self.mixedOperand(rhsExpression, rhs) }
        if type(of: rhsExpression, rhs) == .mixed { lhs = Self.mixedOperand(lhsExpression, lhs) }
        if op == .in {
            for element in elementTypes(of: rhsExpression, rhs) where !lhsType.accepts(element, .equal) {
                throw Self.error("type mismatch: \(lhsText) is \(lhsType) but IN lists a \(element)")
            }
        } else {
            if case .list = rhs {
                throw Self.error("a list {…} goes only with IN or BETWEEN, not \(op.rawValue)")
            }
            let rhsType = type(of: rhsExpression, rhs)
            guard lhsType.accepts(rhsType, op) else {
                if op.isStringOperator {
                    throw Self.error(
                        "\(op.rawValue) compares strings (or data): \(lhsText) is \(lhsType) and \(rhsText) is \(rhsType)"
                    )
                }
                throw Self.error(
                    "type mismatch: \(lhsText) is \(lhsType) but is compared (\(op.rawValue)) with \(rhsType) \(rhsText)"
                )
            }
        }
        if !comparison.options.isEmpty, lhsType != .string, lhsType != .null, lhsType != .mixed {
            throw Self.error("[c] and [d] apply to strings; \(lhsText) is \(lhsType)")
        }
        try checkQuantifier(comparison.quantifier, lhs, lhsText)
        let node = PlanNode.compare(lhs, op, rhs, comparison.options, comparison.quantifier)
        return RowTestCompiler.compile(node) ?? node
    }

    private func checkQuantifier(
        _ quantifier: QueryQuantifier?, _ operand: PlanOperand, _ text: String
    )
        throws(RealmError)
    {
        if quantifier != nil, !operand.isMulti {
            throw Self.error(
                "\(quantifier?.rawValue ?? "ANY") needs a key path through a collection (a List, MutableSet, Map or "
                    + "LinkingObjects); \(text) has one value per object")
        }
    }

    /// The operand compared with an `AnyRealmValue` property: an object argument becomes a link that names
    /// its class, as a mixed value stores it (other operands are unchanged).
    private static func mixedOperand(_ expression: QueryExpression, _ operand: PlanOperand) -> PlanOperand {
        func values(_ expression: QueryExpression) -> [Value] {
            switch expression {
            case .object(let className, let key): [.typedLink(table: className, key: key)]
            case .value(let value): [value]
            case .list(let items): items.flatMap(values)
            default: []
            }
        }
        switch (expression, operand) {
        case (.object(let className, let key), _): return .constant(.typedLink(table: className, key: key))
        case (.list(let items), .list): return .list(items.flatMap(values))
        default: return operand
        }
    }

    private func describe(_ expression: QueryExpression) -> String {
        if case .keyPath = expression { return "'\(expression)'" }
        return expression.description
    }

    /// The type of a resolved side; an object argument keeps its class (its operand is a bare link).
    private func type(of expression: QueryExpression, _ operand: PlanOperand) -> QueryType {
        if case .object(let className, _) = expression { return .object(className) }
        return operandType(operand)
    }

    /// The types of the elements `IN` compares with: a list's items, or the values of a key path.
    private func elementTypes(of expression: QueryExpression, _ operand: PlanOperand) -> [QueryType] {
        switch expression {
        case .list(let items):
            return items.flatMap { item -> [QueryType] in
                switch item {
                case .object(let className, _): return [.object(className)]
                case .value(let value): return [QueryType(value)]
                case .list: return elementTypes(of: item, .constant(.null))
                default: return []
                }
            }
        default: return [type(of: expression, operand)]
        }
    }

    private func operandType(_ operand: PlanOperand) -> QueryType {
        switch operand {
        case .constant(let value): QueryType(value)
        case .list(let values): values.first.map(QueryType.init) ?? .null
        case .path(let path): path.type
        case .subqueryCount: .int
        }
    }

    // MARK: Expressions

    private mutating func resolve(_ expression: QueryExpression) throws(RealmError) -> PlanOperand {
        switch expression {
        case .value(let value): return .constant(value)
        case .object(_, let key): return .constant(.link(key))
        case .list(let items):
            var values: [Value] = []
            for item in items {
                switch try resolve(item) {
                case .constant(let value): values.append(value)
                case .list(let nested): values += nested
                default: throw Self.error("a list {…} may hold only constants")
                }
            }
            return .list(values)
        case .keyPath(let path): return .path(try resolve(path))
        case .subqueryCount(let collection, let variable, let predicate):
            let path = try resolve(collection)
            guard path.isMulti, let last = path.steps.last, let target = last.target, path.inner == nil,
                case .values = path.terminal
            else {
                throw Self.error(
                    "SUBQUERY needs a collection of objects (a List or MutableSet of objects, or LinkingObjects); "
                        + "'\(collection)' is not one", at: collection.position)
            }
            guard !scopes.contains(where: { $0.name == variable }) else {
                throw Self.error("the SUBQUERY variable \(variable) is already in use")
            }
            scopes.append((variable, target))
            defer { scopes.removeLast() }
            let node = try resolve(predicate)
            return .subqueryCount(path, depth: scopes.count - 1, node)
        }
    }

    /// Resolves a key path from the object queried or a subquery variable.
    mutating func resolve(_ path: QueryKeyPath) throws(RealmError) -> PlanPath {
        let source: Int
        if let variable = path.variable {
            guard let depth = scopes.lastIndex(where: { $0.name == variable }) else {
                throw Self.error("\(variable) is not a SUBQUERY variable in scope", at: path.position)
            }
            source = depth
        } else {
            source = 0
        }
        var info = scopes[source].info
        var steps: [PlanStep] = []
        var terminal = PlanTerminal.values
        var inner: PlanStep?
        var crossed = false
        var index = 0
        let components = path.components
        func fail(_ message: String) -> RealmError { Self.error(message + " in key path '\(path)'", at: path.position) }
        while index < components.count {
            let component = components[index]
            switch component {
            case .property(let name):
                if let last = steps.last, last.target == nil {
                    throw fail("'\(last.name)' is a \(last.type) property and has no property '\(name)'")
                }
                guard let step = makeStep(named: name, of: info) else {
                    let known = info.propertyNames.joined(separator: ", ")
                    throw fail("\(info.className) has no property '\(name)' (its properties: \(known))")
                }
                if let previous = steps.last, previous.isToMany { crossed = true }
                steps.append(step)
                if let target = step.target { info = target }
            case .count, .min, .max, .sum, .avg:
                guard let last = steps.last, last.isToMany else {
                    throw fail("@\(component) needs a collection before it")
                }
                if case .count = component {
                    terminal = .count
                } else {
                    terminal = aggregate(component)
                    if last.target != nil {
                        // `dogs.@avg.age`: the aggregated property of the linked objects comes next.
                        guard index + 1 < components.count, case .property(let name) = components[index + 1],
                            let step = makeStep(named: name, of: info)
                        else {
                            throw fail("@\(component) of a collection of objects needs a property, as in dogs.@avg.age")
                        }
                        guard step.type.collection == .single, step.target == nil else {
                            throw fail("@\(component) needs a property holding numbers or dates")
                        }
                        inner = step
                        index += 1
                    }
                }
                guard index == components.count - 1 else { throw fail("nothing may follow @\(component)") }
            case .allKeys, .allValues, .mapKey:
                guard let last = steps.last, last.type.collection == .map else {
                    throw fail("\(component) applies to a Map property")
                }
                switch component {
                case .allKeys: terminal = .allKeys
                case .allValues: terminal = .allValues
                case .mapKey(let key): terminal = .mapKey(key)
                default: break
                }
                guard index == components.count - 1 else { throw fail("nothing may follow a map key or @allKeys") }
            }
            index += 1
        }
        guard let last = steps.last else { throw Self.error("an empty key path", at: path.position) }
        let isMulti: Bool
        let type: QueryType
        switch terminal {
        case .values:
            isMulti = crossed || last.isToMany
            type = last.target.map { .object($0.className) } ?? QueryType(last.type.scalar, target: nil)
        case .count:
            isMulti = crossed
            type = .int
        case .min, .max, .sum, .avg:
            isMulti = crossed
            let element = inner?.type.scalar ?? last.type.scalar
            let elementType = QueryType(element, target: nil)
            guard elementType.isNumeric || (elementType == .date && !isSumOrAvg(terminal)) else {
                throw fail(
                    "\(terminalName(terminal)) needs numbers\(isSumOrAvg(terminal) ? "" : " or dates"), not \(elementType)"
                )
            }
            if case .avg = terminal {
                type = elementType == .decimal ? .decimal : .double
            } else {
                type = elementType
            }
        case .allKeys:
            isMulti = true
            type = .string
        case .allValues:
            isMulti = true
            type = last.target.map { .object($0.className) } ?? QueryType(last.type.scalar, target: nil)
        case .mapKey:
            isMulti = crossed
            type = last.target.map { .object($0.className) } ?? QueryType(last.type.scalar, target: nil)
        }
        return PlanPath(source: source, steps: steps, terminal: terminal, inner: inner, isMulti: isMulti, type: type)
    }

    private func isSumOrAvg(_ terminal: PlanTerminal) -> Bool {
        switch terminal {
        case .sum, .avg: true
        default: false
        }
    }

    private func terminalName(_ terminal: PlanTerminal) -> String {
        switch terminal {
        case .min: "@min"
        case .max: "@max"
        case .sum: "@sum"
        case .avg: "@avg"
        default: "@count"
        }
    }

    private func aggregate(_ component: QueryKeyPath.Component) -> PlanTerminal {
        switch component {
        case .min: .min
        case .max: .max
        case .sum: .sum
        default: .avg
        }
    }

    /// The step reading the property `name` of `queried`, or nil if the class has no such property.
    private func makeStep(named name: String, of queried: QueryClass) -> PlanStep? {
        switch queried {
        case .model(let info): return info.property(named: name).map { makeStep($0, of: info) }
        case .stored(let table):
            guard !SchemaCheck.isRetired(name), let column = table.columnIndex(named: name) else { return nil }
            let schema = table.columns[column]
            var target: QueryClass?
            var targetTable: TableID?
            if let targetName = schema.linkTarget {
                targetTable = self.schema.state.tableIDs[targetName]
                let stored = targetTable.flatMap { self.schema.state.tables[$0]?.schema }
                target = .stored(stored ?? TableSchema(targetName, columns: []))
            }
            let tableID = self.schema.state.tableIDs[table.name]
            return PlanStep(
                name: name, isLinkingObjects: false, table: tableID, column: tableID == nil ? -1 : column,
                type: schema.type, backlink: nil, target: target, targetTable: targetTable)
        }
    }

    private func makeStep(_ property: PropertyInfo, of info: ObjectSchemaInfo) -> PlanStep {
        let binding = schema.binding(for: info)
        let target = property.kind.linkTarget.map { ClassRegistry.info(for: $0) }
        let targetTable = target.flatMap { schema.binding(for: $0)?.tableID }
        let name = property.name
        let isLinkingObjects = property.kind.isLinkingObjects
        if property.kind.isLinkingObjects {
            var backlink: (TableID, Int)?
            if let target, let origin = schema.binding(for: target),
                let ordinal = target.property(named: property.originProperty ?? "")?.ordinal,
                origin.columns[ordinal] >= 0
            {
                backlink = (origin.tableID, origin.columns[ordinal])
            }
            // Without the origin's table or column there are no links: a table id no table has matches none.
            return PlanStep(
                name: name, isLinkingObjects: isLinkingObjects, table: binding?.tableID, column: -1,
                type: property.kind.columnType, backlink: backlink ?? (TableID(UInt32.max), -1),
                target: target.map(QueryClass.model), targetTable: targetTable)
        }
        let column = binding?.columns[property.ordinal] ?? -1
        return PlanStep(
            name: name, isLinkingObjects: isLinkingObjects, table: binding?.tableID, column: column,
            type: property.kind.columnType, backlink: nil, target: target.map(QueryClass.model),
            targetTable: targetTable)
    }
}
