import Testing
@testable import SpinWire

struct HTTPRequestTargetTests {
    @Test func originForm_SplitsPathAndQuery() {
        let target = HTTPRequestTarget(origin: "/v1/spins/counter?wait=true&x")
        #expect(target.path == "/v1/spins/counter")
        #expect(target.query == "wait=true&x")
        #expect(target.form == .origin)
    }

    @Test func originForm_WithoutQuery_HasNilQuery() {
        #expect(HTTPRequestTarget(origin: "/a").query == nil)
        #expect(HTTPRequestTarget(origin: "/a?").query == "")
    }

    @Test func queryItems_ArePercentAndPlusDecoded() {
        let target = HTTPRequestTarget(origin: "/s?q=a+b%20c&empty=&flag&na%C3%AFve=%E2%9C%93&bad=%zz%4")
        #expect(target.queryItems == [
            .init(name: "q", value: "a b c"),
            .init(name: "empty", value: ""),
            .init(name: "flag", value: nil),
            .init(name: "naïve", value: "✓"),
            .init(name: "bad", value: "%zz%4"),
        ])
        #expect(target.queryValue("q") == "a b c")
        #expect(target.queryValue("missing") == nil)
    }

    @Test func queryItems_KeepRepeatedNamesInOrder() {
        #expect(HTTPRequestTarget(origin: "/?a=1&a=2&&b=3").queryItems.map(\.value) == ["1", "2", "3"])
    }

    @Test func pathSegments_AreDecodedAfterSplitting() {
        #expect(HTTPRequestTarget(origin: "/v1/spins/a%20b%2Fc/events").pathSegments == ["v1", "spins", "a b/c", "events"])
        #expect(HTTPRequestTarget(origin: "/").pathSegments == [])
    }

    @Test func plusInPath_IsNotASpace() {
        #expect(HTTPRequestTarget(origin: "/a+b").pathSegments == ["a+b"])
    }
}
