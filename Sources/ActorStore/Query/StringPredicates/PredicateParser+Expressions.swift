import ActorStorePersistence
import Foundation

extension PredicateParser.Parser {
    // MARK: Expressions

    /// A key path, constant or list.
    mutating func parseExpression() throws(RealmError) -> QueryExpression {
        let start = token.start
        switch token.kind {
        case .word(nil):
            let name = tokenText
            try advance()
            return .keyPath(try parseKeyPathTail(QueryKeyPath(variable: nil, [.property(name)], position: start)))
        case .word(let keyword?):
            let value: Value
            switch keyword {
            case .trueLiteral, .yes: value = .bool(true)
            case .falseLiteral, .no: value = .bool(false)
            case .nilLiteral, .null: value = .null
            case .nan: value = .double(.nan)
            case .inf, .infinity: value = .double(.infinity)
            default:
                throw fail(
                    "expected a key path or a value, found the keyword \(found) (to name a property called "
                        + "that, use %K with the name as its argument)", at: start)
            }
            try advance()
            return .value(value)
        case .literal(let value):
            try advance()
            return .value(value)
        case .variable(let name):
            guard variables.contains(name) else {
                throw fail(
                    "unknown variable \(name): variables are declared by SUBQUERY(collection, \(name), "
                        + "predicate) and used inside it", at: start)
            }
            try advance()
            return .keyPath(try parseKeyPathTail(QueryKeyPath(variable: name, [], position: start)))
        case .collectionOperator(let component):
            try advance()
            return .keyPath(try parseKeyPathTail(QueryKeyPath(variable: nil, [component], position: start)))
        case .keyPathArgument:
            let (value, index) = try takeArgument()
            guard let string = value as? String else {
                throw fail(
                    "%K takes a String key path, but argument \(index) is a \(type(of: value))", at: start)
            }
            var path: QueryKeyPath
            do {
                path = try PredicateParser.parseKeyPath(string)
            } catch {
                throw fail("the %K argument \(index) is not a key path: \(error.message)", at: start)
            }
            path.position = start
            try advance()
            return .keyPath(try parseKeyPathTail(path))
        case .nextArgument, .indexedArgument:
            let (value, index) = try takeArgument()
            let expression = try convertArgument(value, index: index, at: start)
            try advance()
            return expression
        case .openBrace:
            return try parseList()
        default:
            throw fail("expected a key path or a value, found \(found)", at: start)
        }
    }

    /// `.name`, `.@operator` and `['key']` after the start of a key path.
    mutating func parseKeyPathTail(_ path: QueryKeyPath) throws(RealmError) -> QueryKeyPath {
        var path = path
        while true {
            switch token.kind {
            case .dot:
                try advance()
                switch token.kind {
                case .word: path.components.append(.property(tokenText))
                case .collectionOperator(let component): path.components.append(component)
                default:
                    throw fail(
                        "expected a property name or a collection operator such as @count after '.', found "
                            + found, at: token.start)
                }
                try advance()
            case .openBracket:
                let open = token.start
                try advance()
                let key: String
                switch token.kind {
                case .literal(.string(let string)): key = string
                case .nextArgument, .indexedArgument:
                    let (value, index) = try takeArgument()
                    guard let string = value as? String else {
                        throw fail(
                            "a map key must be a String, but argument \(index) is a \(type(of: value))",
                            at: token.start)
                    }
                    key = string
                default:
                    throw fail("expected a quoted map key, such as ['key'], found \(found)", at: token.start)
                }
                try advance()
                try expectClose(.closeBracket, opened: open, what: "map subscript")
                path.components.append(.mapKey(key))
            default:
                return path
            }
        }
    }

    /// `{a, b, …}` of constants (literals and arguments).
    mutating func parseList() throws(RealmError) -> QueryExpression {
        let open = token.start
        try advance()
        var items: [QueryExpression] = []
        if case .closeBrace = token.kind {
            try advance()
            return .list([])
        }
        while true {
            let itemStart = token.start
            if case .openBrace = token.kind { throw fail("lists cannot be nested", at: itemStart) }
            let item = try parseExpression()
            switch item {
            case .keyPath, .subqueryCount:
                throw fail("a list holds constant values only, not key paths", at: itemStart)
            case .list:
                throw fail("lists cannot be nested: an array argument cannot be an element of {…}", at: itemStart)
            default: items.append(item)
            }
            switch token.kind {
            case .comma: try advance()
            case .closeBrace:
                try advance()
                return .list(items)
            case .end:
                throw fail("unbalanced brace: the '{' at offset \(open) is never closed", at: token.start)
            default:
                throw fail(
                    "expected ',' or '}' in the list starting at offset \(open), found \(found)", at: token.start)
            }
        }
    }

    // MARK: Arguments

    /// The argument the current placeholder token (`%@`, `%K`, `$n`) refers to, and its index; does not
    /// consume the token.
    mutating func takeArgument() throws(RealmError) -> (value: Any, index: Int) {
        guard subject == "predicate" else {
            throw fail("a key path cannot contain placeholders", at: token.start)
        }
        let index: Int
        if case .indexedArgument(let number) = token.kind {
            index = number
            highestIndexedArgument = max(highestIndexedArgument, number)
            guard index < arguments.count else {
                throw fail(
                    "$\(number) refers to argument \(number) (numbered from $0) but "
                        + "\(Self.count(arguments.count, "argument")) \(arguments.count == 1 ? "was" : "were") "
                        + "given", at: token.start)
            }
        } else {
            index = sequentialArguments
            sequentialArguments += 1
            guard index < arguments.count else {
                let used = max(Self.argumentsUsed(lexer.bytes), index + 1)
                throw fail(
                    "the predicate uses \(Self.count(used, "argument")) but \(arguments.count) "
                        + "\(arguments.count == 1 ? "was" : "were") given", at: token.start)
            }
        }
        return (arguments[index], index)
    }

    /// An argument as a query constant, with the position in any error.
    func convertArgument(_ value: Any, index: Int, at offset: Int) throws(RealmError) -> QueryExpression {
        do {
            return try PredicateParser.argument(value)
        } catch {
            throw fail("argument \(index) cannot be used: \(error.message)", at: offset)
        }
    }

    /// How many arguments a predicate refers to, counting every `%@`/`%K` and the highest `$n` (read up to
    /// its first lexical error).
    static func argumentsUsed(_ bytes: [UInt8]) -> Int {
        var lexer = PredicateParser.Lexer(bytes, subject: "predicate")
        var sequential = 0
        var highest = -1
        while let token = try? lexer.next() {
            switch token.kind {
            case .end: return max(sequential, highest + 1)
            case .nextArgument, .keyPathArgument: sequential += 1
            case .indexedArgument(let number): highest = max(highest, number)
            default: break
            }
        }
        return max(sequential, highest + 1)
    }

    /// "1 argument", "3 arguments".
    static func count(_ n: Int, _ noun: String) -> String { n == 1 ? "1 \(noun)" : "\(n) \(noun)s" }
}
