import Dispatch
import Foundation
import Logging
import SpinCore
import SpinConcurrency

/// Verifies bearer JWTs (compact JWS) with the configured keys: signature by jwt-kit,
/// then `exp` and `nbf` (with the leeway), `iss` and `aud`.
///
/// Runs on the network threads for every request that presents a JWT, so a verify does
/// no file I/O: the keys are loaded when the verifier is made and on `reload()` (SIGHUP),
/// and the JWKS file's modification time is looked at (one `stat`) at most once per
/// `changeCheckInterval`, by whichever request comes first; a change reloads. The key set
/// is an immutable value behind the package's lock (`Protected`: a verify holds it only to
/// copy the reference), so a reload swaps it without stopping verifies.
package final class TokenVerifier: Sendable {
    /// The longest token accepted, checked before any parsing. A JWT carrying a subject,
    /// scopes and a few dozen Spin globs is under 2 KiB, an RS256 signature 342 bytes; 8 KiB
    /// leaves room for issuers' extra claims while bounding what an unauthenticated client
    /// makes the server base64-decode and parse (a header line may be 16 KiB).
    package static let maximumTokenBytes = 8192

    package let configuration: JWTConfiguration
    private let logger: Logger
    private let readFile: @Sendable (String) throws -> Data
    private let changeCheckNanoseconds: UInt64
    private let state: Protected<State>

    private struct State {
        var keys: JWTKeySet
        /// The JWKS file as last loaded (nil: none, or it could not be read).
        var stamp: FileStamp?
        /// When the JWKS file was last looked at (`DispatchTime` nanoseconds).
        var lastCheck: UInt64
    }

    /// Loads the keys and the JWKS file now.
    /// - Parameters:
    ///   - changeCheckInterval: how often a verify may look whether the JWKS file changed.
    ///   - readFile: reads key files and the JWKS file (tests pass their own).
    /// - Throws: what is wrong with a key or the JWKS file, naming where it is configured.
    package init(_ configuration: JWTConfiguration, logger: Logger = Logger(label: "spin.jwt"),
                 changeCheckInterval: Duration = .seconds(1),
                 readFile: @escaping @Sendable (String) throws -> Data = SpinServerConfiguration.readFileContents)
    throws(ConfigurationError) {
        let stamp = configuration.jwksFile.flatMap(FileStamp.init(path:))
        let keys = try JWTKeySet.load(configuration, readFile: readFile)
        self.configuration = configuration
        self.logger = logger
        self.readFile = readFile
        self.changeCheckNanoseconds = UInt64(changeCheckInterval.components.seconds) * 1_000_000_000
            + UInt64(changeCheckInterval.components.attoseconds / 1_000_000_000)
        self.state = Protected(State(keys: keys, stamp: stamp, lastCheck: DispatchTime.now().uptimeNanoseconds))
    }

    /// A verifier whose keys could not be loaded (a file changed between the configuration
    /// check and the start): it refuses every JWT until a `reload()` succeeds, so a broken
    /// key file never turns authentication off.
    package init(failedToLoad configuration: JWTConfiguration, logger: Logger = Logger(label: "spin.jwt"),
                 readFile: @escaping @Sendable (String) throws -> Data = SpinServerConfiguration.readFileContents) {
        self.configuration = configuration
        self.logger = logger
        self.readFile = readFile
        self.changeCheckNanoseconds = 1_000_000_000
        self.state = Protected(State(keys: .empty, stamp: nil, lastCheck: DispatchTime.now().uptimeNanoseconds))
    }

    /// Whether `token` is shaped as a compact JWS: three dot-separated parts, the first a
    /// base64url JSON object (`eyJ`, `{"`). A static token never is checked as a JWT; a
    /// token of this shape with a broken part is verified, and refused as malformed.
    package static func looksLikeJWT(_ token: some StringProtocol) -> Bool {
        token.utf8.starts(with: "eyJ".utf8) && token.utf8.count(where: { $0 == UInt8(ascii: ".") }) == 2
    }

    /// Verifies signature and registered claims at `now` (leeway applied to exp and nbf).
    package func verify(_ token: String, now: Date = Date()) -> Result<VerifiedToken, TokenRefusal> {
        reloadIfChanged()
        let keys = state.withLock { $0.keys }
        return TokenVerification(configuration: configuration, keys: keys).verify(token, now: now)
    }

    /// Re-reads the JWKS file and key files (SIGHUP, or a change seen on disk). A file that
    /// no longer parses keeps the keys in use.
    /// - Returns: nil when the new keys are in use, else why not (also logged).
    @discardableResult
    package func reload() -> ConfigurationError? {
        let stamp = configuration.jwksFile.flatMap(FileStamp.init(path:))
        do throws(ConfigurationError) {
            let keys = try JWTKeySet.load(configuration, readFile: readFile)
            state.withLock {
                $0.keys = keys
                $0.stamp = stamp
            }
            logger.info("JWT keys loaded: \(keys.entries.count) key\(keys.entries.count == 1 ? "" : "s")",
                        metadata: ["jwks": "\(configuration.jwksFile ?? "none")"])
            return nil
        } catch {
            // Remember the broken file's stamp: it is not read again until it changes.
            state.withLock { $0.stamp = stamp }
            logger.error("JWT keys not reloaded, the previous keys stay in use: \(error)")
            return error
        }
    }

    /// At most once per interval, one caller looks at the JWKS file's stamp and reloads
    /// when it changed; the others go on with the keys in use.
    private func reloadIfChanged() {
        guard let file = configuration.jwksFile else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.withLock { state -> FileStamp?? in
            guard now &- state.lastCheck >= changeCheckNanoseconds else { return nil }
            state.lastCheck = now
            return .some(state.stamp)
        }
        guard let previous = due, FileStamp(path: file) != previous else { return }
        reload()
    }
}

/// What identifies a version of a file: replaced (rename) or rewritten in place, one of
/// these changes.
struct FileStamp: Equatable, Sendable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modifiedSeconds: Int
    let modifiedNanoseconds: Int

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modifiedSeconds = info.st_mtim.tv_sec
        modifiedNanoseconds = info.st_mtim.tv_nsec
    }
}
