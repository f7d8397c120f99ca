import ActorStorePersistence
import Foundation

// The parser of the predicate language: tokens in, a `QueryPredicate` out, without recursion.

extension PredicateParser {
    private static let operatorList = "==, !=, <, <=, >, >=, BEGINSWITH, ENDSWITH, CONTAINS, LIKE, IN or BETWEEN"

    /// A parser over the lexer's tokens, with one token of lookahead; see "Predicates" for how it nests
    /// without recursing.
    struct Parser {
        var lexer: Lexer
        /// The current token (not yet consumed).
        var token: Token
        let arguments: [Any]
        let subject: String
        /// How many arguments `%@` and `%K` have taken.
        var sequentialArguments = 0
        /// The highest `$n` used, or -1.
        var highestIndexedArgument = -1
        /// The variables of the enclosing `SUBQUERY`s, innermost last.
        var variables: [String] = []

        init(_ bytes: [UInt8], _ arguments: [Any], subject: String) throws(RealmError) {
            var lexer = Lexer(bytes, subject: subject)
            let first = try lexer.next()
            self.lexer = lexer
            self.token = first
            self.arguments = arguments
            self.subject = subject
        }

        /// A syntax error at `offset`.
        func fail(_ message: String, at offset: Int) -> RealmError {
            PredicateParser.syntaxError(message, at: offset, in: lexer.bytes, subject: subject)
        }

        /// Consumes the current token.
        mutating func advance() throws(RealmError) { token = try lexer.next() }

        /// The current token's keyword, if it is one.
        var keyword: Keyword? {
            if case .word(let keyword) = token.kind { return keyword }
            return nil
        }

        /// The source text of the current token, for names.
        var tokenText: String { lexer.text(token.start..<token.end) }

        /// The current token as error messages show it.
        var found: String { describe(token.start..<token.end) }

        /// A stretch of the input as error messages show it: quoted, at most 40 bytes.
        func describe(_ range: Range<Int>) -> String {
            guard !range.isEmpty else { return "the end of the \(subject)" }
            var end = min(range.upperBound, range.lowerBound + 40)
            while end < lexer.bytes.count, end > range.lowerBound, lexer.bytes[end] & 0xC0 == 0x80 { end -= 1 }
            return "'" + lexer.text(range.lowerBound..<end) + (end < range.upperBound ? "…'" : "'")
        }

        /// Throws when `levels` (a nesting of parentheses and `SUBQUERY`s, or a tree height) is over the limit.
        func checkDepth(_ levels: Int, at offset: Int) throws(RealmError) {
            guard levels <= PredicateParser.maximumDepth else {
                throw fail(
                    "the \(subject) nests deeper than \(PredicateParser.maximumDepth) levels (of parentheses, "
                        + "NOT, AND/OR groups and SUBQUERY)", at: offset)
            }
        }

        // MARK: Whole inputs

        /// A whole predicate string, then checks that every argument was used.
        mutating func parsePredicateString() throws(RealmError) -> QueryPredicate {
            if case .end = token.kind {
                throw fail("the predicate is empty (use TRUEPREDICATE to match every object)", at: 0)
            }
            let predicate = try parsePredicate()
            switch token.kind {
            case .end: break
            case .closeParen: throw fail("unbalanced parenthesis: this ')' has no matching '('", at: token.start)
            default: throw fail("expected AND, OR or the end of the predicate, found \(found)", at: token.start)
            }
            let used = max(sequentialArguments, highestIndexedArgument + 1)
            if arguments.count > used {
                throw fail(
                    "the predicate uses \(Self.count(used, "argument")) but \(arguments.count) "
                        + "\(arguments.count == 1 ? "was" : "were") given (a placeholder inside quotes, such as "
                        + "'%@', is a plain string)", at: token.start)
            }
            return predicate
        }

        /// A whole key path string.
        mutating func parseKeyPathString() throws(RealmError) -> QueryKeyPath {
            let start = token.start
            guard case .word = token.kind else { throw fail("expected a property name, found \(found)", at: start) }
            let name = tokenText
            try advance()
            let path = try parseKeyPathTail(QueryKeyPath(variable: nil, [.property(name)], position: start))
            guard case .end = token.kind else {
                throw fail("expected '.' or the end of the key path, found \(found)", at: token.start)
            }
            return path
        }

        // MARK: Predicates
        //
        // Parentheses and SUBQUERYs nest, but the parser does not recurse: it keeps the open groups on an
        // explicit stack (`groups`), so it uses the same few frames of call stack however deep the input nests.
        // (Recursive descent cost over 3 KB of stack per parenthesis and 12 KB per SUBQUERY in a debug build.)
        //
        // Heights: 0 for a comparison or constant, one more than the tallest child for NOT, AND and OR, and
        // one more than its predicate for a comparison with a SUBQUERY. Both the height and the nesting of
        // parentheses and SUBQUERYs are limited to `maximumDepth`: the nesting bounds the parser's work, the
        // height every later (recursive) walk of the tree. `description` prints a tree of height h with at most
        // h levels of parentheses, so whatever parses prints as something that parses again.

        /// A predicate and its height.
        typealias Parsed = (predicate: QueryPredicate, height: Int)

        /// An open group: the whole input, a parenthesis, or a SUBQUERY's predicate.
        struct Group {
            enum Kind {
                case whole
                case parenthesis
                /// The comparison waiting for this SUBQUERY's count, and the SUBQUERY's parts.
                case subquery(PendingComparison, collection: QueryKeyPath, variable: String)
            }

            var kind: Kind
            /// Where the group opened (its `(` or `SUBQUERY`).
            var start: Int
            /// The finished AND chains of the group's OR chain, and the tallest.
            var ors: [QueryPredicate] = []
            var orsHeight = 0
            /// The operands of the current AND chain, and the tallest.
            var ands: [QueryPredicate] = []
            var andsHeight = 0
            /// The NOTs read before the operand being read, and where the first one was.
            var nots = 0
            var notsStart = 0

            init(_ kind: Kind, start: Int) {
                self.kind = kind
                self.start = start
            }
        }

        /// A comparison read up to a SUBQUERY on one of its sides.
        struct PendingComparison {
            var quantifier: QueryQuantifier?
            /// Where the left side starts.
            var start: Int
            /// Nil while the left side is the SUBQUERY being read.
            var lhs: QueryExpression?
            var lhsHeight = 0
            /// Set when the right side is the SUBQUERY being read.
            var op: QueryOperator?
            var options: QueryOptions = []
        }

        /// What reading a comparison gave: the comparison, or a SUBQUERY to read first.
        enum Step {
            case operand(Parsed)
            case subquery(Group)
        }

        /// Whether the current token is `NOT` or `!`.
        var isNot: Bool {
            switch token.kind {
            case .not, .word(.not?): true
            default: false
            }
        }

        /// Whether the current token is `AND` or `&&`.
        var isAnd: Bool {
            switch token.kind {
            case .and, .word(.and?): true
            default: false
            }
        }

        /// Whether the current token is `OR` or `||`.
        var isOr: Bool {
            switch token.kind {
            case .or, .word(.or?): true
            default: false
            }
        }

        /// Whether the current token is `SUBQUERY`.
        var isSubquery: Bool {
            if case .word(.subquery?) = token.kind { return true }
            return false
        }

        /// A predicate up to the end of the input or an unmatched `)` (which the caller reports).
        mutating func parsePredicate() throws(RealmError) -> QueryPredicate {
            var groups = [Group(.whole, start: token.start)]
            operands: while true {
                // One operand of the innermost group: NOTs, then '(', a constant or a comparison.
                let top = groups.count - 1
                while isNot {
                    if groups[top].nots == 0 { groups[top].notsStart = token.start }
                    groups[top].nots += 1
                    try checkDepth(groups[top].nots, at: token.start)
                    try advance()
                }
                var step: Step
                switch token.kind {
                case .openParen:
                    try checkDepth(groups.count, at: token.start)
                    groups.append(Group(.parenthesis, start: token.start))
                    try advance()
                    continue operands
                case .word(.truePredicate?):
                    try advance()
                    step = .operand((.constant(true), 0))
                case .word(.falsePredicate?):
                    try advance()
                    step = .operand((.constant(false), 0))
                default:
                    let quantifier = try readQuantifier()
                    step = try readComparison(PendingComparison(quantifier: quantifier, start: token.start))
                }
                // Add the operand to its group; close the groups it ends.
                while true {
                    let operand: Parsed
                    switch step {
                    case .subquery(let group):
                        try checkDepth(groups.count, at: group.start)
                        groups.append(group)
                        continue operands
                    case .operand(let parsed): operand = parsed
                    }
                    let top = groups.count - 1
                    var (predicate, height) = operand
                    let nots = groups[top].nots
                    if nots > 0 {
                        try checkDepth(height + nots, at: groups[top].notsStart)
                        for _ in 0..<nots { predicate = .not(predicate) }
                        height += nots
                        groups[top].nots = 0
                    }
                    groups[top].ands.append(predicate)
                    groups[top].andsHeight = max(groups[top].andsHeight, height)
                    if isAnd {
                        try advance()
                        continue operands
                    }
                    let chain = try chain(groups[top].ands, height: groups[top].andsHeight, QueryPredicate.and)
                    groups[top].ands = []
                    groups[top].andsHeight = 0
                    groups[top].ors.append(chain.predicate)
                    groups[top].orsHeight = max(groups[top].orsHeight, chain.height)
                    if isOr {
                        try advance()
                        continue operands
                    }
                    guard let group = groups.popLast() else { throw fail("internal parser error", at: token.start) }
                    let result = try self.chain(group.ors, height: group.orsHeight, QueryPredicate.or)
                    switch group.kind {
                    case .whole:
                        return result.predicate
                    case .parenthesis:
                        try expectClose(.closeParen, opened: group.start, what: "parenthesis")
                        step = .operand(result)
                    case .subquery(let pending, let collection, let variable):
                        try closeSubquery(opened: group.start)
                        variables.removeAll { $0 == variable }
                        try checkDepth(result.height + 1, at: group.start)
                        let count = QueryExpression.subqueryCount(
                            collection: collection, variable: variable, predicate: result.predicate)
                        step = try resume(pending, with: count, height: result.height + 1)
                    }
                }
            }
        }

        /// One operand, or an AND (or OR) of several: one level taller than the tallest.
        func chain(
            _ parts: [QueryPredicate], height: Int, _ combine: ([QueryPredicate]) -> QueryPredicate
        ) throws(RealmError) -> Parsed {
            if parts.count == 1, let only = parts.first { return (only, height) }
            try checkDepth(height + 1, at: token.start)
            return (combine(parts), height + 1)
        }

        /// `ANY`, `SOME`, `ALL` or `NONE`, if present.
        mutating func readQuantifier() throws(RealmError) -> QueryQuantifier? {
            let quantifier: QueryQuantifier
            switch keyword {
            case .any?, .someQuantifier?: quantifier = .any
            case .all?: quantifier = .all
            case .noneQuantifier?: quantifier = QueryQuantifier.none
            default: return nil
            }
            try advance()
            return quantifier
        }

        /// Reads a comparison from where `pending` left off to its end, or up to a SUBQUERY on either side,
        /// which it opens (its count comes back through `resume`).
        mutating func readComparison(_ pending: PendingComparison) throws(RealmError) -> Step {
            var pending = pending
            let lhs: QueryExpression
            if let known = pending.lhs {
                lhs = known
            } else {
                if isSubquery { return .subquery(try openSubquery(pending)) }
                lhs = try parseExpression()
                pending.lhs = lhs
            }
            guard let op = try readOperator(after: lhs, start: pending.start) else {
                return .operand((try parseBetween(lhs, quantifier: pending.quantifier), pending.lhsHeight))
            }
            let options = try parseOptions(for: op)
            if isSubquery {
                pending.op = op
                pending.options = options
                return .subquery(try openSubquery(pending))
            }
            let rhs = try parseExpression()
            let comparison = QueryComparison(lhs, op, rhs, options: options, quantifier: pending.quantifier)
            return .operand((.comparison(comparison), pending.lhsHeight))
        }

        /// Continues the comparison a SUBQUERY interrupted, now that its count has been read.
        mutating func resume(
            _ pending: PendingComparison, with count: QueryExpression, height: Int
        ) throws(RealmError) -> Step {
            var pending = pending
            if let lhs = pending.lhs, let op = pending.op {
                let comparison = QueryComparison(
                    lhs, op, count, options: pending.options, quantifier: pending.quantifier)
                return .operand((.comparison(comparison), max(pending.lhsHeight, height)))
            }
            pending.lhs = count
            pending.lhsHeight = height
            return try readComparison(pending)
        }

        /// The operator after a comparison's left side (nil for `BETWEEN`), consumed.
        mutating func readOperator(after lhs: QueryExpression, start: Int) throws(RealmError) -> QueryOperator? {
            let op: QueryOperator?
            switch token.kind {
            case .comparison(let comparison): op = comparison
            case .word(.inOperator?): op = .in
            case .word(.beginsWith?): op = .beginsWith
            case .word(.endsWith?): op = .endsWith
            case .word(.contains?): op = .contains
            case .word(.like?): op = .like
            case .word(.between?): op = nil
            default: throw operatorError(after: lhs, start: start)
            }
            try advance()
            return op
        }

        /// The error for a missing or unknown operator after a comparison's left side.
        func operatorError(after lhs: QueryExpression, start: Int) -> RealmError {
            let lhsText = describe(start..<previousEnd)
            switch token.kind {
            case .word(nil):
                return fail("unknown operator \(found); expected \(PredicateParser.operatorList)", at: token.start)
            case .end, .and, .or, .closeParen, .word(.and?), .word(.or?):
                if case .keyPath(let path) = lhs {
                    return fail(
                        "\(lhsText) is not a condition: compare it with a value, such as '\(path) == true'", at: start)
                }
                return fail("expected a comparison operator after \(lhsText), found \(found)", at: token.start)
            default:
                return fail(
                    "expected a comparison operator (\(PredicateParser.operatorList)) after \(lhsText), found "
                        + "\(found)", at: token.start)
            }
        }

        /// Reads `SUBQUERY(collection, $variable,` and declares the variable; the predicate is read next, as a
        /// group.
        mutating func openSubquery(_ pending: PendingComparison) throws(RealmError) -> Group {
            let start = token.start
            try advance()
            guard case .openParen = token.kind else {
                throw fail("expected '(' after SUBQUERY, found \(found)", at: token.start)
            }
            try advance()
            let collectionStart = token.start
            guard !isSubquery, case .keyPath(let collection) = try parseExpression() else {
                throw fail(
                    "SUBQUERY's first argument must be a key path to a collection, as in SUBQUERY(dogs, $d, "
                        + "$d.age < 2).@count", at: collectionStart)
            }
            guard case .comma = token.kind else {
                throw fail("expected ',' after SUBQUERY's collection, found \(found)", at: token.start)
            }
            try advance()
            guard case .variable(let variable) = token.kind else {
                throw fail(
                    "expected a variable such as $d as SUBQUERY's second argument, found \(found)", at: token.start)
            }
            guard !variables.contains(variable) else {
                throw fail("the variable \(variable) is already declared by an enclosing SUBQUERY", at: token.start)
            }
            try advance()
            guard case .comma = token.kind else {
                throw fail("expected ',' after SUBQUERY's variable, found \(found)", at: token.start)
            }
            try advance()
            variables.append(variable)
            return Group(.subquery(pending, collection: collection, variable: variable), start: start)
        }

        /// Reads the `).@count` that ends a SUBQUERY opened at `opened`.
        mutating func closeSubquery(opened: Int) throws(RealmError) {
            try expectClose(.closeParen, opened: opened, what: "SUBQUERY")
            let countStart = token.start
            var counted = false
            if case .dot = token.kind {
                try advance()
                if case .collectionOperator(.count) = token.kind { counted = true }
            }
            guard counted else {
                throw fail(
                    "SUBQUERY(…) must be followed by .@count (the number of elements that match)", at: countStart)
            }
            try advance()
        }

        /// Consumes a `)` or `]` closing what was opened at `opened`, or throws.
        mutating func expectClose(_ kind: Token.Kind, opened: Int, what: String) throws(RealmError) {
            switch (kind, token.kind) {
            case (.closeParen, .closeParen), (.closeBracket, .closeBracket):
                try advance()
            case (_, .end):
                throw fail("unbalanced \(what): the opening at offset \(opened) is never closed", at: token.start)
            default:
                let close = if case .closeParen = kind { "')'" } else { "']'" }
                throw fail(
                    "expected \(close) to close the \(what) at offset \(opened), found \(found)", at: token.start)
            }
        }

        /// Where the last consumed token ended (the start of the current one, less whitespace).
        var previousEnd: Int {
            var end = token.start
            while end > 0, isSpace(lexer.bytes[end - 1]) { end -= 1 }
            return end
        }

        /// `[c]`, `[d]`, `[cd]` or `[dc]` after an operator, if present.
        mutating func parseOptions(for op: QueryOperator) throws(RealmError) -> QueryOptions {
            guard case .openBracket = token.kind else { return [] }
            let open = token.start
            try advance()
            var options: QueryOptions = []
            var valid = false
            if case .word = token.kind, token.end - token.start <= 2 {
                valid = true
                for byte in lexer.bytes[token.start..<token.end] {
                    let option: QueryOptions
                    switch byte | 0x20 {
                    case UInt8(ascii: "c"): option = .caseInsensitive
                    case UInt8(ascii: "d"): option = .diacriticInsensitive
                    default:
                        valid = false
                        option = []
                    }
                    if options.contains(option) { valid = false }
                    options.insert(option)
                }
            }
            guard valid else {
                throw fail(
                    "expected a modifier c, d or cd inside '[…]' after the operator, found \(found)", at: token.start)
            }
            try advance()
            try expectClose(.closeBracket, opened: open, what: "modifier bracket")
            switch op {
            case .equal, .notEqual, .in, .beginsWith, .endsWith, .contains, .like: break
            default:
                throw fail(
                    "modifiers such as [c] apply to ==, !=, IN, BEGINSWITH, ENDSWITH, CONTAINS and LIKE, not to "
                        + op.rawValue, at: open)
            }
            return options
        }

        /// `lhs BETWEEN {lower, upper}` or `lhs BETWEEN %@` (a two-element array or a closed range).
        mutating func parseBetween(
            _ lhs: QueryExpression, quantifier: QueryQuantifier?
        ) throws(RealmError)
            -> QueryPredicate
        {
            let start = token.start
            let bounds: QueryExpression
            switch token.kind {
            case .openBrace:
                bounds = try parseList()
            case .nextArgument, .indexedArgument:
                let (value, index) = try takeArgument()
                if let range = value as? any ClosedRangeArgument {
                    let (lower, upper) = range.argumentBounds
                    bounds = .list([
                        try convertArgument(lower, index: index, at: start),
                        try convertArgument(upper, index: index, at: start),
                    ])
                } else {
                    bounds = try convertArgument(value, index: index, at: start)
                }
                try advance()
            case .openBracket:
                throw fail("BETWEEN takes no modifiers", at: start)
            default:
                throw fail("expected {lower, upper} or an argument after BETWEEN, found \(found)", at: start)
            }
            guard case .list(let items) = bounds, items.count == 2 else {
                throw fail(
                    "BETWEEN needs exactly two bounds: {lower, upper}, or an argument holding a two-element array "
                        + "or a closed range", at: start)
            }
            return .between(lhs, lower: items[0], upper: items[1], quantifier: quantifier)
        }
    }
}
