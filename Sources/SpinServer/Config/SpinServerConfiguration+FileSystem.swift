import Foundation
import SpinStorage

extension SpinServerConfiguration {
    // MARK: - Reading the real file system

    /// `path` as written in `configFile`: relative to the config file's directory (machine
    /// files, JWT key files and the JWKS file), unless absolute.
    static func resolve(_ path: String, relativeTo configFile: String) -> String {
        let directory = configFile.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return path.hasPrefix("/") || directory.isEmpty ? path : "\(directory)/\(path)"
    }

    /// Reads a whole file; the error says why in the words of `strerror`.
    public static func readFileContents(_ path: String) throws -> Data {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileProblem(errno: errno) }
        defer { close(descriptor) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileProblem(errno: errno)
            }
            if count == 0 { return data }
            data.append(contentsOf: buffer[0..<count])
        }
    }

    /// Creates `path` and its parents if missing, each synced into its parent so that it
    /// survives a power cut (`DurableFiles.createDirectories`), then checks that it is a
    /// writable directory.
    public static func createWritableDirectory(_ path: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw FileProblem(message: "it exists and is not a directory") }
        } else {
            do {
                try DurableFiles.createDirectories(path)
            } catch {
                throw FileProblem(message: "\(error)")
            }
        }
        guard access(path, W_OK | X_OK) == 0 else { throw FileProblem(errno: errno) }
    }

    /// Why a file or directory could not be used.
    package struct FileProblem: Error, CustomStringConvertible {
        package let description: String

        init(errno code: Int32) { description = String(cString: strerror(code)) }
        init(message: String) { description = message }
    }
}
