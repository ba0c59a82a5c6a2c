@testable import SpinServer
import SpinWire
import Testing

/// `APIError`'s cases give the codes, statuses, messages and headers docs/PROTOCOL.md
/// lists: what clients see must not change with how the server spells its errors.
@Suite struct APIErrorTests {
    @Test(arguments: [
        (APIError.malformedJSON("x"), 400, "malformed_json"),
        (.badRequest("x"), 400, "bad_request"),
        (.unauthorized("x"), 401, "unauthorized"),
        (.forbidden("x"), 403, "forbidden"),
        (.forbiddenOnSpin(.write, spin: "counter"), 403, "forbidden"),
        (.forbiddenGear("auth"), 403, "forbidden"),
        (.forbiddenEverywhere(.read, what: "/metrics"), 403, "forbidden"),
        (.originNotAllowed("https://evil.example"), 403, "forbidden"),
        (.spinNotFound("x"), 404, "spin_not_found"),
        (.gearNotFound("x"), 404, "gear_not_found"),
        (.routeNotFound("/x"), 404, "not_found"),
        (.methodNotAllowed("PUT", allowed: ["GET", "HEAD"]), 405, "method_not_allowed"),
        (.requestTimeout(inBody: true), 408, "request_timeout"),
        (.spinSuspended("x"), 409, "spin_suspended"),
        (.historyNotRetained(spin: "x", asked: 3, first: 80), 410, "history_not_retained"),
        (.sequenceNotFound(spin: "x", asked: 9, newest: 5), 404, "sequence_not_found"),
        (.batchTooLarge(count: 2, limit: 1), 413, "batch_too_large"),
        (.unsupportedMediaType(nil), 415, "unsupported_media_type"),
        (.misdirectedRequest(host: "evil.example"), 421, "misdirected_request"),
        (.invalidEvent(spin: "x", "y"), 422, "invalid_event"),
        (.upgradeRequired, 426, "upgrade_required"),
        (.notAcceptable(accept: "application/json"), 406, "not_acceptable"),
        (.badWebSocketHandshake(.unsupportedVersion), 426, "bad_websocket_handshake"),
        (.badWebSocketHandshake(.invalidKey), 400, "bad_websocket_handshake"),
        (.inboxFull(spin: "x", retryAfter: 1), 429, "inbox_full"),
        (.encodingFailed(spin: "x", "y"), 500, "encoding_failed"),
        (.internal("x"), 500, "internal"),
        (.proxyTLSUnsupported(spin: "x"), 502, "proxy_tls_unsupported"),
        (.proxyOutcomeUnknown(spin: "x"), 502, "proxy_outcome_unknown"),
        (.proxyBadResponse(spin: "x", switchedProtocols: true), 502, "proxy_bad_response"),
        (.proxyResponseTooLarge(spin: "x", limit: 1), 502, "proxy_response_too_large"),
        (.unavailable("x"), 503, "unavailable"),
        (.spinStopped("x", applying: true), 503, "unavailable"),
        (.spinUnavailable("x", retryAfter: 2), 503, "spin_unavailable"),
        (.ownerUnavailable(spin: "x"), 503, "spin_unavailable"),
        (.storageUnavailable(spin: "x", "disk full"), 503, "storage_unavailable"),
        (.storageFailing(["x"]), 503, "storage_unavailable"),
        (.notReady(clusterProblem: nil), 503, "not_ready"),
        (.malformedRequest(.bodyTooLarge, limit: 10), 413, "body_too_large"),
        (.malformedRequest(.missingHost), 400, "missing_host"),
    ] as [(APIError, Int, String)])
    func eachCase_HasItsCodesStatus(error: APIError, status: Int, code: String) {
        #expect(error.status == status)
        #expect(error.code == code)
        #expect(APIResponse.error(error).status == status)
    }

    @Test func everyServerCode_IsAClientErrorOrAServerError() {
        for code in APIError.Code.allCases {
            #expect((400...599).contains(code.status), "\(code)")
        }
        #expect(Set(APIError.Code.allCases.map(\.rawValue)).count == APIError.Code.allCases.count)
    }

    @Test func theBody_IsCodeAndMessage_AndHeadersComeFromTheCase() {
        let error = APIError.inboxFull(spin: "counter", retryAfter: 3)
        let response = APIResponse.error(error)
        #expect(response.text == #"{"error":{"code":"inbox_full","message":"the inbox of Spin \"counter\" is full; retry in 3 s"}}"#)
        #expect(response.headers["Retry-After"] == "3")
        #expect(APIError.methodNotAllowed("PUT", allowed: ["GET", "HEAD"]).headers == ["Allow": "GET, HEAD"])
        #expect(APIError.unauthorized("no").headers.first?.name == "WWW-Authenticate")
        #expect(APIError.spinStopped("counter", applying: false).headers == ["Retry-After": "1"])
        #expect(APIError.spinNotFound("counter").headers.isEmpty)
    }

    @Test func messages_NameWhatIsWrong() {
        #expect(APIError.forbiddenOnSpin(.write, spin: "counter").message
            == #"the credentials may not send events to Spin "counter": that needs the write permission on it"#)
        #expect(APIError.forbiddenOnSpin(.admin, spin: "counter").message.contains("may not resume"))
        #expect(APIError.malformedRequest(.bodyTooLarge, limit: 10).message
            == "the request body is larger than the limit of 10 bytes (limits.maxBodyBytes)")
        #expect(APIError.malformedRequest(.headerSectionTooLarge, limit: 20).message.contains("limits.maxHeaderBytes"))
        #expect(APIError.malformedRequest(.missingHost).message == HTTPParserError.missingHost.message)
        #expect(APIError.requestTimeout(inBody: false).message == "the request head took too long")
        #expect(APIError.notReady(clusterProblem: "no store").message == "this cluster node cannot do its part: no store")
        #expect(APIError.unsupportedMediaType("text/plain").message.contains(#""text/plain""#))
        #expect(APIError.unsupportedMediaType(nil).message.contains("a body without Content-Type"))
    }

    @Test func onlyAStoppedSpinsEvents_AreReroutable() {
        #expect(APIError.spinStopped("counter", applying: true).reroutable)
        #expect(!APIError.unavailable("shutting down").reroutable)
        #expect(!APIError.spinUnavailable("counter", retryAfter: 1).reroutable)
    }

    @Test func aCallerCanSwitchOnTheCase_AndReadItsPayload() {
        let error: any Error = APIError.inboxFull(spin: "counter", retryAfter: 2)
        guard case APIError.inboxFull(let spin, let retryAfter)? = error as? APIError else {
            Issue.record("expected inboxFull")
            return
        }
        #expect(spin == "counter" && retryAfter == 2)
    }
}
