import Foundation
import JWTKit
@testable import SpinServer

/// Keys made for the run (never committed) and tokens minted with them by jwt-kit's own
/// signing, plus hand-made tokens for what no library would sign (`alg: none`, forgeries).
enum JWTTestKeys {
    static let secret = "0123456789abcdef0123456789abcdef-test-secret"
    static let otherSecret = "another-secret-of-more-than-32-bytes-long!"
    static let es256 = ES256PrivateKey()
    static let eddsa = try! EdDSA.PrivateKey(curve: .ed25519)
    /// jwt-kit cannot generate an RSA key; openssl can.
    static let rs256: Insecure.RSA.PrivateKey = {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try! process.run()
        let pem = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return try! Insecure.RSA.PrivateKey(pem: String(decoding: pem, as: UTF8.self))
    }()

    static var rs256PublicPEM: String { rs256.publicKey.pemRepresentation }

    /// A directory of its own under the temporary directory, with `files` written in it.
    static func directory(_ files: [String: String] = [:]) -> String {
        let path = NSTemporaryDirectory() + "spin-jwt-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        for (name, contents) in files {
            try! Data(contents.utf8).write(to: URL(fileURLWithPath: "\(path)/\(name)"))
        }
        return path
    }

    /// A JWKS of public keys: `(kid, key)` pairs, each key ES256 or EdDSA or RS256.
    static func jwks(_ keys: [(kid: String?, key: JWTConfiguration.Algorithm)]) -> String {
        let entries = keys.map { kid, algorithm -> String in
            let kidField = kid.map { #""kid": "\#($0)", "# } ?? ""
            switch algorithm {
            case .es256:
                let (x, y) = es256.parameters!
                return #"{\#(kidField)"kty": "EC", "crv": "P-256", "x": "\#(x)", "y": "\#(y)", "use": "sig"}"#
            case .eddsa:
                return #"{\#(kidField)"kty": "OKP", "crv": "Ed25519", "x": "\#(base64URL(eddsa.publicKey.rawRepresentation))"}"#
            case .rs256, .hs256:
                let (n, e) = rsaParameters
                return #"{\#(kidField)"kty": "RSA", "alg": "RS256", "n": "\#(n)", "e": "\#(e)"}"#
            }
        }
        return #"{"keys": [\#(entries.joined(separator: ", "))]}"#
    }

    /// The RSA key's modulus and exponent, base64url, read from its DER (SubjectPublicKeyInfo).
    static var rsaParameters: (n: String, e: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["rsa", "-pubin", "-noout", "-modulus"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try! process.run()
        input.fileHandleForWriting.write(Data(rs256PublicPEM.utf8))
        try! input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let hex = text.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "Modulus=", with: "")
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return (base64URL(Data(bytes)), "AQAB")
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A token signed by jwt-kit with `algorithm`'s test key (or `secret` for HS256).
    static func sign(_ claims: [String: Claim], algorithm: JWTConfiguration.Algorithm, kid: String? = nil,
                     secret: String = secret) async throws -> String {
        let keys = JWTKeyCollection()
        switch algorithm {
        case .hs256: await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        case .rs256: await keys.add(rsa: rs256, digestAlgorithm: .sha256)
        case .es256: await keys.add(ecdsa: es256)
        case .eddsa: await keys.add(eddsa: eddsa)
        }
        var header = JWTHeader()
        if let kid { header.kid = kid }
        return try await keys.sign(Payload(claims: claims), header: header)
    }

    /// A token as written: header and payload JSON, base64url-encoded, and `signature`.
    static func handMade(header: String, payload: String, signature: String = "") -> String {
        "\(base64URL(Data(header.utf8))).\(base64URL(Data(payload.utf8))).\(signature)"
    }

    /// Claims of any JSON type.
    enum Claim: Encodable, Sendable {
        case string(String)
        case number(Double)
        case strings([String])
        case object([String: [String]])

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let value): try container.encode(value)
            case .number(let value): try container.encode(value)
            case .strings(let value): try container.encode(value)
            case .object(let value): try container.encode(value)
            }
        }
    }

    struct Payload: JWTPayload {
        let claims: [String: Claim]

        func encode(to encoder: any Encoder) throws { try claims.encode(to: encoder) }
        init(claims: [String: Claim]) { self.claims = claims }
        init(from decoder: any Decoder) throws { claims = [:] }
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}
