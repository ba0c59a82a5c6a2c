import Testing
@testable import SpinServer

/// Which `Content-Type` values the API reads as JSON: `application/json` in any ASCII
/// case, with parameters and spaces or tabs around it, and nothing else.
struct MediaTypeTests {
    @Test(arguments: ["application/json", "Application/JSON", "application/json; charset=utf-8",
                      "  application/json\t", "application/json;", "APPLICATION/JSON ;charset=UTF-8"])
    func json(_ value: String) {
        #expect(MediaType.isJSON(value))
    }

    @Test(arguments: ["", "text/plain", "application/jsonx", "application/json5", "application/js",
                      "application/ json", "application json", "application/jsön", "xapplication/json",
                      "application\\json", "; application/json", "application/json\u{0}"])
    func notJSON(_ value: String) {
        #expect(!MediaType.isJSON(value))
    }

    @Test func noContentType_IsNotJSON() {
        #expect(!MediaType.isJSON(nil))
    }
}
