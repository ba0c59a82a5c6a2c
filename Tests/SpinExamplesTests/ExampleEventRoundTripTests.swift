import Foundation
import PropertyBased
import SpinCore
import SpinExamples
import Testing
@testable import SpinJSON

/// Every event type of the examples round-trips through the server's coders, over random
/// and extreme values: SpinExamples' and Examples/TodoServer's (its Spin kinds are
/// compiled into this target too, `TodoKinds/`, linked to that package's files).
enum EventInputs {
    static let level = zip(Gen.int(in: 0...1), Gen.int(in: Levels.range),
                           Gen.element(of: [Levels.range.lowerBound, Levels.range.upperBound, 0, -1, 1]))
        .map { pick, any, edge in pick == 0 ? any : edge! }

    static let levels = zip(Gen.int(in: 0...4), level, level).map { kind, left, right -> Levels.Event in
        [.increaseLeft, .decreaseLeft, .increaseRight, .decreaseRight, .set(left: left, right: right)][kind]
    }

    static let count = zip(Gen.int(in: 0...1), Gen.int(in: 0...Int.max), Gen.element(of: [0, 1, Int.max]))
        .map { pick, any, edge in pick == 0 ? any : edge! }

    static let feature = zip(Gen.int(in: 0...2), count).map { kind, items -> Feature.Event in
        [.load, .loaded(items: items), .unauthorizedResponse][kind]
    }

    static let title = zip(Gen.int(in: 0...1), Gen.letterOrNumber.string(of: 1...12),
                           Gen.element(of: ["é", "\"quoted\"\n", "🙂", "a\\b", "\u{1}"]))
        .map { pick, any, odd in pick == 0 ? any : odd! }

    static let todo = zip(Gen.int(in: 0...3), title, Inputs.int).map { kind, title, id -> TodoList.Event in
        [.add(title: title), .toggle(id: id), .remove(id: id), .cleanup][kind]
    }

    static let stats = zip(Gen.int(in: 0...1), Inputs.int, Inputs.int, Inputs.int).map { kind, open, done, archived -> Stats.Event in
        kind == 0 ? .counted(open: open, done: done, archived: archived) : .reset
    }

    static let todoGear = zip(Inputs.int, Inputs.int, Inputs.int).map { TodoGearEvent.counts(open: $0, done: $1, archived: $2) }
}

@Suite(.timeLimit(.minutes(2)))
struct ExampleEventRoundTripTests {
    /// decode(encode(event)) == event, and encoding it again gives the same bytes.
    static func expectRoundTrip<Event: Codable & Equatable>(_ event: Event) throws {
        let bytes = try OrderedJSONEncoder().encode(event)
        let decoded = try JSONDecoder().decode(Event.self, from: Data(bytes))
        #expect(decoded == event)
        #expect(try OrderedJSONEncoder().encode(decoded) == bytes)
        #expect(try OrderedJSONEncoder().encode(event) == bytes)
    }

    /// The server's direct path through the table (`EventTypes.json(encoding:)` and
    /// `decode(_:fallback:)`) writes the bytes `OrderedJSONEncoder` writes, and reads
    /// them back as the same event.
    static func expectDirectJSON<Event: TypeTaggedEvent & Equatable>(_ event: Event) throws {
        let table = Event.eventTypes
        let bytes = try OrderedJSONEncoder().encode(event)
        let direct = table.json(encoding: event)
        #expect(direct == bytes, "\(event): \(direct.map { String(decoding: $0, as: UTF8.self) } ?? "nil") is not \(String(decoding: bytes, as: UTF8.self))")
        guard case .success(let document) = JSONValidator.validate(bytes) else {
            Issue.record("\(String(decoding: bytes, as: UTF8.self)) is not valid JSON")
            return
        }
        let json = EventJSON(bytes: bytes, range: bytes.indices, members: document.members[...], index: nil)
        #expect(try table.decode(json, fallback: FoundationFallback()) == event)
    }

    static func expectBothPaths<Event: TypeTaggedEvent & Equatable>(_ event: Event) throws {
        try expectRoundTrip(event)
        try expectDirectJSON(event)
    }

    static func check<Event: TypeTaggedEvent>(_: Event.Type) throws {
        try Event.checkEventTypes(encode: { try OrderedJSONEncoder().encode($0) },
                                  decode: { try JSONDecoder().decode(Event.self, from: Data($0)) })
    }

    @Test func everyExampleTable_PassesTheRegistrationCheck() throws {
        try Self.check(Counter.Event.self)
        try Self.check(Levels.Event.self)
        try Self.check(Feature.Event.self)
        try Self.check(Router.Event.self)
        try Self.check(AuthRouting.GearEvent.self)
        try Self.check(TodoList.Event.self)
        try Self.check(Stats.Event.self)
        try Self.check(TodoGearEvent.self)
    }

    @Test func everyCaseIterableEvent_RoundTrips() throws {
        for event in Counter.Event.allCases { try Self.expectBothPaths(event) }
        for event in Router.Event.allCases { try Self.expectBothPaths(event) }
        for event in AuthRouting.GearEvent.allCases { try Self.expectBothPaths(event) }
    }

    @Test func levelsAndFeatureEvents_RoundTrip() async {
        await propertyCheck(count: 300, input: EventInputs.levels, EventInputs.feature) { levels, feature in
            try Self.expectBothPaths(levels)
            try Self.expectBothPaths(feature)
        }
    }

    @Test func todoServerEvents_RoundTrip() async {
        await propertyCheck(count: 300, input: EventInputs.todo, EventInputs.stats, EventInputs.todoGear) { todo, stats, gear in
            try Self.expectBothPaths(todo)
            try Self.expectBothPaths(stats)
            try Self.expectBothPaths(gear)
        }
    }

    /// An event made in Swift that its schema refuses is never written: it would not
    /// decode back (a journal holding it would stop the next start).
    @Test func anEventItsSchemaRefuses_DoesNotEncode() async {
        await propertyCheck(count: 300, input: Inputs.int, Inputs.int) { left, items in
            let set = Levels.Event.set(left: left, right: 0)
            #expect((try? OrderedJSONEncoder().encode(set)) != nil || !Levels.range.contains(left))
            #expect((try? OrderedJSONEncoder().encode(set)) == nil || Levels.range.contains(left))
            #expect(((try? OrderedJSONEncoder().encode(Feature.Event.loaded(items: items))) != nil) == (items >= 0))
            // The direct path leaves such an event to the Codable one, which says why.
            #expect((Levels.Event.eventTypes.json(encoding: set) != nil) == Levels.range.contains(left))
            #expect((Feature.Event.eventTypes.json(encoding: .loaded(items: items)) != nil) == (items >= 0))
        }
        #expect(TodoList.Event.eventTypes.json(encoding: .add(title: "")) == nil)
        #expect(throws: EncodingError.self) { try OrderedJSONEncoder().encode(TodoList.Event.add(title: "")) }
    }
}

/// `JSONDecoder`, for what the direct path leaves to the Codable one.
struct FoundationFallback: EventJSONFallback {
    func decode<Value: Decodable>(_ type: Value.Type, from json: ArraySlice<UInt8>) throws -> Value {
        try JSONDecoder().decode(type, from: Data(json))
    }
}
