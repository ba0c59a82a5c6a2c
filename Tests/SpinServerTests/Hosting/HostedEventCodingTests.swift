import Foundation
import SpinCore
import SpinExamples
@testable import SpinServer
import SpinWire
import Testing
@testable import SpinJSON

/// Every field kind the direct path reads, and one it leaves to `JSONDecoder`.
enum Memo: TypeTaggedEvent, Equatable, Sendable {
    struct Spot: Codable, Equatable, Sendable {
        var x: Int
        var y: Int
    }

    case note(title: String, tags: [String], priority: Int?, weight: Double, urgent: Bool)
    case grid(rows: [[Int]], labels: [String?]?)
    case place(Spot, Double?)
    case clear

    static let eventTypes: EventTypes<Memo> = [
        .type("note", Memo.note, .field("title", .string(minLength: 1)), .field("tags"),
              .field("priority", .integer(in: 1...5)), .field("weight"), .field("urgent")) {
            if case .note(let title, let tags, let priority, let weight, let urgent) = $0 { (title, tags, priority, weight, urgent) } else { nil }
        },
        .type("grid", Memo.grid, .field("rows", .array(of: .array(of: .integer(minimum: 0)))), .field("labels")) {
            if case .grid(let rows, let labels) = $0 { (rows, labels) } else { nil }
        },
        .type("place", Memo.place, .field("at", JSONSchema.object(["x": .integer(), "y": .integer()]), sample: Spot(x: 1, y: 2)),
              .field("scale")) {
            if case .place(let spot, let scale) = $0 { (spot, scale) } else { nil }
        },
        .type(.clear),
    ]
}

/// The server reads a `TypeTaggedEvent` body through its table (`HostedEventCoding`):
/// the same events, and the same messages, as `JSONDecoder` through `init(from:)` gives.
struct HostedEventCodingTests {
    /// What `HostedLoop.decodeEvents` made of `body` before the direct path: the events,
    /// or the message of the error.
    static func throughJSONDecoder<Event: Codable & Sendable>(_ body: String, as _: Event.Type) -> Outcome<Event> {
        let bytes = Array(body.utf8)
        guard case .success(let document) = JSONValidator.validate(bytes) else { return .message("malformed") }
        do {
            switch document.kind {
            case .array: return .events(try JSONDecoder().decode([Event].self, from: Data(bytes)))
            case .object: return .events([try JSONDecoder().decode(Event.self, from: Data(bytes))])
            case .scalar: return .message("scalar")
            }
        } catch let error as DecodingError {
            return .message(HostedLoop<Int, Event>.describe(error))
        } catch {
            return .message("\(error)")
        }
    }

    static func direct<Event: Codable & Sendable>(_ body: String, as _: Event.Type) -> Outcome<Event> {
        let bytes = Array(body.utf8)
        guard case .success(let document) = JSONValidator.validate(bytes) else { return .message("malformed") }
        guard document.kind != .scalar else { return .message("scalar") }
        do {
            return .events(try HostedEventCoding<Event>().decode(document, bytes))
        } catch let error as DecodingError {
            return .message(HostedLoop<Int, Event>.describe(error))
        } catch {
            return .message("\(error)")
        }
    }

    /// A body's events, or the message it is refused with.
    enum Outcome<Event> {
        case events([Event])
        case message(String)
    }

    static func expectSame<Event: Codable & Sendable & Equatable>(_ bodies: [String], as type: Event.Type) {
        for body in bodies {
            let expected = throughJSONDecoder(body, as: type)
            let got = direct(body, as: type)
            switch (got, expected) {
            case (.events(let got), .events(let expected)): #expect(got == expected, "\(body)")
            case (.message(let got), .message(let expected)): #expect(got == expected, "\(body)")
            default: Issue.record("\(body): \(got), not \(expected)")
            }
        }
    }

    /// Bodies of every shape: right, of the wrong kind, null, odd numbers and strings.
    static let memoBodies: [String] = {
        let values = [#""a""#, #""""#, #""\u00e9\n\"q\" \ud83d\ude00 \/""#, "1", "-0", "0", "3", "9", "1.0", "1e0", "2.5",
                      "-2.5e-3", "1e400", "12345678901234567890", "123456789012345678", "-9223372036854775808",
                      "true", "false", "null", "[]", "[1, 2]", #"["x", "y"]"#, #"[1, "x"]"#, "[null]", #"["x", null]"#,
                      "[[1, 2], [3]]", "[[1, -2]]", #"[[1], ["x"]]"#, "[[1.5]]", "{}", #"{"x": 1, "y": 2}"#,
                      #"{"x": "1", "y": 2}"#, #"{"x": 1}"#]
        var bodies = [#"{"type":"clear"}"#, #"{"type":"jump"}"#, #"{"type":5}"#, #"{"type":null}"#, #"{"kind":"clear"}"#,
                      #"{"typ\u0065":"clear"}"#, #"{"type":"cl\u0065ar"}"#, "[]", "[1]", #"[{"type":"clear"}, 2]"#,
                      #"[{"type":"clear"}, [{"type":"clear"}]]"#, #"[{"type":"clear"},{"type":"jump"}]"#,
                      #" [ { "type" : "clear" } , { "type" : "grid" , "rows" : [ [ 1 ] , [ ] ] } ] "#]
        for value in values {
            bodies.append(#"{"type":"note","title":\#(value),"tags":[],"weight":1,"urgent":true}"#)
            bodies.append(#"{"type":"note","title":"t","tags":\#(value),"weight":1,"urgent":true}"#)
            bodies.append(#"{"type":"note","title":"t","tags":[],"priority":\#(value),"weight":1,"urgent":true}"#)
            bodies.append(#"{"type":"note","title":"t","tags":[],"weight":\#(value),"urgent":false}"#)
            bodies.append(#"{"type":"note","title":"t","tags":[],"weight":1,"urgent":\#(value)}"#)
            bodies.append(#"[{"type":"clear"},{"type":"grid","rows":\#(value)}]"#)
            bodies.append(#"{"type":"grid","rows":[],"labels":\#(value)}"#)
            bodies.append(#"{"type":"place","at":\#(value)}"#)
            bodies.append(#"{"type":"place","at":{"x":1,"y":2},"scale":\#(value)}"#)
        }
        bodies.append(#"{"type":"note","tags":[],"weight":1,"urgent":true}"#)
        bodies.append(#"{"urgent":true,"weight":1,"tags":["a"],"title":"t","type":"note","extra":{"type":"clear"}}"#)
        return bodies
    }()

    @Test func aTypeTaggedBody_DecodesAsJSONDecoderDecodesIt_EventsAndMessages() {
        Self.expectSame(Self.memoBodies, as: Memo.self)
    }

    @Test func theExamplesBodies_DecodeAsJSONDecoderDecodesThem() {
        let bodies = [#"{"type":"increase"}"#, #"{"type":"jump"}"#, #"[{"type":"reset"},{"type":"decrease"}]"#,
                      #"[{"type":"reset"},{"type":"up"}]"#, #"{"type":["increase"]}"#, "[3]", #"{}"#]
        Self.expectSame(bodies, as: Counter.Event.self)
        Self.expectSame(bodies + [#"{"type":"set","left":1,"right":2}"#, #"[{"type":"increaseLeft"},{"type":"set","left":1}]"#,
                                  #"{"type":"set","left":"one","right":2}"#, #"{"type":"set","left":1,"right":2000000000}"#,
                                  #"{"type":"set","left":null,"right":2}"#],
                        as: Levels.Event.self)
        Self.expectSame(bodies + [#"{"type":"loaded","items":0}"#, #"{"type":"loaded","items":-1}"#, #"{"type":"load"}"#],
                        as: Feature.Event.self)
    }

    /// An event that is not a `TypeTaggedEvent` still goes through `JSONDecoder`.
    @Test func aCodableEvent_DecodesThroughJSONDecoder() {
        Self.expectSame([#"{"type":"step"}"#, #"[{"type":"poison"},{"type":"step"}]"#, #"{"kind":"step"}"#, "[5]"],
                        as: Fragile.self)
    }

    @Test func aTypeTaggedEvent_EncodesAsOrderedJSONEncoderDoes() throws {
        let events: [Memo] = [
            .note(title: "é <b> & \"q\"\n\u{1}", tags: ["", "\\"], priority: nil, weight: 0.1, urgent: true),
            .note(title: "t", tags: [], priority: 3, weight: -2, urgent: false),
            .note(title: "t", tags: [], priority: 3, weight: 1e300, urgent: false),
            .grid(rows: [[1, 2], [], [Int.max]], labels: ["a", nil]),
            .grid(rows: [], labels: nil),
            .place(Memo.Spot(x: 1, y: -1), 2.5),
            .clear,
        ]
        let coding = HostedEventCoding<Memo>()
        for event in events {
            #expect(try coding.encode(event) == OrderedJSONEncoder().encode(event), "\(event)")
        }
        // What the schema refuses is an error either way.
        #expect(throws: EncodingError.self) { try coding.encode(.note(title: "", tags: [], priority: nil, weight: 1, urgent: true)) }
        #expect(throws: EncodingError.self) { try coding.encode(.note(title: "t", tags: [], priority: nil, weight: .nan, urgent: true)) }
    }
}
