import SpinCore
import Foundation
import SpinExamples

import Testing
@testable import SpinJSON

/// The JSON of the example states and events is a contract (docs/PROTOCOL.md): the server
/// hosts these Spins and clients read and write exactly this.
@Suite struct ExampleJSONTests {
    /// The server's encoder: members in the order the type writes them.
    static func json<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try OrderedJSONEncoder().encode(value), as: UTF8.self)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(json.utf8))
    }

    @Test func states_EncodeToTheContractJSON() throws {
        #expect(try Self.json(Counter.State(value: 3)) == #"{"value":3}"#)
        #expect(try Self.json(Levels.State(left: 10, right: 20)) == #"{"left":10,"right":20}"#)
        #expect(try Self.json(Feature.State(status: .unauthorized, items: 0)) == #"{"status":"unauthorized","items":0}"#)
        #expect(try Self.json(Router.State(route: .checkingAuthorization, authorizationChecks: 2))
                == #"{"route":"checkingAuthorization","authorizationChecks":2}"#)
    }

    @Test func events_EncodeAsTypeTaggedObjects() throws {
        #expect(try Self.json(Counter.Event.reset) == #"{"type":"reset"}"#)
        #expect(try Self.json(Levels.Event.set(left: 1, right: 2)) == #"{"type":"set","left":1,"right":2}"#)
        #expect(try Self.json(Feature.Event.loaded(items: 4)) == #"{"type":"loaded","items":4}"#)
        #expect(try Self.json(Router.Event.checkAuthorization) == #"{"type":"checkAuthorization"}"#)
        #expect(try Self.json(AuthRouting.GearEvent.authorizationIssueHappened) == #"{"type":"authorizationIssueHappened"}"#)
    }

    @Test func everyEvent_RoundTrips() throws {
        let counter: [Counter.Event] = [.increase, .decrease, .reset]
        for event in counter { #expect(try Self.decode(Counter.Event.self, Self.json(event)) == event) }
        let levels: [Levels.Event] = [.increaseLeft, .decreaseLeft, .increaseRight, .decreaseRight, .set(left: -1, right: 7)]
        for event in levels { #expect(try Self.decode(Levels.Event.self, Self.json(event)) == event) }
        let feature: [Feature.Event] = [.load, .loaded(items: 2), .unauthorizedResponse]
        for event in feature { #expect(try Self.decode(Feature.Event.self, Self.json(event)) == event) }
        let router: [Router.Event] = [.checkAuthorization, .authorized, .unauthorized, .login, .logout]
        for event in router { #expect(try Self.decode(Router.Event.self, Self.json(event)) == event) }
    }

    @Test func anUnknownType_IsADecodingErrorAtType_ListingTheTypes() throws {
        do {
            _ = try Self.decode(Counter.Event.self, #"{"type":"jump"}"#)
            Issue.record("decoded an unknown event")
        } catch let DecodingError.dataCorrupted(context) {
            #expect(context.codingPath.map(\.stringValue) == ["type"])
            #expect(context.debugDescription == #"unknown type "jump": expected "type" to be one of "increase", "decrease", "reset""#)
        }
    }

    @Test func aMissingOrWrongField_NamesIt() throws {
        do {
            _ = try Self.decode(Levels.Event.self, #"{"type":"set","left":1}"#)
            Issue.record("decoded an incomplete event")
        } catch let DecodingError.dataCorrupted(context) {
            #expect(context.codingPath.map(\.stringValue) == ["right"])
            #expect(context.debugDescription == #""set" needs field "right" (an integer)"#)
        }
        #expect(throws: DecodingError.self) { try Self.decode(Feature.Event.self, #"{"type":"loaded","items":"many"}"#) }
        #expect(throws: DecodingError.self) { try Self.decode(Feature.Event.self, #"{"type":"loaded","items":-1}"#) }
        #expect(throws: DecodingError.self) { try Self.decode(Levels.Event.self, #"{"type":"set","left":1000000001,"right":0}"#) }
        #expect(throws: DecodingError.self) { try Self.decode(Router.Event.self, #"{"kind":"login"}"#) }
    }
}
