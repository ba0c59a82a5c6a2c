import Testing
@testable import SpinWire

/// The byte classes are bit masks; check each against its RFC definition for all 256 bytes.
struct HTTPSyntaxTests {
    static let alpha = Set(Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8))
    static let digit = Set(Array("0123456789".utf8))

    @Test func token_IsExactlyTcharOfRFC9110() {
        let tchar = Self.alpha.union(Self.digit).union("!#$%&'*+-.^_`|~".utf8)
        for byte in UInt8.min...UInt8.max {
            #expect(HTTPSyntax.isToken(byte) == tchar.contains(byte), "byte \(byte)")
        }
    }

    @Test func regName_IsUnreservedPctEncodedOrSubDelims() {
        let allowed = Self.alpha.union(Self.digit).union("-._~%!$&'()*+,;=".utf8)
        for byte in UInt8.min...UInt8.max {
            #expect(HTTPSyntax.isRegName(byte) == allowed.contains(byte), "byte \(byte)")
        }
    }

    @Test func fieldValue_IsVCHARObsTextSPAndHTAB() {
        for byte in UInt8.min...UInt8.max {
            let expected = (0x21...0x7E).contains(byte) || byte >= 0x80 || byte == 0x20 || byte == 0x09
            #expect(HTTPSyntax.isFieldValue(byte) == expected, "byte \(byte)")
        }
    }

    @Test func target_IsVisibleASCIIWithoutHash() {
        for byte in UInt8.min...UInt8.max {
            #expect(HTTPSyntax.isTarget(byte) == ((0x21...0x7E).contains(byte) && byte != UInt8(ascii: "#")), "byte \(byte)")
        }
    }

    @Test func listContains_MatchesWholeTrimmedMembersCaseInsensitively() {
        #expect(HTTPSyntax.listContains(["keep-alive, Upgrade"], "upgrade"))
        #expect(HTTPSyntax.listContains(["a", " \tCLOSE\t "], "close"))
        #expect(!HTTPSyntax.listContains(["closed, xclose"], "close"))
        #expect(!HTTPSyntax.listContains(["", ","], "close"))
    }
}
