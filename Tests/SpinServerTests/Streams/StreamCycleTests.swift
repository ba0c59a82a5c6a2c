@testable import SpinServer
import SpinWire
import Testing

/// A stream's behaviour as a WebSocket client sees it, each body run twice: against the
/// `StreamMachine` in memory (no socket, no queue) and against a live server on port 0.
// Serialized: the live clients block in recv, on the few threads of the cooperative pool.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct StreamCycleTests {
    private static let counter = "/v1/spins/counter/stream"

    @Test(arguments: HTTPTestTransport.allCases)
    func stateStream_SendsTheSnapshotFirst_ThenTheStateOfAClientEvent_ThenItsAck(transport: HTTPTestTransport) async throws {
        try await withStreamTestClient(transport, path: Self.counter) { client in
            let snapshot = client.readJSON(count: 1).first
            #expect(snapshot?["type"] as? String == "snapshot")
            client.send(#"{"type":"event","id":"c1","event":{"type":"reset"}}"#)
            // Live, the counter's feedback may add states of its own.
            let replies = client.readJSON(until: "ack")
            let ack = replies.last
            #expect(ack?["id"] as? String == "c1")
            // The state message of the acknowledged event came before its ack.
            #expect(replies.contains { $0["type"] as? String == "state" && $0["sequence"] as? Int == ack?["sequence"] as? Int })
        }
    }

    @Test(arguments: HTTPTestTransport.allCases)
    func stateStream_AnswersAMalformedMessageWithAnError_AfterTheSnapshot(transport: HTTPTestTransport) async throws {
        try await withStreamTestClient(transport, path: Self.counter) { client in
            client.send(#"{"type":"event","id":"c2","event":"#)
            let replies = client.readJSON(until: "error")
            #expect(replies.first?["type"] as? String == "snapshot")
            #expect(replies.last?["type"] as? String == "error")
            #expect((replies.last?["error"] as? [String: Any])?["code"] as? String == "malformed_json")
        }
    }

    @Test(arguments: HTTPTestTransport.allCases)
    func stateStream_ClosesWith1003_OnABinaryMessage(transport: HTTPTestTransport) async throws {
        try await withStreamTestClient(transport, path: Self.counter) { client in
            _ = client.read(count: 1)
            client.send(.binary([1, 2, 3]))
            #expect(client.read(count: 10).closeCode == 1003)
        }
    }

    @Test(arguments: HTTPTestTransport.allCases)
    func echo_SendsTextAndBinaryBack(transport: HTTPTestTransport) async throws {
        try await withStreamTestClient(transport, path: "/v1/echo") { client in
            client.send(.text("héllo"))
            client.send(.binary([0, 1, 255]))
            #expect(client.read(count: 2).messages == [.text("héllo"), .binary([0, 1, 255])])
        }
    }

    @Test(arguments: HTTPTestTransport.allCases)
    func unmaskedFrame_IsClosedWith1002(transport: HTTPTestTransport) async throws {
        try await withStreamTestClient(transport, path: "/v1/echo") { client in
            client.sendRaw([0x81, 2] + Array("hi".utf8))   // FIN text, no mask bit
            let outcome = client.read(count: 10)
            #expect(outcome.messages.isEmpty)
            #expect(outcome.closeCode == 1002)
        }
    }

    @Test(arguments: HTTPTestTransport.allCases)
    func invalidUTF8_IsClosedWith1007_AfterTheEchoOfTheMessageBefore(transport: HTTPTestTransport) async throws {
        try await withStreamTestClient(transport, path: "/v1/echo") { client in
            var bytes = WebSocketFrameEncoder.encode(opcode: .text, payload: Array("ok".utf8), maskingKey: 7)
            bytes += WebSocketFrameEncoder.encode(opcode: .text, payload: [0xC3, 0x28], maskingKey: 7)
            client.sendRaw(bytes)   // both frames in one read
            let outcome = client.read(count: 10)
            #expect(outcome.messages == [.text("ok")])
            #expect(outcome.closeCode == 1007)
        }
    }

    @Test(arguments: HTTPTestTransport.allCases)
    func tooLargeMessage_IsClosedWith1009(transport: HTTPTestTransport) async throws {
        try await withStreamTestClient(transport, path: "/v1/echo", { $0.limits.maxWebSocketMessageBytes = 1024 }) { client in
            client.send(.binary([UInt8](repeating: 1, count: 2048)))
            #expect(client.read(count: 10).closeCode == 1009)
        }
    }

    @Test(arguments: HTTPTestTransport.allCases)
    func shutdown_ClosesTheStreamWith1001(transport: HTTPTestTransport) async throws {
        try await withStreamTestClient(transport, path: Self.counter) { client in
            _ = client.read(count: 1)
            client.shutdownServer()
            #expect(client.read(count: 10).closeCode == 1001)
        }
    }
}
