#if canImport(Glibc)
import Glibc
#endif

/// A file error with the path, the call and `errno`.
package struct FileError: Error, Equatable, CustomStringConvertible {
    package let path: String
    package let call: String
    package let errno: Int32

    package var description: String {
        "\(call) \(path): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// An append-only file with explicit durability: what a journal needs, and nothing more.
/// Not thread-safe: use it from one serial queue.
package final class AppendOnlyFile {
    package let path: String
    private var fd: Int32

    /// Opens (creating it if missing) `path` for appending.
    package init(path: String) throws(FileError) {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileError(path: path, call: "open", errno: errno) }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Appends all of `bytes` (retrying short writes and EINTR).
    package func append(_ bytes: [UInt8]) throws(FileError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw FileError(path: path, call: "write", errno: errno)
            }
            offset += written
        }
    }

    /// Waits until what was appended is on stable storage (`fdatasync`).
    package func sync() throws(FileError) {
        guard fdatasync(fd) == 0 else { throw FileError(path: path, call: "fdatasync", errno: errno) }
    }

    /// Cuts the file to `length` bytes (a torn tail, or everything once a snapshot covers it).
    package func truncate(to length: Int) throws(FileError) {
        guard ftruncate(fd, off_t(length)) == 0 else { throw FileError(path: path, call: "ftruncate", errno: errno) }
    }
}

/// Whole-file operations for snapshots.
package enum DurableFiles {
    /// Writes `bytes` to `path` so that a crash leaves either the old or the new content:
    /// a temporary file is written and synced, renamed over `path`, and the directory is
    /// synced so the rename itself survives.
    package static func replace(_ path: String, with bytes: [UInt8]) throws(FileError) {
        let temporary = path + ".tmp"
        let file = try AppendOnlyFile(path: temporary)
        try file.truncate(to: 0)
        try file.append(bytes)
        try file.sync()
        guard rename(temporary, path) == 0 else { throw FileError(path: path, call: "rename", errno: errno) }
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        let dirFD = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 {
            _ = fsync(dirFD)
            close(dirFD)
        }
    }

    /// The whole content of `path`, or nil when it does not exist.
    package static func read(_ path: String) throws(FileError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw FileError(path: path, call: "open", errno: errno)
        }
        defer { close(fd) }
        var content: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileError(path: path, call: "read", errno: errno)
            }
            if count == 0 { return content }
            content += chunk[0..<count]
        }
    }
}
