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

    /// The file's size now.
    package func size() throws(FileError) -> Int {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw FileError(path: path, call: "fstat", errno: errno) }
        return Int(info.st_size)
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
        try fsyncDirectory(directory(of: path))
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

extension DurableFiles {
    /// Removes `path` (no error when it is already gone) and syncs its directory, so the
    /// removal survives a crash.
    package static func remove(_ path: String) throws(FileError) {
        guard unlink(path) == 0 || errno == ENOENT else { throw FileError(path: path, call: "unlink", errno: errno) }
        try fsyncDirectory(directory(of: path))
    }

    /// The bytes of `path` from offset `start` up to `end` (fewer when the file is shorter).
    package static func read(_ path: String, from start: Int, to end: Int) throws(FileError) -> [UInt8] {
        guard end > start else { return [] }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileError(path: path, call: "open", errno: errno) }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: end - start)
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, $0.count - done, off_t(start + done)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileError(path: path, call: "pread", errno: errno)
            }
            if count == 0 { break }
            done += count
        }
        bytes.removeLast(bytes.count - done)
        return bytes
    }

    /// Whether `path` exists.
    package static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// Writes `bytes` to a scratch file in `directory`, syncs it and removes it: does the
    /// storage take writes now? (A full disk or a failing device says no.) 64 KiB: a
    /// disk with less room than that free would fail the next journal writes anyway.
    package static func probe(directory: String, bytes: Int = 64 * 1024) throws(FileError) {
        let path = directory + "/.probe"
        defer { unlink(path) }
        let file = try AppendOnlyFile(path: path)
        try file.truncate(to: 0)
        try file.append([UInt8](repeating: 0x2E, count: bytes))
        try file.sync()
    }

    /// The directory `path` is in.
    package static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Makes the names created, renamed or removed in the directory `path` durable
    /// (`fsync` on the directory): a file's own sync does not make its name survive a
    /// power cut. A file system that cannot sync directories (`EINVAL`) is taken at its word.
    package static func fsyncDirectory(_ path: String) throws(FileError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw FileError(path: path, call: "open", errno: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 || errno == EINVAL else { throw FileError(path: path, call: "fsync", errno: errno) }
    }

    /// Creates the directory `path` and each missing parent (0755), syncing each one
    /// created into its parent (`fsyncDirectory`), so that none vanishes at a power cut
    /// with the files in it. Existing directories are left as they are.
    package static func createDirectories(_ path: String) throws(FileError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            if mkdir(prefix, 0o755) == 0 {
                try fsyncDirectory(directory(of: prefix))
            } else if errno != EEXIST {
                throw FileError(path: prefix, call: "mkdir", errno: errno)
            }
            prefix += "/"
        }
    }
}

/// An exclusive lock on a storage directory (`flock` on `<directory>/.lock`), held until
/// `unlock()` or the process ends (the kernel drops it then, also after a crash).
/// The file holds the owner's process id, for the message a second server gets.
package final class DirectoryLock {
    package let path: String
    private var fd: Int32

    /// Why the lock could not be taken.
    package enum Failure: Error, CustomStringConvertible {
        /// Another process holds it; its pid when the lock file says.
        case held(path: String, pid: String?)
        case file(FileError)

        package var description: String {
            switch self {
            case .held(let path, let pid):
                "another process\(pid.map { " (pid \($0))" } ?? "") holds \(path): one storage directory serves one server"
            case .file(let error): "\(error)"
            }
        }
    }

    package init(directory: String) throws(Failure) {
        path = directory + "/.lock"
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .file(FileError(path: path, call: "open", errno: errno)) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let error = errno
            let owner = (try? DurableFiles.read(path)).map { String(decoding: $0, as: UTF8.self) }
                .flatMap { $0.isEmpty ? nil : $0 }
            close(fd)
            fd = -1
            if error == EWOULDBLOCK { throw .held(path: path, pid: owner) }
            throw .file(FileError(path: path, call: "flock", errno: error))
        }
        let pid = Array(String(getpid()).utf8)
        _ = ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    }

    deinit { unlock() }

    /// Releases the lock. Idempotent.
    package func unlock() {
        guard fd >= 0 else { return }
        _ = flock(fd, LOCK_UN)
        close(fd)
        fd = -1
    }
}
