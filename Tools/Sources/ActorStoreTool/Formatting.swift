import ActorStore
import Foundation

/// How `query` prints values: table cells and JSON lines.
enum Formatting {
    /// A value as a table cell: plain text, `null`, a linked object as `Class(primary key)`.
    static func cell(_ value: Any?) -> String {
        switch value {
        case nil, is NSNull: return "null"
        case let object as DynamicObject: return link(object)
        case let string as String: return string.replacingOccurrences(of: "\n", with: "\\n")
        case let data as Data: return "<\(data.count) bytes>"
        case let date as Date: return date.formatted(.iso8601)
        case let array as [Any]: return "[" + array.map { cell($0) }.joined(separator: ", ") + "]"
        case let map as [String: Any]:
            return "{" + map.keys.sorted().map { "\($0): \(cell(map[$0]))" }.joined(separator: ", ") + "}"
        case let value?: return "\(value)"
        }
    }

    private static func link(_ object: DynamicObject) -> String {
        guard let key = object.objectSchema.primaryKeyProperty?.name else { return "\(object.className)(…)" }
        return "\(object.className)(\(cell(object[key])))"
    }

    /// Rows under a header, columns padded to their widest cell (each cell at most 40 characters).
    static func table(_ rows: [[String]], _ header: [String]) -> String {
        let clipped = rows.map { $0.map { $0.count > 40 ? String($0.prefix(39)) + "…" : $0 } }
        var widths = header.map(\.count)
        for row in clipped {
            for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
        var lines = [line(header), line(widths.map { String(repeating: "-", count: $0) })]
        lines += clipped.map(line)
        lines.append("(\(rows.count) object\(rows.count == 1 ? "" : "s"))")
        return lines.joined(separator: "\n")
    }

    /// An object as one JSON object of its properties, in schema order.
    static func jsonLine(_ object: DynamicObject, _ properties: [String]) -> String {
        "{" + properties.map { "\(json($0)):\(json(object[$0]))" }.joined(separator: ",") + "}"
    }

    /// A value as JSON: dates ISO 8601, data base64, ObjectId, Decimal128 and UUID as strings, a linked
    /// object as its primary key (or null), non-finite numbers as strings.
    static func json(_ value: Any?) -> String {
        switch value {
        case nil, is NSNull: return "null"
        case let bool as Bool: return bool ? "true" : "false"
        case let int as Int: return String(int)
        case let double as Double: return double.isFinite ? double.description : json(double.description)
        case let float as Float: return float.isFinite ? float.description : json(float.description)
        case let string as String: return quoted(string)
        case let data as Data: return quoted(data.base64EncodedString())
        case let date as Date: return quoted(date.formatted(.iso8601))
        case let uuid as UUID: return quoted(uuid.uuidString)
        case let object as DynamicObject:
            guard let key = object.objectSchema.primaryKeyProperty?.name else { return "null" }
            return json(object[key])
        case let array as [Any]: return "[" + array.map { json($0) }.joined(separator: ",") + "]"
        case let map as [String: Any]:
            return "{" + map.keys.sorted().map { "\(quoted($0)):\(json(map[$0]))" }.joined(separator: ",") + "}"
        case let value?: return quoted("\(value)")
        }
    }

    private static func quoted(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
