import Dispatch
import Foundation
import JWTKit
import SpinCore
import SpinConcurrency

/// The keys a `TokenVerifier` verifies with at one time: each configured key and each
/// usable key of the JWKS file, as the verifier jwt-kit made for its algorithm.
///
/// jwt-kit registers a key per algorithm: an RS256 public key becomes an RS256 verifier
/// and only ever checks RS256 signatures, an HS256 secret only HS256 ones, so neither
/// "alg: none" nor algorithm confusion (an RS256 public key's PEM used as an HS256
/// secret) can verify. Immutable once loaded: a reload makes a new set.
struct JWTKeySet: Sendable {
    struct Entry: Sendable {
        let algorithm: JWTConfiguration.Algorithm
        let kid: String?
        /// jwt-kit's verifier of `algorithm` with this key (`JWTAlgorithm.verify(_:signs:)`).
        let verifier: any JWTAlgorithm
    }

    let entries: [Entry]

    static let empty = JWTKeySet(entries: [])

    /// The keys that may have signed a token of `algorithm` naming `kid`: the key with that
    /// `kid` (and algorithm), or without a `kid` every key of the algorithm.
    func candidates(algorithm name: String, kid: String?) -> Result<[Entry], TokenRefusal> {
        guard let algorithm = JWTConfiguration.Algorithm(rawValue: name) else {
            return .failure(.algorithmNotAllowed(name))
        }
        let ofAlgorithm = entries.filter { $0.algorithm == algorithm }
        guard !ofAlgorithm.isEmpty else { return .failure(.algorithmNotAllowed(name)) }
        guard let kid else { return .success(ofAlgorithm) }
        let named = ofAlgorithm.filter { $0.kid == kid }
        return named.isEmpty ? .failure(.unknownKey(kid)) : .success(named)
    }
}

// MARK: - Loading

extension JWTKeySet {
    /// A key parsed from its PEM, secret or JWK, before jwt-kit made its verifier.
    private enum Parsed: Sendable {
        case hmac(HMACKey)
        case rsa(Insecure.RSA.PublicKey)
        case ecdsa(ES256PublicKey)
        case eddsa(EdDSA.PublicKey)
        case jwk(JWK)
    }

    private struct Pending: Sendable {
        let algorithm: JWTConfiguration.Algorithm
        let kid: String?
        let key: Parsed
        /// Where it was configured, for the error if jwt-kit refuses it.
        let source: String
        let path: String
    }

    /// Reads every key file and the JWKS file and makes their verifiers.
    /// - Throws: the first problem, naming the key's source and path (or the JWKS file and
    ///   the key's index in it): a file that cannot be read, a PEM that does not parse or is
    ///   not a public key of its algorithm, a JWKS without a usable key, no key at all.
    static func load(_ configuration: JWTConfiguration,
                     readFile: (String) throws -> Data) throws(ConfigurationError) -> JWTKeySet {
        var pending: [Pending] = []
        for key in configuration.keys {
            pending.append(try parse(key, readFile: readFile))
        }
        if let file = configuration.jwksFile {
            pending += try parseJWKS(file, source: configuration.source, readFile: readFile)
        }
        guard !pending.isEmpty else {
            throw ConfigurationError(source: configuration.source, key: "auth.jwt",
                                     problem: "no key is configured: set keys, jwksFile, SPIN_JWT_SECRET or SPIN_JWT_JWKS_FILE")
        }
        return JWTKeySet(entries: try makeVerifiers(pending))
    }

    private static func parse(_ key: JWTConfiguration.Key, readFile: (String) throws -> Data) throws(ConfigurationError) -> Pending {
        let parsed: Parsed
        switch key.material {
        case .secret(let secret):
            parsed = .hmac(HMACKey(from: Array(secret.utf8)))
        case .publicKeyFile(let file):
            let text: String
            do {
                text = String(decoding: try readFile(file), as: UTF8.self)
            } catch {
                throw ConfigurationError(source: key.source, key: key.path, problem: "cannot read \"\(file)\"", underlying: error)
            }
            guard text.contains("-----BEGIN PUBLIC KEY-----") else {
                let found = text.contains("PRIVATE KEY-----") ? "a private key (give the public key only)"
                    : text.contains("-----BEGIN ") ? "not a public key" : "not a PEM file (no -----BEGIN line)"
                throw ConfigurationError(source: key.source, key: key.path,
                                         problem: "\"\(file)\" is \(found): expected -----BEGIN PUBLIC KEY----- with an \(key.algorithm.rawValue) key")
            }
            do {
                switch key.algorithm {
                case .hs256: throw ConfigurationError(source: key.source, key: key.path, problem: "HS256 takes a secret")
                case .rs256: parsed = .rsa(try Insecure.RSA.PublicKey(pem: text))
                case .es256: parsed = .ecdsa(try ES256PublicKey(pem: text))
                case .eddsa: parsed = .eddsa(try EdDSA.PublicKey(pem: text))
                }
            } catch {
                throw ConfigurationError(source: key.source, key: key.path,
                                         problem: "\"\(file)\" is not \(key.algorithm.keyDescription)", underlying: error)
            }
        }
        return Pending(algorithm: key.algorithm, kid: key.kid, key: parsed, source: key.source, path: key.path)
    }

    /// The keys of a JWKS file (RFC 7517). A key of an algorithm the server does not
    /// verify (RS384, ES384, an encryption key) is skipped, as an issuer's set often holds
    /// some; a key that claims a supported algorithm but does not parse is an error.
    private static func parseJWKS(_ file: String, source: String,
                                  readFile: (String) throws -> Data) throws(ConfigurationError) -> [Pending] {
        let fail = { (problem: String) in
            ConfigurationError(source: source, key: "auth.jwt.jwksFile", problem: "\"\(file)\": \(problem)")
        }
        let data: Data
        do {
            data = try readFile(file)
        } catch {
            throw fail("cannot read it: \(error)")
        }
        guard let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let keys = root["keys"] as? [Any] else {
            throw fail("not a JWKS: expected a JSON object {\"keys\": [...]}")
        }
        var pending: [Pending] = []
        for (index, value) in keys.enumerated() {
            guard let object = value as? [String: Any],
                  let json = try? JSONSerialization.data(withJSONObject: object) else {
                throw fail("keys[\(index)]: must be an object")
            }
            if let use = object["use"] as? String, use != "sig" { continue }
            guard let algorithm = jwkAlgorithm(object) else { continue }
            var jwk: JWK
            do {
                jwk = try JSONDecoder().decode(JWK.self, from: json)
            } catch {
                throw fail("keys[\(index)]: not a JWK of \(algorithm.rawValue): \(error)")
            }
            let kid = object["kid"] as? String
            // jwt-kit files every JWK under its kid: a key without one gets a stand-in.
            jwk.keyIdentifier = JWKIdentifier(string: kid ?? "key")
            pending.append(Pending(algorithm: algorithm, kid: kid, key: .jwk(jwk), source: source,
                                   path: "auth.jwt.jwksFile (\"\(file)\" keys[\(index)])"))
        }
        guard !pending.isEmpty else {
            throw fail("no usable key (the server verifies \(JWTConfiguration.Algorithm.knownList) signatures: an RSA, P-256 or Ed25519 key for signatures)")
        }
        return pending
    }

    /// The algorithm a JWK is for: its `alg`, or for a key without one, the one its type
    /// and curve allow among ours (RSA: RS256, EC P-256: ES256, OKP Ed25519: EdDSA).
    private static func jwkAlgorithm(_ object: [String: Any]) -> JWTConfiguration.Algorithm? {
        if let alg = object["alg"] as? String {
            return JWTConfiguration.Algorithm(rawValue: alg).flatMap { $0.isSymmetric ? nil : $0 }
        }
        switch (object["kty"] as? String, object["crv"] as? String) {
        case ("RSA", _): return .rs256
        case ("EC", "P-256"): return .es256
        case ("OKP", "Ed25519"): return .eddsa
        default: return nil
        }
    }

    /// jwt-kit makes its verifiers in its actor, `JWTKeyCollection`: one collection per
    /// key (so that `kid` and algorithm selection are ours), asked for the key's verifier.
    /// Loading is synchronous (start-up, SIGHUP, a changed file), so the actor runs on its
    /// own queue and this thread waits for it: never on Swift's cooperative pool, which a
    /// waiting thread could starve.
    private static func makeVerifiers(_ pending: [Pending]) throws(ConfigurationError) -> [Entry] {
        let outcome = Protected<Result<[Entry], ConfigurationError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task(executorPreference: KeyLoadingExecutor.shared) {
            var entries: [Entry] = []
            var failure: ConfigurationError?
            for key in pending {
                do {
                    entries.append(Entry(algorithm: key.algorithm, kid: key.kid, verifier: try await verifier(key)))
                } catch {
                    failure = ConfigurationError(source: key.source, key: key.path,
                                                 problem: "not \(key.algorithm.keyDescription)", underlying: error)
                    break
                }
            }
            let result: Result<[Entry], ConfigurationError> = failure.map { .failure($0) } ?? .success(entries)
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0! }.get()
    }

    private static func verifier(_ key: Pending) async throws -> any JWTAlgorithm {
        let collection = JWTKeyCollection()
        let kid = JWKIdentifier(string: "key")
        switch key.key {
        case .hmac(let secret): await collection.add(hmac: secret, digestAlgorithm: .sha256, kid: kid)
        case .rsa(let publicKey): await collection.add(rsa: publicKey, digestAlgorithm: .sha256, kid: kid)
        case .ecdsa(let publicKey): await collection.add(ecdsa: publicKey, kid: kid)
        case .eddsa(let publicKey): await collection.add(eddsa: publicKey, kid: kid)
        case .jwk(let jwk):
            try await collection.add(jwk: jwk)
            return try await collection.getKey(for: jwk.keyIdentifier, alg: key.algorithm.rawValue)
        }
        return try await collection.getKey(for: kid, alg: key.algorithm.rawValue)
    }
}

extension JWTConfiguration.Algorithm {
    /// What a key of this algorithm is, for messages.
    var keyDescription: String {
        switch self {
        case .hs256: "an HS256 secret"
        case .rs256: "an RSA public key (2048 bits or more) for RS256"
        case .es256: "a P-256 public key for ES256"
        case .eddsa: "an Ed25519 public key for EdDSA"
        }
    }
}

/// Runs the tasks that load keys on one serial queue of their own (with the actors they
/// call, which follow a task's executor preference).
private final class KeyLoadingExecutor: TaskExecutor {
    static let shared = KeyLoadingExecutor()
    private let queue = DispatchQueue(label: "spin.jwt.keys")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
