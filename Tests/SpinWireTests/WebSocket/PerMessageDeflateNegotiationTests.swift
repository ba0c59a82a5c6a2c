import Testing
@testable import SpinWire

@Suite struct PerMessageDeflateNegotiationTests {
    func negotiate(_ offers: String..., configuration: PerMessageDeflateConfiguration = PerMessageDeflateConfiguration())
        -> String? {
        PerMessageDeflateNegotiation.negotiate(offers: offers, configuration: configuration)?.responseHeaderValue
    }

    @Test func plainOffer_IsAccepted_WithNoParameters() {
        #expect(negotiate("permessage-deflate") == "permessage-deflate")
    }

    @Test func otherExtensionsOnly_AreDeclined() {
        #expect(negotiate("x-webkit-deflate-frame, foo; bar=1") == nil)
    }

    @Test func serverNoContextTakeover_Offered_IsAccepted() {
        #expect(negotiate("permessage-deflate; server_no_context_takeover") == "permessage-deflate; server_no_context_takeover")
    }

    @Test func clientNoContextTakeover_Offered_IsEchoed() {
        #expect(negotiate("permessage-deflate; client_no_context_takeover") == "permessage-deflate; client_no_context_takeover")
    }

    @Test func serverMayAskClientNoContextTakeover_EvenIfNotOffered() {
        var configuration = PerMessageDeflateConfiguration()
        configuration.clientNoContextTakeover = true
        configuration.serverNoContextTakeover = true
        #expect(negotiate("permessage-deflate", configuration: configuration)
                == "permessage-deflate; server_no_context_takeover; client_no_context_takeover")
    }

    @Test func serverMaxWindowBits_IsAcceptedWithTheSameOrSmallerValue() {
        #expect(negotiate("permessage-deflate; server_max_window_bits=10") == "permessage-deflate; server_max_window_bits=10")
        let small = PerMessageDeflateConfiguration(serverMaxWindowBits: 9)
        #expect(negotiate("permessage-deflate; server_max_window_bits=12", configuration: small)
                == "permessage-deflate; server_max_window_bits=9")
        #expect(negotiate("permessage-deflate; server_max_window_bits=\"11\"") == "permessage-deflate; server_max_window_bits=11")
    }

    @Test func clientMaxWindowBits_WithAndWithoutValue() {
        // Offered without a value and no preference: the client keeps its 32 KiB window.
        #expect(negotiate("permessage-deflate; client_max_window_bits") == "permessage-deflate")
        #expect(negotiate("permessage-deflate; client_max_window_bits=9") == "permessage-deflate; client_max_window_bits=9")
        let small = PerMessageDeflateConfiguration(clientMaxWindowBits: 10)
        #expect(negotiate("permessage-deflate; client_max_window_bits", configuration: small)
                == "permessage-deflate; client_max_window_bits=10")
        // Not offered: the server must not send it, whatever it would prefer.
        #expect(negotiate("permessage-deflate", configuration: small) == "permessage-deflate")
    }

    @Test(arguments: [
        "permessage-deflate; server_max_window_bits",         // value required
        "permessage-deflate; server_max_window_bits=7",
        "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; server_max_window_bits=08",      // leading zero
        "permessage-deflate; client_max_window_bits=1x",
        "permessage-deflate; server_no_context_takeover=1",   // takes no value
        "permessage-deflate; client_no_context_takeover; client_no_context_takeover",  // duplicate
        "permessage-deflate; unknown_param",
        "permessage-deflate; server_max_window_bits=\"1 0\"",
    ])
    func invalidOffer_IsDeclined(offer: String) {
        #expect(negotiate(offer) == nil)
    }

    @Test func invalidFirstOffer_FallsBackToTheNextValidOne() {
        #expect(negotiate("permessage-deflate; server_max_window_bits=99, permessage-deflate; client_max_window_bits=12")
                == "permessage-deflate; client_max_window_bits=12")
        #expect(negotiate("permessage-deflate; foo", "permessage-deflate; server_no_context_takeover")
                == "permessage-deflate; server_no_context_takeover")
    }

    @Test func firstValidOffer_Wins() {
        #expect(negotiate("permessage-deflate; server_max_window_bits=10, permessage-deflate")
                == "permessage-deflate; server_max_window_bits=10")
    }

    @Test func windowBits8_IsAgreed_ButCompressesWithWindow9() throws {
        let parameters = try #require(PerMessageDeflateNegotiation.negotiate(
            offers: ["permessage-deflate; server_max_window_bits=8"], configuration: PerMessageDeflateConfiguration()))
        #expect(parameters.serverMaxWindowBits == 8)
        #expect(ZlibDeflateStream(windowBits: 8)?.windowBits == 9)
    }
}
