@testable import SpinServer
import SpinWire
import Testing

/// The pure rules of a relay's kept-alive connections to owners: when a connection may
/// be kept for the next request, and what happens when the owner's connection ends
/// before its answer (no request is applied twice).
struct OwnerRelayReuseTests {
    typealias NoAnswer = OwnerRelay.NoAnswer

    static func decide(_ method: HTTPMethod, sent: Bool = true, reused: Bool = true, retried: Bool = false,
                       partial: Bool = false, ownerClosed: Bool = true) -> NoAnswer {
        NoAnswer.decide(method: method, sent: sent, reused: reused, retried: retried, partial: partial,
                        ownerClosed: ownerClosed)
    }

    @Test func aPostThatWasSent_IsNeverSentAgain_ItsOutcomeIsUnknown() {
        #expect(Self.decide(.post) == .outcomeUnknown)
        #expect(Self.decide(.post, reused: false) == .outcomeUnknown)
        #expect(Self.decide(.post, partial: true) == .outcomeUnknown)
        #expect(Self.decide(.post, retried: true) == .outcomeUnknown)
        #expect(Self.decide(.post, ownerClosed: false) == .outcomeUnknown)
    }

    @Test func aRequestNeverSent_OnAKeptAliveConnection_IsSentOnANewOne_Once() {
        #expect(Self.decide(.post, sent: false) == .retry)
        #expect(Self.decide(.get, sent: false) == .retry)
        #expect(Self.decide(.post, sent: false, retried: true) == .unavailable)
        #expect(Self.decide(.post, sent: false, ownerClosed: false) == .retry)
        // A new connection that ended before anything was written: nothing to gain.
        #expect(Self.decide(.post, sent: false, reused: false) == .unavailable)
    }

    @Test func aReadSentOnAKeptAliveConnection_ThatEndedWithoutAnAnswer_IsSentOnceMore() {
        #expect(Self.decide(.get) == .retry)
        #expect(Self.decide(.head) == .retry)
        #expect(Self.decide(.options) == .retry)
        #expect(Self.decide(.get, retried: true) == .unavailable)
        #expect(Self.decide(.get, reused: false) == .unavailable)
        // Part of an answer came: the owner was answering, not closing an idle connection.
        #expect(Self.decide(.get, partial: true) == .unavailable)
        // No answer within the response timeout: the owner is slow, not gone.
        #expect(Self.decide(.get, ownerClosed: false) == .unavailable)
    }

    @Test func otherMethodsSent_AreUnavailable_NeverSentAgain() {
        #expect(Self.decide(.delete) == .unavailable)
        #expect(Self.decide(.put) == .unavailable)
        #expect(Self.decide(.patch) == .unavailable)
    }

    static func head(_ text: String) throws -> OwnerResponseHead {
        let bytes = Array(text.utf8)
        guard case .success(let (head, _)) = try #require(OwnerResponseHead.parse(bytes, limit: 1 << 16)) else {
            Issue.record("not a head: \(text)")
            throw OwnerResponseHead.ParseFailed()
        }
        return head
    }

    @Test func anHTTP11Answer_KeepsTheConnection_UnlessItSaysClose() throws {
        #expect(try Self.head("HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\n").keepsConnection)
        #expect(try Self.head("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\n").keepsConnection)
        #expect(try !Self.head("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n").keepsConnection)
        #expect(try !Self.head("HTTP/1.1 200 OK\r\nconnection: X-Hop, Close\r\nX-Hop: 1\r\n\r\n").keepsConnection)
        #expect(try !Self.head("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").keepsConnection)
    }

    @Test func theHeadParser_SplitsLinesAtCRLF_AndFindsTheBlankLine() throws {
        let bytes = Array("HTTP/1.1 204 No Content\r\nX-A: 1\r\nX-B:  two words \r\n\r\nbody".utf8)
        guard case .success(let (head, length))? = OwnerResponseHead.parse(bytes, limit: 1 << 16) else {
            Issue.record("not parsed")
            return
        }
        #expect(head.status == 204)
        #expect(head.statusLine == "HTTP/1.1 204 No Content")
        #expect(head.fields.map(\.name) == ["X-A", "X-B"])
        #expect(head.fields.map(\.value) == ["1", "two words"])
        #expect(length == bytes.count - 4)
        #expect(OwnerResponseHead.parse(Array("HTTP/1.1 200 OK\r\nX-A: 1\r\n\r".utf8), limit: 1 << 16) == nil)
    }
}

extension OwnerResponseHead {
    struct ParseFailed: Error {}
}
