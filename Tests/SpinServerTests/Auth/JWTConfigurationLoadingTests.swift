import Foundation
import Testing
@testable import SpinServer

/// `auth.jwt`, `SPIN_JWT_SECRET` and `SPIN_JWT_JWKS_FILE`: what loads, and each mistake
/// as a `ConfigurationError` naming the file, the key path and what is wrong.
@Suite struct JWTConfigurationLoadingTests {
    typealias Keys = JWTTestKeys
    typealias Loading = SpinServerConfigurationLoadingTests

    static let pems = [
        "Config/es.pem": Keys.es256.publicKey.pemRepresentation,
        "Config/rs.pem": Keys.rs256PublicPEM,
        "Config/keys/jwks.json": Keys.jwks([("ec-1", .es256)]),
    ]

    static func error(_ jwt: String, environment: [String: String] = [:]) -> ConfigurationError? {
        Loading.error(#"{"auth": {"jwt": \#(jwt)}}"#, environment: environment, files: pems)
    }

    @Test func keysAndTheJWKSFile_AreResolvedAgainstTheConfigFilesDirectory() throws {
        let loaded = try Loading.make(#"""
            {"auth": {"jwt": {"keys": [{"alg": "HS256", "secret": "\#(Keys.secret)", "kid": "h"},
                                       {"alg": "ES256", "publicKeyFile": "es.pem"}],
                              "jwksFile": "keys/jwks.json", "issuer": "https://id.example",
                              "audience": ["spin", "lab"], "leewaySeconds": 5}}}
            """#, files: Self.pems)
        let jwt = try #require(loaded.configuration.jwt)
        #expect(jwt.keys.map(\.material) == [.secret(Keys.secret), .publicKeyFile("Config/es.pem")])
        #expect(jwt.keys.map(\.kid) == ["h", nil])
        #expect(jwt.jwksFile == "Config/keys/jwks.json")
        #expect(jwt.issuer == "https://id.example")
        #expect(jwt.audience == ["spin", "lab"])
        #expect(jwt.leewaySeconds == 5)
        #expect(loaded.configuration.authenticates)
        #expect(!loaded.configuration.summary.contains(Keys.secret))
    }

    @Test func theEnvironment_AddsAnHS256Secret_AndNamesTheJWKSFile_OverTheFile() throws {
        let loaded = try Loading.make(#"{"auth": {"jwt": {"jwksFile": "keys/jwks.json", "audience": "spin"}}}"#,
                                      environment: ["SPIN_JWT_SECRET": Keys.secret, "SPIN_JWT_JWKS_FILE": "Config/rs.jwks"],
                                      files: Self.pems.merging(["Config/rs.jwks": Keys.jwks([("r", .rs256)])]) { $1 })
        let jwt = try #require(loaded.configuration.jwt)
        #expect(jwt.keys.map(\.material) == [.secret(Keys.secret)])
        #expect(jwt.jwksFile == "Config/rs.jwks")
        #expect(jwt.audience == ["spin"])
        let onlyEnvironment = try Loading.make(environment: ["SPIN_JWT_SECRET": Keys.secret])
        #expect(onlyEnvironment.configuration.jwt?.keys.count == 1)
    }

    @Test func aSecretFromTheEnvironment_IsRead_AndAMissingVariableNamed() throws {
        let loaded = try Loading.make(#"{"auth": {"jwt": {"keys": [{"alg": "HS256", "secretEnv": "MY_SECRET"}]}}}"#,
                                      environment: ["MY_SECRET": Keys.secret])
        #expect(loaded.configuration.jwt?.keys.first?.material == .secret(Keys.secret))
        let error = Self.error(#"{"keys": [{"alg": "HS256", "secretEnv": "MY_SECRET"}]}"#)
        #expect(error == ConfigurationError(source: Loading.file, key: "auth.jwt.keys[0].secretEnv",
                                            problem: "the environment variable MY_SECRET is not set"))
    }

    @Test(arguments: [
        (#"{"keys": [{"alg": "HS384", "secret": "x"}]}"#, "auth.jwt.keys[0].alg", "unknown algorithm \"HS384\""),
        (#"{"keys": [{"alg": "none"}]}"#, "auth.jwt.keys[0].alg", "unsigned tokens are never accepted"),
        (#"{"keys": [{"alg": "HS256", "secret": "short"}]}"#, "auth.jwt.keys[0].secret", "is 5 bytes; an HS256 secret needs at least 32"),
        (#"{"keys": [{"alg": "RS256", "secret": "0123456789abcdef0123456789abcdef"}]}"#, "auth.jwt.keys[0].secret", "is a public key"),
        (#"{"keys": [{"alg": "ES256"}]}"#, "auth.jwt.keys[0]", "needs publicKeyFile"),
        (#"{"keys": [{"alg": "ES256", "publicKeyFile": "missing.pem"}]}"#, "auth.jwt.keys[0].publicKeyFile", "cannot read \"Config/missing.pem\""),
        (#"{"keys": [{"alg": "RS256", "publicKeyFile": "es.pem"}]}"#, "auth.jwt.keys[0].publicKeyFile", "is not an RSA public key"),
        (#"{"keys": [{"alg": "EdDSA", "publicKeyFile": "keys/jwks.json"}]}"#, "auth.jwt.keys[0].publicKeyFile", "not a PEM file"),
        (#"{"jwksFile": "nope.json"}"#, "auth.jwt.jwksFile", "\"Config/nope.json\": cannot read it"),
        (#"{"jwksFile": "es.pem"}"#, "auth.jwt.jwksFile", "not a JWKS"),
        (#"{"issuer": "x"}"#, "auth.jwt", "no key is configured"),
        (#"{"keys": [], "leewaySeconds": 3600}"#, "auth.jwt.leewaySeconds", "must be 0 to 300"),
        (#"{"keys": [], "audience": [""]}"#, "auth.jwt.audience[0]", "must be a non-empty string"),
        (#"{"keys": [], "algorithm": "HS256"}"#, "auth.jwt.algorithm", "unknown key"),
    ])
    func eachMistake_IsAConfigurationError_NamingTheFileAndKey(jwt: String, key: String, problem: String) throws {
        let error = try #require(Self.error(jwt))
        #expect(error.source == Loading.file)
        #expect(error.key == key)
        #expect(error.problem.contains(problem), "\(error.problem)")
    }

    @Test func aShortSecretInTheEnvironment_IsNamedByItsVariable_WithoutShowingIt() throws {
        let error = try #require(Loading.error(environment: ["SPIN_JWT_SECRET": "tooshort"]))
        #expect(error.source == "SPIN_JWT_SECRET")
        #expect(error.problem.contains("8 bytes"))
        #expect(!error.description.contains("tooshort"))
    }

    @Test func jwt_CountsAsAuthentication_ForTheHostCheckAndTheWarnings() throws {
        let configuration = SpinServerConfiguration(
            host: "0.0.0.0", jwt: JWTConfiguration(keys: [.init(algorithm: .hs256, material: .secret(Keys.secret))]))
        #expect(configuration.authenticates)
        #expect(!configuration.exposureWarnings.contains { $0.contains("NO auth tokens") })
        #expect(configuration.summary.contains("JWT (1 key)"))
    }
}
