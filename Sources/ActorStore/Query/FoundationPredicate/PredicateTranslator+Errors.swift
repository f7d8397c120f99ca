import ActorStorePersistence
import Foundation

// What `#Predicate` cannot translate (and how it is reported), and the constants it can.

extension PredicateTranslator {
    // MARK: Errors

    /// An `invalidQuery` error naming `node` (its shortened Swift type and its description), why it has no
    /// translation, and what is supported.
    func unsupported(_ node: Any, _ reason: String? = nil) -> RealmError {
        let name = Self.shortTypeName(node)
        var message = "#Predicate cannot be translated into a query: \(name)"
        if let friendly = Self.friendlyNames[Self.baseTypeName(node)] { message += " (\(friendly))" }
        message += " " + (reason ?? "has no query equivalent")
        var text = Self.describe(node)
        if text.count > 240 { text = String(text.prefix(240)) + "…" }
        message += ", in `\(text)`. " + Self.supported
        return RealmError(.invalidQuery, message)
    }

    /// What the translator supports, for error messages.
    static let supported =
        "Supported: ==, !=, <, <=, >, >= between properties and constants (nil included); &&, ||, ! and "
        + "ternaries of conditions; @Persisted properties, through to-one links with ?. or !; ??; String "
        + "contains(_:), starts(with:), localizedStandardContains(_:) and caseInsensitiveCompare(_:) == "
        + ".orderedSame; collection contains(_:), contains(where:), allSatisfy(_:), filter(_:).count, count, "
        + "isEmpty, min() and max(); contains(_:) on a constant array or range."

    private static let friendlyNames: [String: String] = [
        "Arithmetic": "+, -, *",
        "IntDivision": "/",
        "FloatDivision": "/",
        "IntRemainder": "%",
        "UnaryMinus": "unary -",
        "StringContainsRegex": "regex matching",
        "TypeCheck": "is",
        "ConditionalCast": "as?",
        "ForceCast": "as!",
        "CollectionIndexSubscript": "subscript",
        "CollectionRangeSubscript": "range subscript",
        "DictionaryKeySubscript": "dictionary subscript",
        "DictionaryKeyDefaultValueSubscript": "dictionary subscript",
        "CollectionContainsCollection": "contains(_:) on a collection",
        "SequenceStartsWith": "starts(with:) on a collection",
        "StringLocalizedCompare": "localizedCompare(_:), whose order depends on the locale",
        "ExpressionEvaluate": "evaluating an #Expression",
    ]

    /// `node`'s description, with key paths to persisted properties spelled by name: a `@Persisted`
    /// property is a computed property (backed by its wrapper), which a key path prints as
    /// `\Dog.<computed 0x… (Int)>` where the runtime has no name for it (Linux).
    static func describe(_ node: Any) -> String {
        var text = String(describing: node)
        var keyPaths: [AnyKeyPath] = []
        collectKeyPaths(in: node, into: &keyPaths, depth: 0)
        for keyPath in keyPaths {
            let printed = String(describing: keyPath)
            guard printed.contains("<computed"), let objectType = type(of: keyPath).rootType as? ObjectBase.Type,
                let properties = persistedProperties(read: keyPath, on: objectType)
            else { continue }
            let named =
                "\\\(ClassRegistry.info(for: objectType).className)." + properties.map(\.name).joined(separator: ".")
            text = text.replacingOccurrences(of: printed, with: named)
        }
        return text
    }

    private static func collectKeyPaths(in value: Any, into keyPaths: inout [AnyKeyPath], depth: Int) {
        guard depth < 64 else { return }
        for child in Mirror(reflecting: value).children {
            if let keyPath = child.value as? AnyKeyPath {
                keyPaths.append(keyPath)
            } else {
                collectKeyPaths(in: child.value, into: &keyPaths, depth: depth + 1)
            }
        }
    }

    /// `Arithmetic` for `PredicateExpressions.Arithmetic<…>`.
    static func baseTypeName(_ value: Any) -> String {
        let name = String(describing: type(of: value))
        return String(name.prefix { $0 != "<" })
    }

    /// `PredicateExpressions.Arithmetic` for `FoundationEssentials.PredicateExpressions.Arithmetic<…>`.
    static func shortTypeName(_ value: Any) -> String {
        let qualified = _typeName(type(of: value), qualified: true).prefix { $0 != "<" }
        let parts = qualified.split(separator: ".")
        if parts.count >= 2, parts[parts.count - 2] == "PredicateExpressions" {
            return "PredicateExpressions.\(parts[parts.count - 1])"
        }
        return baseTypeName(value)
    }

    // MARK: Constants

    /// The stored form of a constant: any persistable scalar (optionals and enums included), a Character or
    /// a Substring (as a string); nil for anything else.
    static func storedValue(_ value: Any) -> Value? {
        if let scalar = value as? any _PersistableScalar { return scalar._rlmToStored.raw }
        if let character = value as? Character { return .string(String(character)) }
        if let substring = value as? Substring { return .string(String(substring)) }
        return nil
    }

    static func string(_ value: Any) -> String? {
        switch value {
        case let string as String: string
        case let substring as Substring: String(substring)
        case let character as Character: String(character)
        default: nil
        }
    }

    /// The stored forms of a constant array or set of scalars (`["a", "b"].contains($0.name)`).
    func constantElements(_ value: Any) -> [Value]? {
        guard !(value is String), !(value is Substring), let sequence = value as? any Sequence else { return nil }
        var values: [Value] = []
        for element in Self.elements(of: sequence) {
            guard let stored = Self.storedValue(element) else { return nil }
            values.append(stored)
        }
        return values
    }

    private static func elements<S: Sequence>(of sequence: S) -> [Any] { sequence.map { $0 } }
}
