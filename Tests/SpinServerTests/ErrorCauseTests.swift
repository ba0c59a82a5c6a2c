import Foundation
import Logging
@testable import SpinServer
import SpinStorage
import Testing

/// The server's own errors keep what caused them as values (a caller can look at the
/// file system's or the decoder's error), and say what they said before.
@Suite struct ErrorCauseTests {
    @Test func aServerThatCannotListen_KeepsTheSocketError() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let first = LoopServer(configuration: SpinServerConfiguration(port: 0), host: try makeExampleHost(start: false),
                               logger: logger)
        let port = try first.start()
        let second = LoopServer(configuration: SpinServerConfiguration(port: port), host: try makeExampleHost(start: false),
                                logger: logger)
        do {
            _ = try second.start()
            Issue.record("a second server started on port \(port)")
        } catch let error as LoopServerError {
            if case .cannotListen(_, let refused, let underlying) = error {
                #expect(refused == port)
                #expect(error.description.hasSuffix(": \(underlying)"))
                #expect(error.description.hasPrefix("cannot serve on "))
            } else {
                Issue.record("expected cannotListen, got \(error)")
            }
        }
        await first.shutdown()
    }

    @Test func anUnreadableConfigFile_KeepsTheReadError() throws {
        do {
            _ = try SpinServerConfigurationLoadingTests.make("{}", configPath: "elsewhere.json", flags: .init(config: "missing.json"))
            Issue.record("a missing config file loaded")
        } catch {
            let underlying = try #require(error.underlying)
            #expect(underlying is SpinServerConfiguration.FileProblem)
            #expect(error.problem == "\(error.reason): \(underlying)")
            #expect(error.problem.contains("No such file"))
            #expect(error.description == "\(error.source): \(error.key): \(error.problem)")
        }
    }

    @Test func anEventThatDoesNotDecode_StopsRecovery_KeepingTheDecodingError() throws {
        let host = try makeExampleHost(start: false)
        let counter = try #require(host.spin(named: "counter"))
        let record = JournalRecord.Record(sequence: 1, payload: Array(#"{"type":"jump"}"#.utf8), endsBatch: true)
        do {
            _ = try counter.recover(snapshot: nil, records: [record], keep: 1)
            Issue.record("an undecodable event was recovered")
        } catch let error as RecoveryError {
            #expect(error.underlying is DecodingError)
            #expect(error.sequence == 1)
            #expect(error.description.hasPrefix(#"cannot recover Spin "counter": event 1 does not decode: "#))
        }
    }
}
