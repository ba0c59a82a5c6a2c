import Foundation
import SpinJSON

// MARK: - auth.jwt

/// `auth.jwt` of the config file, `SPIN_JWT_SECRET` and `SPIN_JWT_JWKS_FILE`
/// (`JWTConfiguration`). Shapes are checked here, each with its key path; the key files
/// and the JWKS file are read and parsed by `checkJWT`, after every source is applied.
extension SpinServerConfiguration.Builder {
    mutating func apply(jwt value: JSONValue, reader: FileReader) throws(ConfigurationError) {
        let path = "auth.jwt"
        let section = try reader.object(value, at: path,
                                        known: ["keys", "jwksFile", "issuer", "audience", "leewaySeconds"])
        var jwt = JWTConfiguration(source: reader.source)
        if let keys = try reader.optionalArray(section["keys"], at: "\(path).keys") {
            for (index, entry) in keys.enumerated() {
                jwt.keys.append(try key(entry, at: "\(path).keys[\(index)]", index: index, reader: reader))
            }
        }
        if let value = section["jwksFile"], value != .null {
            let file = try Self.path(try reader.string(value, at: "\(path).jwksFile"), source: reader.source,
                                     key: "\(path).jwksFile")
            jwt.jwksFile = SpinServerConfiguration.resolve(file, relativeTo: reader.source)
        }
        if let value = section["issuer"], value != .null {
            let issuer = try reader.string(value, at: "\(path).issuer")
            guard !issuer.isEmpty else { throw reader.error("\(path).issuer", "must be a non-empty string") }
            jwt.issuer = issuer
        }
        if let value = section["audience"], value != .null {
            jwt.audience = try audience(value, at: "\(path).audience", reader: reader)
        }
        if let value = section["leewaySeconds"], value != .null {
            jwt.leewaySeconds = try reader.int(value, at: "\(path).leewaySeconds", in: 0...JWTConfiguration.maximumLeewaySeconds)
        }
        configuration.jwt = jwt
    }

    /// `SPIN_JWT_SECRET` adds an HS256 key; `SPIN_JWT_JWKS_FILE` replaces `jwksFile`; the
    /// `secretEnv` of the file's keys are read.
    mutating func apply(jwtEnvironment environment: [String: String]) throws(ConfigurationError) {
        for (index, variable) in jwtSecretVariables {
            guard var jwt = configuration.jwt else { break }
            let path = jwt.keys[index].path
            guard let secret = environment[variable] else {
                throw ConfigurationError(source: jwt.keys[index].source, key: path,
                                         problem: "the environment variable \(variable) is not set")
            }
            try Self.checkSecret(secret, source: jwt.keys[index].source, key: path, named: variable)
            jwt.keys[index].material = .secret(secret)
            configuration.jwt = jwt
        }
        jwtSecretVariables = []
        if let secret = environment["SPIN_JWT_SECRET"] {
            try Self.checkSecret(secret, source: "SPIN_JWT_SECRET", key: "auth.jwt.keys", named: "SPIN_JWT_SECRET")
            var jwt = configuration.jwt ?? JWTConfiguration()
            jwt.keys.append(JWTConfiguration.Key(algorithm: .hs256, material: .secret(secret),
                                                 source: "SPIN_JWT_SECRET", path: "auth.jwt.keys"))
            configuration.jwt = jwt
        }
        if let file = environment["SPIN_JWT_JWKS_FILE"] {
            var jwt = configuration.jwt ?? JWTConfiguration()
            jwt.jwksFile = try Self.path(file, source: "SPIN_JWT_JWKS_FILE", key: "auth.jwt.jwksFile")
            jwt.source = "SPIN_JWT_JWKS_FILE"
            configuration.jwt = jwt
        }
    }

    /// Keys and the JWKS file are read and parsed now, so that `--check-config` finds a bad
    /// PEM or JWKS (`TokenVerifier` reads them again when the server starts).
    func checkJWT(readFile: (String) throws -> Data) throws(ConfigurationError) {
        guard let jwt = configuration.jwt else { return }
        _ = try JWTKeySet.load(jwt, readFile: readFile)
    }

    private mutating func key(_ value: JSONValue, at path: String, index: Int,
                              reader: FileReader) throws(ConfigurationError) -> JWTConfiguration.Key {
        let entry = try reader.object(value, at: path, known: ["alg", "kid", "secret", "secretEnv", "publicKeyFile"])
        let name = try reader.string(try reader.required(entry["alg"], at: "\(path).alg"), at: "\(path).alg")
        guard let algorithm = JWTConfiguration.Algorithm(rawValue: name) else {
            let hint = name.equalsIgnoringASCIICase("none") ? "unsigned tokens are never accepted; " : ""
            throw reader.error("\(path).alg", "unknown algorithm \"\(name)\" (\(hint)use \(JWTConfiguration.Algorithm.knownList))")
        }
        var kid: String?
        if let value = entry["kid"], value != .null {
            let text = try reader.string(value, at: "\(path).kid")
            guard !text.isEmpty else { throw reader.error("\(path).kid", "must be a non-empty string") }
            kid = text
        }
        let given = ["secret", "secretEnv", "publicKeyFile"].filter { entry[$0] != nil && entry[$0] != .null }
        let wanted = algorithm.isSymmetric ? "secret or secretEnv" : "publicKeyFile (a PEM file)"
        guard given.count == 1, let field = given.first else {
            throw reader.error(path, given.isEmpty ? "an \(name) key needs \(wanted)"
                                                   : "set one of \(given.joined(separator: ", ")), not several")
        }
        guard algorithm.isSymmetric == (field != "publicKeyFile") else {
            throw reader.error("\(path).\(field)", algorithm.isSymmetric
                ? "an HS256 key is a shared secret: set secret or secretEnv, not publicKeyFile"
                : "an \(name) key is a public key: set publicKeyFile to its PEM file (a secret never verifies \(name))")
        }
        let text = try reader.string(entry[field] ?? .null, at: "\(path).\(field)")
        let material: JWTConfiguration.Key.Material
        switch field {
        case "secret":
            try Self.checkSecret(text, source: reader.source, key: "\(path).secret", named: nil)
            material = .secret(text)
        case "secretEnv":
            guard !text.isEmpty else { throw reader.error("\(path).secretEnv", "must name an environment variable") }
            jwtSecretVariables.append((index, text))
            material = .secret("")
        default:
            let file = try Self.path(text, source: reader.source, key: "\(path).publicKeyFile")
            material = .publicKeyFile(SpinServerConfiguration.resolve(file, relativeTo: reader.source))
        }
        return JWTConfiguration.Key(algorithm: algorithm, kid: kid, material: material, source: reader.source,
                                    path: "\(path).\(field)")
    }

    private func audience(_ value: JSONValue, at path: String, reader: FileReader) throws(ConfigurationError) -> [String] {
        let values: [(JSONValue, String)] = if case .array(let items) = value {
            items.enumerated().map { ($1, "\(path)[\($0)]") }
        } else {
            [(value, path)]
        }
        guard !values.isEmpty else { throw reader.error(path, "must name at least one audience") }
        return try values.map { item, itemPath throws(ConfigurationError) in
            let text = try reader.string(item, at: itemPath)
            guard !text.isEmpty else { throw reader.error(itemPath, "must be a non-empty string") }
            return text
        }
    }

    /// At least as long as HS256's output (RFC 7518 §3.2): a shorter secret can be guessed
    /// offline from any one token. The message never shows the secret.
    static func checkSecret(_ secret: String, source: String, key: String, named variable: String?) throws(ConfigurationError) {
        let count = secret.utf8.count
        guard count >= JWTConfiguration.minimumSecretBytes else {
            let what = variable.map { "the secret in \($0)" } ?? "the secret"
            throw ConfigurationError(source: source, key: key,
                                     problem: "\(what) is \(count) bytes; an HS256 secret needs at least \(JWTConfiguration.minimumSecretBytes) (e.g. openssl rand -base64 48)")
        }
    }
}
