// spin-jwt-benchmark: the cost of one bearer-JWT verification per algorithm, as every
// request carrying a JWT pays it on a network thread: TokenVerifier.verify (size and
// shape checks, header, jwt-kit's signature check, claims) beside jwt-kit's own
// JWTKeyCollection.verify of the same token in the same run (its actor, its claim
// decoding). Keys are made for the run.
//
// Run: swift run -c release spin-jwt-benchmark [seconds-per-measurement, default 0.5]
import Dispatch
import Foundation
import JWTKit
import SpinServer

let seconds = CommandLine.arguments.dropFirst().first.flatMap(Double.init) ?? 0.5

struct Claims: JWTPayload {
    var sub: String
    var exp: Double
    var scope: String
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

func rsaKey() throws -> Insecure.RSA.PrivateKey {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let pem = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return try Insecure.RSA.PrivateKey(pem: String(decoding: pem, as: UTF8.self))
}

/// Runs `body` in rounds for about `seconds`; nanoseconds per call.
func measure(_ body: () -> Bool) -> Double {
    var calls = 0
    let start = DispatchTime.now().uptimeNanoseconds
    let budget = UInt64(seconds * 1e9)
    while DispatchTime.now().uptimeNanoseconds - start < budget {
        for _ in 0..<50 { precondition(body()) }
        calls += 50
    }
    return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(calls)
}

func measureAsync(_ body: () async -> Bool) async -> Double {
    var calls = 0
    let start = DispatchTime.now().uptimeNanoseconds
    let budget = UInt64(seconds * 1e9)
    while DispatchTime.now().uptimeNanoseconds - start < budget {
        for _ in 0..<50 {
            let verified = await body()
            precondition(verified)
        }
        calls += 50
    }
    return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(calls)
}

let directory = NSTemporaryDirectory() + "spin-jwt-benchmark-\(getpid())"
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }
let secret = "benchmark-secret-0123456789abcdef-0123456789"
let rsa = try rsaKey()
let ecdsa = ES256PrivateKey()
let eddsa = try EdDSA.PrivateKey(curve: .ed25519)
let claims = Claims(sub: "alice", exp: Date().timeIntervalSince1970 + 3600, scope: "read write")

print("algorithm  token-bytes  TokenVerifier.verify  jwt-kit JWTKeyCollection.verify  ratio")
for algorithm in JWTConfiguration.Algorithm.allCases {
    let signing = JWTKeyCollection()
    let material: JWTConfiguration.Key.Material
    func pem(_ text: String) throws -> JWTConfiguration.Key.Material {
        let path = "\(directory)/\(algorithm.rawValue).pem"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return .publicKeyFile(path)
    }
    switch algorithm {
    case .hs256:
        await signing.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        material = .secret(secret)
    case .rs256:
        await signing.add(rsa: rsa, digestAlgorithm: .sha256)
        material = try pem(rsa.publicKey.pemRepresentation)
    case .es256:
        await signing.add(ecdsa: ecdsa)
        material = try pem(ecdsa.publicKey.pemRepresentation)
    case .eddsa:
        await signing.add(eddsa: eddsa)
        material = try pem(eddsa.publicKey.pemRepresentation)
    }
    let token = try await signing.sign(claims)
    let verifier = try TokenVerifier(JWTConfiguration(keys: [.init(algorithm: algorithm, material: material)]))
    let ours = measure { (try? verifier.verify(token).get()) != nil }
    let peer = await measureAsync { (try? await signing.verify(token, as: Claims.self)) != nil }
    let name = algorithm.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)
    print(name + String(format: "  %11d  %17.1f µs  %28.1f µs  %5.2f", token.utf8.count, ours / 1000, peer / 1000,
                        ours / peer))
}
