import Testing
@testable import SpinWire

@Suite struct WebSocketExtensionHeaderTests {
    func describe(_ values: String...) -> [String] {
        WebSocketExtensionHeader.parse(values).map { element -> String in
            var parts = [element.name]
            for parameter in element.parameters {
                if let value = parameter.value {
                    parts.append(parameter.name + "=" + value)
                } else {
                    parts.append(parameter.name)
                }
            }
            return parts.joined(separator: ";")
        }
    }

    @Test func listOfExtensionsWithParameters_IsParsedInOrder() {
        #expect(describe("permessage-deflate; client_max_window_bits, permessage-deflate ;server_max_window_bits = 10")
                == ["permessage-deflate;client_max_window_bits", "permessage-deflate;server_max_window_bits=10"])
    }

    @Test func quotedValues_AreUnquoted_AndCommasInsideQuotesDoNotSplit() {
        #expect(describe("a; p=\"12\"", "b; q=\"x,y\"") == ["a;p=12"])  // "x,y" is not a token: b is skipped
        #expect(describe("c; r=\"\\1\\0\"") == ["c;r=10"])
    }

    @Test func malformedElements_AreSkipped_OthersKept() {
        #expect(describe("; x, good, bad name, also; =1, last") == ["good", "last"])
        #expect(describe(", ,") == [])
        #expect(describe("a; p=\"unterminated") == [])
    }
}
