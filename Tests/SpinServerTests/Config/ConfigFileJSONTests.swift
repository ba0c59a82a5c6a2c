import Testing
@testable import SpinServer

/// The config file read into `JSONValue`: numbers as Foundation read them when it
/// decoded the file (an integer written `80.0` or `8e1` is 80), and a number no `Double`
/// holds refused with the whole file.
@Suite struct ConfigFileJSONTests {
    typealias Loading = SpinServerConfigurationLoadingTests

    @Test(arguments: ["80", "80.0", "8e1", "8.0E+1", "800e-1"])
    func integer_MayBeWrittenWithAFractionOrAnExponent(text: String) throws {
        #expect(try Loading.make(#"{"listen": {"port": \#(text)}}"#).configuration.port == 80)
    }

    @Test(arguments: [("80.5", "80.5"), ("1e-2", "0.01"), ("9223372036854775808", "9.223372036854776e+18")])
    func aNumberThatIsNoInteger_IsNamedAsADouble(text: String, shown: String) {
        let error = Loading.error(#"{"listen": {"port": \#(text)}}"#)
        #expect(error?.key == "listen.port")
        #expect(error?.problem == "must be an integer, got \(shown)")
    }

    @Test func aNumberNoDoubleHolds_RefusesTheFile_WhereverItIs() {
        let error = Loading.error(#"{"listen": {"port": 80}, "testing": {"x": [1e400]}}"#)
        #expect(error?.key == "(file)")
        #expect(error?.problem == "not valid JSON: the number 1e400 at testing.x[0] is beyond the range of a double")
    }

    @Test func keysWithEscapes_AreReadUnescaped() throws {
        #expect(try Loading.make(#"{"li\u0073ten": {"p\u006Frt": 81}}"#).configuration.port == 81)
    }
}
