import SpinTesting
import Testing
@testable import SpinWire

@Suite struct PerMessageDeflateCodecTests {
    func makeDecompressor(noContextTakeover: Bool = false) throws -> PerMessageDeflateDecompressor {
        try #require(PerMessageDeflateDecompressor(windowBits: 15, noContextTakeover: noContextTakeover))
    }

    func makeCompressor(noContextTakeover: Bool = false, windowBits: Int = 15) throws -> PerMessageDeflateCompressor {
        try #require(PerMessageDeflateCompressor(windowBits: windowBits, noContextTakeover: noContextTakeover))
    }

    /// The payload of a fixture's single frame (header of 2 bytes, unmasked).
    func payloads(_ fixture: String) -> [[UInt8]] {
        WebSocketFixture.lines(fixture).map { Array($0.dropFirst(2)) }
    }

    @Test func rfcHello_CompressesTo_f248cdc9c90700() throws {
        let compressor = try makeCompressor()
        #expect(try compressor.compress(Array("Hello".utf8)) == [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00])
    }

    @Test func rfcHello_Inflates() throws {
        let decompressor = try makeDecompressor()
        #expect(try decompressor.decompress(payloads("rfc7692-compressed-hello")[0], maxMessageSize: 100) == Array("Hello".utf8))
    }

    @Test func rfcSharedWindow_SecondHelloIsShorter_AndInflatesWithContext() throws {
        let compressor = try makeCompressor()
        let expected = payloads("rfc7692-shared-window")
        #expect(try compressor.compress(Array("Hello".utf8)) == expected[0])
        #expect(try compressor.compress(Array("Hello".utf8)) == expected[1])
        let decompressor = try makeDecompressor()
        #expect(try decompressor.decompress(expected[0], maxMessageSize: 100) == Array("Hello".utf8))
        #expect(try decompressor.decompress(expected[1], maxMessageSize: 100) == Array("Hello".utf8))
    }

    @Test func withoutContextTakeover_EveryHelloCompressesTheSame() throws {
        let compressor = try makeCompressor(noContextTakeover: true)
        let first = try compressor.compress(Array("Hello".utf8))
        #expect(first == [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00])
        #expect(try compressor.compress(Array("Hello".utf8)) == first)
        // A no-context-takeover decompressor cannot inflate a message that refers back.
        let decompressor = try makeDecompressor(noContextTakeover: true)
        let shared = payloads("rfc7692-shared-window")
        #expect(try decompressor.decompress(shared[0], maxMessageSize: 100) == Array("Hello".utf8))
        #expect(throws: WebSocketError.invalidCompressedData) { try decompressor.decompress(shared[1], maxMessageSize: 100) }
    }

    @Test func rfcNoCompressionBlock_Inflates() throws {
        #expect(try makeDecompressor().decompress(payloads("rfc7692-no-compression-block")[0], maxMessageSize: 100) == Array("Hello".utf8))
    }

    @Test func rfcBfinalBlock_Inflates_AndTheNextMessageStillWorks() throws {
        let decompressor = try makeDecompressor()
        #expect(try decompressor.decompress(payloads("rfc7692-bfinal")[0], maxMessageSize: 100) == Array("Hello".utf8))
        #expect(try decompressor.decompress(payloads("rfc7692-compressed-hello")[0], maxMessageSize: 100) == Array("Hello".utf8))
        // With context takeover the window survives the final block: the shared-window
        // second message ("Hello" by reference) still inflates.
        #expect(try decompressor.decompress(payloads("rfc7692-shared-window")[1], maxMessageSize: 100) == Array("Hello".utf8))
    }

    @Test func rfcTwoDeflateBlocks_Inflate() throws {
        #expect(try makeDecompressor().decompress(payloads("rfc7692-two-blocks")[0], maxMessageSize: 100) == Array("Hello".utf8))
    }

    @Test func emptyMessage_CompressesToOneZeroByte_AndInflatesToEmpty() throws {
        let compressed = try makeCompressor().compress([])
        #expect(compressed == [0x00])
        #expect(try makeDecompressor().decompress([0x00], maxMessageSize: 0) == [])
    }

    @Test(arguments: [8, 9, 12, 15])
    func roundTrip_ManyMessages_AtEachWindowSize(windowBits: Int) throws {
        var rng = SeededGenerator(seed: UInt64(windowBits))
        for noContext in [false, true] {
            let compressor = try makeCompressor(noContextTakeover: noContext, windowBits: windowBits)
            let decompressor = try #require(PerMessageDeflateDecompressor(windowBits: windowBits, noContextTakeover: noContext))
            for round in 0..<40 {
                let length = Int.random(in: 0...(round % 5 == 0 ? 200_000 : 2000), using: &rng)
                let words = ["spin", "state", "event", "gear", "{\"value\":", "}"]
                var message: [UInt8] = []
                while message.count < length { message += Array(words.randomElement(using: &rng)!.utf8) }
                let compressed = try compressor.compress(message)
                #expect(try decompressor.decompress(compressed, maxMessageSize: 1 << 20) == message)
            }
        }
    }

    /// zlib writes into a scratch buffer appended in one copy. Growing the output array
    /// with zeros first was a generic loop per byte in the debug builds tests and CI run:
    /// 4 MiB each way took seconds, and Autobahn's 12.* and 13.* timed out. Now it is
    /// milliseconds; the bound is loose for a loaded machine.
    @Test func fourMebibytes_RoundTripInWellUnderASecond_EvenInADebugBuild() throws {
        let block = (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) & 0x3F }
        var message: [UInt8] = []
        for _ in 0..<1024 { message += block }
        let compressor = try makeCompressor()
        let decompressor = try makeDecompressor()
        let clock = ContinuousClock()
        let started = clock.now
        let compressed = try compressor.compress(message)
        let inflated = try decompressor.decompress(compressed, maxMessageSize: 4 << 20)
        let elapsed = clock.now - started
        #expect(inflated == message)
        #expect(elapsed < .seconds(1), "took \(elapsed)")
    }

    @Test func compressionBomb_10MBOfZeros_StopsAtTheLimit() throws {
        let compressor = try makeCompressor()
        let bomb = try compressor.compress([UInt8](repeating: 0, count: 10_000_000))
        #expect(bomb.count < 20_000)
        let decompressor = try makeDecompressor()
        var output: [UInt8] = []
        #expect(throws: WebSocketError.decompressedMessageTooLarge) {
            try decompressor.decompress(bomb, isFinal: true, into: &output, maxMessageSize: 64 * 1024)
        }
        // Inflation stopped at the limit: never more than limit + 1 bytes were produced.
        #expect(output.count <= 64 * 1024 + 1)
    }

    @Test func messageAtExactlyTheLimit_Inflates() throws {
        let compressor = try makeCompressor()
        let message = [UInt8](repeating: 7, count: 5000)
        let decompressor = try makeDecompressor()
        #expect(try decompressor.decompress(compressor.compress(message), maxMessageSize: 5000) == message)
        #expect(throws: WebSocketError.decompressedMessageTooLarge) {
            try decompressor.decompress(compressor.compress(message), maxMessageSize: 4999)
        }
    }
}
