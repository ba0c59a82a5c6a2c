/// How bearer JWTs are verified (`auth.jwt` in the config file, `SPIN_JWT_SECRET`,
/// `SPIN_JWT_JWKS_FILE`): the keys, the JWKS file, and the claims every token must hold.
///
/// A plain value: loading checks its shape, `TokenVerifier.init` reads the key files and
/// the JWKS file (and throws a `ConfigurationError` naming the key's source and path when
/// one is wrong). Paths are resolved against the config file's directory when loaded.
public struct JWTConfiguration: Sendable, Equatable {
    /// The signature algorithms a key may have. `none` is not one: an unsigned token is
    /// never accepted.
    public enum Algorithm: String, Sendable, Equatable, CaseIterable {
        /// HMAC with SHA-256: a shared secret of at least 32 bytes.
        case hs256 = "HS256"
        /// RSASSA-PKCS1-v1_5 with SHA-256: an RSA public key of at least 2048 bits.
        case rs256 = "RS256"
        /// ECDSA on P-256 with SHA-256.
        case es256 = "ES256"
        /// Ed25519.
        case eddsa = "EdDSA"

        /// Whether the key is a shared secret (HS256) rather than a public key.
        public var isSymmetric: Bool { self == .hs256 }

        /// `HS256, RS256, ES256, EdDSA`, for messages.
        static var knownList: String { allCases.map(\.rawValue).joined(separator: ", ") }
    }

    /// One configured key: an HS256 secret, or a public key in a PEM file.
    public struct Key: Sendable, Equatable, CustomStringConvertible {
        public enum Material: Sendable, Equatable {
            /// An HS256 secret, given in the file or read from an environment variable
            /// when the configuration was loaded.
            case secret(String)
            /// A PEM file holding a public key (`-----BEGIN PUBLIC KEY-----`).
            case publicKeyFile(String)
        }

        public var algorithm: Algorithm
        /// The `kid` a token names to pick this key; nil: tried for every token of its
        /// algorithm that names no `kid`.
        public var kid: String?
        public var material: Material
        /// Where the key was configured, for errors: the config file or variable.
        public var source: String
        /// The key's path in the config (`auth.jwt.keys[1]`).
        public var path: String

        public init(algorithm: Algorithm, kid: String? = nil, material: Material,
                    source: String = "the configuration", path: String = "auth.jwt.keys") {
            self.algorithm = algorithm
            self.kid = kid
            self.material = material
            self.source = source
            self.path = path
        }

        /// Never the secret: configurations get logged.
        public var description: String {
            let what = switch material {
            case .secret: "secret"
            case .publicKeyFile(let file): "public key \(file)"
            }
            return "\(algorithm.rawValue) \(what)\(kid.map { " (kid \($0))" } ?? "")"
        }
    }

    /// The keys given one by one (`auth.jwt.keys`, `SPIN_JWT_SECRET`).
    public var keys: [Key]
    /// A JSON Web Key Set file (RFC 7517), re-read when it changes on disk or on SIGHUP.
    public var jwksFile: String?
    /// Where this section and `jwksFile` were set (the config file, or `SPIN_JWT_JWKS_FILE`
    /// when it names the file), for errors.
    public var source: String
    /// The `iss` every token must carry; nil: not checked.
    public var issuer: String?
    /// Every token's `aud` must name one of these; empty: not checked.
    public var audience: [String]
    /// Seconds of clock skew allowed on `exp` and `nbf`.
    public var leewaySeconds: Int

    public init(keys: [Key] = [], jwksFile: String? = nil, source: String = "the configuration",
                issuer: String? = nil, audience: [String] = [], leewaySeconds: Int = 30) {
        self.keys = keys
        self.jwksFile = jwksFile
        self.source = source
        self.issuer = issuer
        self.audience = audience
        self.leewaySeconds = leewaySeconds
    }

    /// `2 keys, JWKS keys.json, iss https://id.example`: what is configured, no secret.
    var summary: String {
        var parts = ["\(keys.count) key\(keys.count == 1 ? "" : "s")"]
        if let jwksFile { parts.append("JWKS \(jwksFile)") }
        if let issuer { parts.append("iss \(issuer)") }
        if !audience.isEmpty { parts.append("aud \(audience.joined(separator: " "))") }
        return parts.joined(separator: ", ")
    }

    /// The shortest HS256 secret accepted: as long as the hash's output (RFC 7518 §3.2).
    public static let minimumSecretBytes = 32
    /// The largest `leewaySeconds`: more than a few minutes hides a broken clock.
    public static let maximumLeewaySeconds = 300
}
