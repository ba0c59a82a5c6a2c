import Testing
@testable import SpinWire

@Suite struct WebSocketCloseCodeTests {
    @Test(arguments: [UInt16(1000), 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999])
    func codesAllowedOnTheWire_AreValid(code: UInt16) {
        #expect(WebSocketCloseCode(code).isValidOnWire)
    }

    @Test(arguments: [UInt16(0), 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535])
    func reservedOrUndefinedCodes_AreInvalid(code: UInt16) {
        #expect(!WebSocketCloseCode(code).isValidOnWire)
    }
}
