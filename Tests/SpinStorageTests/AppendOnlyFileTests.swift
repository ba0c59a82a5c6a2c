import Foundation
@testable import SpinStorage
import Testing

/// DurableFiles' directory calls (the file calls are covered through FileSpinStoreTests).
@Suite struct AppendOnlyFileTests {
    @Test func createDirectories_MakesEveryMissingLevel_AndLeavesExistingOnes() throws {
        let base = NSTemporaryDirectory() + "spin-dirs-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: base) }
        try DurableFiles.createDirectories(base + "/a/b/c")
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: base + "/a/b/c", isDirectory: &isDirectory) && isDirectory.boolValue)
        try DurableFiles.createDirectories(base + "/a/b/c")
        try DurableFiles.fsyncDirectory(base + "/a/b")
    }

    @Test func directoryErrors_NameTheCallThePathAndErrno() throws {
        let base = NSTemporaryDirectory() + "spin-dirs-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: base) }
        try DurableFiles.createDirectories(base)
        let file = base + "/file"
        _ = try AppendOnlyFile(path: file)
        #expect(throws: FileError(path: file + "/sub", call: "mkdir", errno: ENOTDIR)) {
            try DurableFiles.createDirectories(file + "/sub/deeper")
        }
        #expect(throws: FileError(path: base + "/missing", call: "open", errno: ENOENT)) {
            try DurableFiles.fsyncDirectory(base + "/missing")
        }
    }
}
