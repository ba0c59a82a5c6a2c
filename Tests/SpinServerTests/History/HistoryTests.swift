import Foundation
@testable import SpinServer
import SpinStorage
import SpinWire
import SpinJSON
import Testing

/// A Spin's history without sockets: the query of `GET /v1/spins/{name}/history`, the
/// times journaled with events, the segments the journal keeps of older history and their
/// replay, and the entries' JSON.
@Suite struct HistoryTests {
    static func query(_ text: String) throws(APIError) -> HistoryQuery {
        try HistoryQuery(HTTPRequestTarget(origin: "/v1/spins/a/history?" + text))
    }

    static func text(_ json: JSONValue) -> String { String(decoding: json.bytes, as: UTF8.self) }

    @Test func theQuery_TakesFromLimitAndDelta_AndNamesWhatItRefuses() throws {
        #expect(try Self.query("") == HistoryQuery(from: nil, limit: 100, deltas: false))
        #expect(try Self.query("from=7&limit=1000&delta=json-patch") == HistoryQuery(from: 7, limit: 1000, deltas: true))
        let refused: [(String, String)] = [
            ("limit=1001", "limit must be a whole number from 1 to 1000, not \"1001\""),
            ("limit=0", "limit must be a whole number from 1 to 1000, not \"0\""),
            ("limit=ten", "not \"ten\""),
            ("from=-1", "from must be a sequence, a whole number from 0, not \"-1\""),
            ("from=1e3", "not \"1e3\""),
            ("from=", "not \"\""),
            ("from=99999999999999999999", "not \"99999999999999999999\""),
            ("delta=merge", "delta must be \"json-patch\""),
            ("at=3", "unknown query parameter \"at\""),
        ]
        for (text, message) in refused {
            #expect(throws: APIError.self, "\(text)") { try Self.query(text) }
            do {
                _ = try Self.query(text)
            } catch {
                #expect(error.serverCode == .badRequest && error.message.contains(message), "\(text): \(error.message)")
            }
        }
        #expect(throws: APIError.self) { try HistoryQuery.sequence("+3", named: "at") }
        #expect(try HistoryQuery.sequence("0", named: "at") == 0)
    }

    static func transition(_ sequence: UInt64, time: Int64, origin: String? = nil, endsBatch: Bool = true) -> HostedTransition {
        var transition = HostedTransition(sequence: sequence, event: .raw(Array(#"{"type":"NEXT"}"#.utf8)), state: .null,
                                          endsBatch: endsBatch, origin: origin)
        transition.time = time
        return transition
    }

    @Test func aTime_IsJournaledOnlyWhenItChanges_AndReadBackWithoutADecoder() {
        let records = JournalPayload.records([Self.transition(1, time: 1_764_492_000_123), Self.transition(2, time: 1_764_492_000_123),
                                              Self.transition(3, time: 1_764_492_000_124, origin: "alice"),
                                              Self.transition(4, time: 0)])
        let event = Array(#"{"type":"NEXT"}"#.utf8)
        #expect(records[0].payload == [0x1E] + Array(#"{"t":1764492000123}"#.utf8) + [0x0A] + event)
        // The same millisecond as the record before: nothing added (the bytes of every
        // journal before times were).
        #expect(records[1].payload == event)
        #expect(records[2].payload == [0x1E] + Array(#"{"t":1764492000124,"sub":"alice"}"#.utf8) + [0x0A] + event)
        #expect(records[3].payload == event)
        #expect(JournalPayload.read(records[0].payload).metadata == .init(t: 1_764_492_000_123))
        #expect(JournalPayload.read(records[2].payload).metadata == .init(sub: "alice", t: 1_764_492_000_124))
        #expect(JournalPayload.time(alone: Array(#"{"t":12}"#.utf8)[...]) == 12)
        for other in [#"{"t":}"#, #"{"t":1x}"#, #"{"t":99999999999999999999}"#, #"{"v":2}"#, #"{"t":1,"v":2}"#] {
            #expect(JournalPayload.time(alone: Array(other.utf8)[...]) == nil, "\(other)")
        }
    }

    /// A light's transitions as the Spin made them, with times.
    static func lived(_ spin: any HostedSpin, count: UInt64) throws -> [HostedTransition] {
        let records = (1...count).map { DefinitionVersionsTests.record($0, "NEXT") }
        var transitions = try spin.recover(snapshot: nil, records: records, keep: Int(count)).history
        for index in transitions.indices {
            transitions[index].time = 1_764_492_000_000 + Int64(index / 3)
            // Client batches of four events.
            transitions[index].endsBatch = transitions[index].sequence % 4 == 0
        }
        return transitions
    }

    @Test func segments_EndAtMultiplesOfTheirSize_AndReplayToTheStatesAndTimesTheSpinHad() throws {
        let spin = try DefinitionVersionsTests.spin(DefinitionVersionsTests.v1)
        let lived = try Self.lived(spin, count: 25)
        // From the start (no base: the initial state), then from an unaligned point (a fork).
        let whole = Journal.segments(of: lived, after: 0, base: nil, version: 1, every: 10)
        #expect(whole.map { [$0.first, $0.last] } == [[1, 10], [11, 20], [21, 25]])
        #expect(whole[0].base == nil && whole[1].base != nil)
        #expect(whole.map(\.lastTime) == [lived[9].time, lived[19].time, lived[24].time])
        let tail = Journal.segments(of: Array(lived[6...]), after: 6, base: lived[5], version: 1, every: 10)
        #expect(tail.map { [$0.first, $0.last] } == [[7, 10], [11, 20], [21, 25]])
        for segment in whole + tail {
            let decoded = JournalRecord.decode(segment.records)
            // Whole although client batches go on into the next segment.
            #expect(decoded.damage == nil && decoded.records.count == Int(segment.last - segment.first + 1))
            let replayed = try spin.replay(snapshot: segment.base, records: decoded.records, keeping: segment.first...segment.last)
            let expected = lived[Int(segment.first - 1)...Int(segment.last - 1)]
            #expect(replayed.map { Self.text($0.state) } == expected.map { Self.text($0.state) })
            #expect(replayed.map(\.time) == expected.map(\.time))
            // The state it starts from, asked for alone (`?at=` of the sequence before it).
            let start = try spin.replay(snapshot: segment.base, records: decoded.records, keeping: (segment.first - 1)...(segment.first - 1))
            let before = segment.first == 1 ? #"{"value":"green","context":{"cycles":0}}"# : Self.text(lived[Int(segment.first - 2)].state)
            #expect(start.map { Self.text($0.state) } == [before])
        }
    }

    @Test func entries_CarryTheirTimeSenderAndStateOrAPatchFromTheOneBefore() throws {
        let spin = try DefinitionVersionsTests.spin(DefinitionVersionsTests.v1)
        var lived = try Self.lived(spin, count: 4)
        lived[1].origin = "alice"
        lived[3].time = 0
        let page = HistoryEntries.page(lived, next: 5, deltas: true)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(page.bytes)) as? [String: Any])
        let entries = try #require(object["entries"] as? [[String: Any]])
        #expect(object["next"] as? Int == 5)
        #expect(entries.map { $0["sequence"] as? Int } == [1, 2, 3, 4])
        #expect(entries[0]["at"] as? String == "2025-11-30T08:40:00.000Z" && entries[0]["state"] != nil)
        #expect(entries[1]["sub"] as? String == "alice" && entries[0]["sub"] == nil)
        #expect(entries[3]["at"] is NSNull)
        // Patches from the entry before give back each state.
        func json(_ value: Any?) throws -> JSONValue {
            try JSONValue(parsing: Array(try JSONSerialization.data(withJSONObject: try #require(value), options: [.fragmentsAllowed])))
        }
        var state = try json(entries[0]["state"])
        for (index, entry) in entries.enumerated().dropFirst() {
            if let patch = entry["patch"] {
                state = try JSONPatch(json: try json(patch)).apply(to: state)
            } else {
                state = try json(entry["state"])
            }
            let got = try JSONSerialization.jsonObject(with: Data(state.bytes)) as? NSDictionary
            let expected = try JSONSerialization.jsonObject(with: Data(lived[index].state.bytes)) as? NSDictionary
            #expect(got == expected)
        }
        #expect(Self.text(HistoryEntries.page([], next: nil, deltas: false)) == #"{"entries":[],"next":null}"#)
        #expect(LogFormatting.timestamp(milliseconds: 5) == "1970-01-01T00:00:00.005Z")
        #expect(LogFormatting.timestamp(milliseconds: 951_782_400_042) == "2000-02-29T00:00:00.042Z")
        #expect(LogFormatting.timestamp(milliseconds: -1) == "1969-12-31T23:59:59.999Z")
        #expect(LogFormatting.timestamp(milliseconds: 253_402_300_799_999) == "9999-12-31T23:59:59.999Z")
        // Digit by digit, as `String(format:)` writes it, over years 1 to 9999.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let milliseconds = Int64.random(in: -62_135_596_800_000...253_402_300_799_999, using: &generator)
            var seconds = time_t(milliseconds.quotientAndRemainder(dividingBy: 1000).quotient)
            var remainder = Int(milliseconds.quotientAndRemainder(dividingBy: 1000).remainder)
            if remainder < 0 { remainder += 1000; seconds -= 1 }
            var parts = tm()
            gmtime_r(&seconds, &parts)
            let expected = String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                                  Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), remainder)
            #expect(LogFormatting.timestamp(milliseconds: milliseconds) == expected, "\(milliseconds)")
        }
    }
}
