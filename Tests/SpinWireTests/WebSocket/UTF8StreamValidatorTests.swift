import SpinTesting
import Testing
@testable import SpinWire

@Suite struct UTF8StreamValidatorTests {
    @Test(arguments: [
        [UInt8](), Array("Hello".utf8), Array("κόσμε".utf8), Array("日本語".utf8), Array("𝄞 emoji 🎉".utf8),
        [0x7F], [0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80],
        [0xEF, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],
    ])
    func wellFormedInput_IsValid(bytes: [UInt8]) {
        #expect(UTF8StreamValidator.isValid(bytes))
    }

    @Test(arguments: [
        [UInt8(0xC0), 0x80],            // overlong NUL
        [0xC1, 0xBF],                   // overlong 2-byte
        [0xE0, 0x80, 0x80],             // overlong 3-byte
        [0xE0, 0x9F, 0xBF],             // overlong 3-byte
        [0xF0, 0x80, 0x80, 0x80],       // overlong 4-byte
        [0xF0, 0x8F, 0xBF, 0xBF],       // overlong 4-byte
        [0xED, 0xA0, 0x80],             // U+D800 high surrogate
        [0xED, 0xBF, 0xBF],             // U+DFFF low surrogate
        [0xF4, 0x90, 0x80, 0x80],       // U+110000
        [0xF5, 0x80, 0x80, 0x80],       // beyond Unicode
        [0xFF], [0xFE], [0x80], [0xBF], // never valid / stray continuation
        [0xC2, 0x41],                   // lead byte without its tail
        [0xE1, 0x80, 0x41],
    ])
    func illFormedInput_IsRejected(bytes: [UInt8]) {
        #expect(!UTF8StreamValidator.isValid(bytes))
    }

    @Test func truncatedSequence_IsValidSoFar_ButNotAtABoundary() {
        var validator = UTF8StreamValidator()
        let first = validator.feed([0xF0, 0x9F, 0x8E])
        #expect(first)
        #expect(!validator.isAtBoundary)
        let second = validator.feed([0x89])
        #expect(second)
        #expect(validator.isAtBoundary)
    }

    @Test(arguments: [
        ([UInt8(0x41), 0xED, 0xA0], 3),  // surrogate proven by its second byte
        ([0xF4, 0x90], 2),               // > U+10FFFF proven by its second byte
        ([0xE0, 0x80], 2),               // overlong proven by its second byte
        ([0xC0], 1),                     // overlong proven by the lead byte
        ([0x41, 0x42, 0xF8], 3),
    ])
    func invalidSequence_FailsAtTheByteThatProvesIt(bytes: [UInt8], failingLength: Int) {
        for length in 0..<failingLength {
            var validator = UTF8StreamValidator()
            let ok = validator.feed(Array(bytes.prefix(length)))
            #expect(ok, "prefix \(length) is still possible UTF-8")
        }
        var validator = UTF8StreamValidator()
        let ok = validator.feed(Array(bytes.prefix(failingLength)))
        #expect(!ok)
        #expect(validator.hasFailed)
    }

    @Test func feedingInAnySplit_AgreesWithTheStandardLibrary() {
        var rng = SeededGenerator(seed: 7)
        let alphabet: [UInt8] = [0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xDF,
                                 0xE0, 0xE1, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF]
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...12, using: &rng)
            let bytes = (0..<count).map { _ in alphabet.randomElement(using: &rng)! }
            let expected = String(validating: bytes, as: UTF8.self) != nil
            #expect(UTF8StreamValidator.isValid(bytes) == expected, "\(bytes)")
            let cut = Int.random(in: 0...count, using: &rng)
            var validator = UTF8StreamValidator()
            let ok = validator.feed(Array(bytes[..<cut])) && validator.feed(Array(bytes[cut...]))
            #expect((ok && validator.isAtBoundary) == expected, "\(bytes) cut at \(cut)")
        }
    }

    @Test func longAsciiRunsWithInvalidByteAfterIt_AreRejected() {
        let bytes = [UInt8](repeating: 0x61, count: 37) + [0xC0, 0x80] + [UInt8](repeating: 0x61, count: 20)
        #expect(!UTF8StreamValidator.isValid(bytes))
        #expect(UTF8StreamValidator.isValid([UInt8](repeating: 0x61, count: 37) + Array("é".utf8)))
    }
}
