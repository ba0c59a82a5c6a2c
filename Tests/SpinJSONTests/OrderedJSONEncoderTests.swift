import Foundation
import Testing
@testable import SpinJSON

@Suite struct OrderedJSONEncoderTests {
    struct Inner: Codable { var zeta: Int; var alpha: [Double?] }
    struct Outer: Codable { var status: String; var items: Int; var inner: Inner; var flag: Bool; var note: String? }

    static func text<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try OrderedJSONEncoder().encode(value), as: UTF8.self)
    }

    @Test func members_KeepTheOrderTheTypeWritesThem() throws {
        let value = Outer(status: "ok", items: 2, inner: Inner(zeta: 1, alpha: [1.5, nil, 3]), flag: true, note: nil)
        #expect(try Self.text(value) == #"{"status":"ok","items":2,"inner":{"zeta":1,"alpha":[1.5,null,3]},"flag":true}"#)
    }

    @Test func output_IsValidJSON_ThatFoundationReadsBack() throws {
        let value = Outer(status: "a\"b\\c\n\u{1}é😀<>&", items: -7, inner: Inner(zeta: Int.max, alpha: [0.1, -2e-9]), flag: false, note: "x")
        let bytes = try OrderedJSONEncoder().encode(value)
        let decoded = try JSONDecoder().decode(Outer.self, from: Data(bytes))
        #expect(decoded.status == value.status)
        #expect(decoded.inner.zeta == Int.max)
        #expect(decoded.inner.alpha == [0.1, -2e-9])
        #expect(decoded.note == "x")
    }

    @Test func controlCharactersAndHTMLSpecials_AreEscaped() throws {
        #expect(try Self.text("a\u{0}\t</script>") == #""a\u0000\t\u003c/script\u003e""#)
    }

    @Test func nonFiniteNumbers_AreAnEncodingError() {
        #expect(throws: EncodingError.self) { try OrderedJSONEncoder().encode([Double.nan]) }
        #expect(throws: EncodingError.self) { try OrderedJSONEncoder().encode(Float.infinity) }
    }

    @Test func integralFloatingPoint_IsWrittenWithoutAFraction() throws {
        #expect(try Self.text([1.0, -0.5, 1e21]) == "[1,-0.5,1e+21]")
        #expect(try Self.text(Float(0.1)) == "0.1")
    }

    @Test func enumsWithSingleValueContainers_AndNestedContainers_Encode() throws {
        enum Color: String, Codable { case red }
        struct Wrapper: Encodable {
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: AnyKey.self)
                var nested = container.nestedUnkeyedContainer(forKey: AnyKey("list"))
                try nested.encode(Color.red)
                var object = nested.nestedContainer(keyedBy: AnyKey.self)
                try object.encode(UInt8(7), forKey: AnyKey("b"))
                try container.encode("last", forKey: AnyKey("z"))
            }
        }
        #expect(try Self.text(Wrapper()) == #"{"list":["red",{"b":7}],"z":"last"}"#)
    }
}

extension OrderedJSONEncoderTests {
    @Test func aKeyWrittenAgain_KeepsItsFirstPlace_AndTakesTheLastValue() throws {
        struct Twice: Encodable {
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: AnyKey.self)
                try container.encode(1, forKey: AnyKey("a"))                       // a literal...
                try container.encode("x", forKey: AnyKey("b"))
                try container.encode(Inner(zeta: 2, alpha: []), forKey: AnyKey("a"))  // ...then an object
                var nested = container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("c"))
                try nested.encode(true, forKey: AnyKey("d"))
                try container.encode(2.5, forKey: AnyKey("b"))                     // a literal again
                try container.encode(3, forKey: AnyKey("c"))                       // an object, then a literal
                try container.encodeNil(forKey: AnyKey("e"))
            }
        }
        #expect(try Self.text(Twice()) == #"{"a":{"zeta":2,"alpha":[]},"b":2.5,"c":3,"e":null}"#)
        #expect(try OrderedJSONEncoder().encodeValue(Twice())
                == .object([("a", .object([("zeta", .number("2")), ("alpha", .array([]))])), ("b", .number("2.5")),
                            ("c", .number("3")), ("e", .null)]))
    }

    @Test func everyLiteralType_IsToldByItsType() throws {
        // Each of the types the encoder writes without `encode(to:)`, reached through a
        // generic member (each `any Encodable` is opened to its type), and one that is none.
        struct Mixed: Encodable {
            var values: [any Encodable]
            func encode(to encoder: any Encoder) throws {
                var array = encoder.unkeyedContainer()
                for value in values { try array.encode(value) }
            }
        }
        #expect(try Self.text(Mixed(values: ["s", true, 7, Int64(-8), UInt64(9), 2.5, Int8(3), Float(0.5)]))
                == #"["s",true,7,-8,9,2.5,3,0.5]"#)
        #expect(throws: EncodingError.self) { try OrderedJSONEncoder().encode(Mixed(values: [Double.nan])) }
    }

    @Test func aNonFiniteMember_NamesItsPath() {
        struct Reading: Encodable { var values: [String: [Double]] }
        do {
            _ = try OrderedJSONEncoder().encode(Reading(values: ["t": [1, .infinity]]))
            Issue.record("an infinite member encoded")
        } catch let EncodingError.invalidValue(_, context) {
            #expect(context.codingPath.map(\.stringValue) == ["values", "t", "1"])
        } catch {
            Issue.record("\(error)")
        }
    }
}

struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
