import Foundation
import Testing
@testable import SpinServer

/// `storage.backend` and `storage.url` (`--storage-backend`, `--database-url`,
/// `SPIN_STORAGE_BACKEND`, `SPIN_DATABASE_URL`): precedence and the errors that name
/// source and key.
@Suite struct SpinServerConfigurationStorageBackendTests {
    typealias Loading = SpinServerConfigurationLoadingTests
    static let url = "postgresql://spin:secret@db.example:5432/spin"

    @Test func theFileBackend_IsTheDefault_AndPostgresIsChosenByFileVariableOrFlag() throws {
        #expect(try Loading.make().configuration.storage.backend == .file)
        let file = try Loading.make(#"{"storage": {"backend": "postgres", "url": "\#(Self.url)"}}"#).configuration
        #expect(file.storage.backend == .postgres && file.storage.url == Self.url)
        #expect(file.summary.contains("storage postgres host=db.example port=5432 dbname=spin user=spin"))
        #expect(!file.summary.contains("secret"))

        let environment = try Loading.make(
            environment: ["SPIN_STORAGE_BACKEND": "postgres", "SPIN_DATABASE_URL": "host=a dbname=b"]).configuration
        #expect(environment.storage.backend == .postgres && environment.storage.url == "host=a dbname=b")

        let flags = try Loading.make(
            #"{"storage": {"backend": "file"}}"#, flags: .init(storageBackend: "postgres", databaseURL: Self.url),
            environment: ["SPIN_DATABASE_URL": "host=a"]).configuration
        #expect(flags.storage.backend == .postgres && flags.storage.url == Self.url)
    }

    @Test func postgresWithoutAURL_NamesStorageUrl() {
        let error = Loading.error(#"{"storage": {"backend": "postgres"}}"#)
        #expect(error?.source == Loading.file && error?.key == "storage.url")
        #expect(error?.problem.contains("SPIN_DATABASE_URL") == true)
        #expect(Loading.error(flags: .init(storageBackend: "postgres"))?.source == "--storage-backend")
    }

    @Test func anUnknownBackend_ListsTheTwo() {
        let error = Loading.error(#"{"storage": {"backend": "mysql"}}"#)
        #expect(error == ConfigurationError(source: Loading.file, key: "storage.backend",
                                            problem: "unknown backend \"mysql\" (use file or postgres)"))
        #expect(Loading.error(environment: ["SPIN_STORAGE_BACKEND": "sqlite"])?.source == "SPIN_STORAGE_BACKEND")
    }

    @Test func anUnreadableConnectionString_IsAnError_AndAnUnusedOneAWarning() throws {
        let error = Loading.error(environment: ["SPIN_DATABASE_URL": "host=db nonsense"])
        #expect(error?.source == "SPIN_DATABASE_URL" && error?.key == "storage.url")
        #expect(error?.problem.hasPrefix("not a libpq connection string") == true)
        let loaded = try Loading.make(environment: ["SPIN_DATABASE_URL": Self.url])
        #expect(loaded.warnings.contains { $0.hasPrefix("SPIN_DATABASE_URL: storage.url is set but storage.backend is file") })
    }
}
