import Testing
@testable import SpinWire

struct HTTPHeadersTests {
    @Test func lookup_IsCaseInsensitive() {
        let headers: HTTPHeaders = ["Content-Type": "application/json"]
        #expect(headers["content-type"] == "application/json")
        #expect(headers["CONTENT-TYPE"] == "application/json")
        #expect(headers.contains("Content-type"))
        #expect(headers["Content-Length"] == nil)
    }

    @Test func multipleValues_KeepTheirOrder() {
        var headers = HTTPHeaders()
        headers.append(name: "Set-Cookie", value: "a=1")
        headers.append(name: "X", value: "y")
        headers.append(name: "set-cookie", value: "b=2")
        #expect(headers.values(for: "SET-COOKIE") == ["a=1", "b=2"])
        #expect(headers["set-cookie"] == "a=1")
        #expect(headers.count == 3)
    }

    @Test func containsToken_ReadsCommaListsOverAllLines() {
        let headers: HTTPHeaders = ["Connection": "keep-alive, Upgrade", "connection": " TE ,"]
        #expect(headers.containsToken("upgrade", in: "connection"))
        #expect(headers.containsToken("te", in: "Connection"))
        #expect(!headers.containsToken("close", in: "Connection"))
        #expect(!headers.containsToken("keep", in: "Connection"))
    }

    @Test func replaceOrAdd_LeavesOneField() {
        var headers: HTTPHeaders = ["A": "1", "B": "2", "a": "3"]
        headers.replaceOrAdd(name: "a", value: "9")
        #expect(headers.fields == [.init(name: "A", value: "9"), .init(name: "B", value: "2")])
        headers.replaceOrAdd(name: "C", value: "3")
        #expect(headers["c"] == "3")
    }

    @Test func remove_RemovesEveryFieldOfThatName() {
        var headers: HTTPHeaders = ["A": "1", "B": "2", "a": "3"]
        headers.remove(name: "A")
        #expect(headers.map(\.name) == ["B"])
    }
}
