import Foundation

/// Runs a command-line tool; returns its exit status, stdout and stderr. Killed after
/// `timeout` seconds so a hung client fails the test instead of hanging it.
@discardableResult
func run(_ tool: String, _ arguments: [String], input: String? = nil, timeout: Double = 20,
         in directory: URL? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [tool] + arguments
    if let directory { process.currentDirectoryURL = directory }
    let out = Pipe(), err = Pipe(), inPipe = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = inPipe
    try process.run()
    if let input {
        // Then end of file: a tool that reads its input to the end (openssl s_client)
        // must not wait for the timeout.
        inPipe.fileHandleForWriting.write(Data(input.utf8))
        try? inPipe.fileHandleForWriting.close()
    }
    let killer = DispatchWorkItem { if process.isRunning { process.terminate() } }
    DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    killer.cancel()
    if input == nil { try? inPipe.fileHandleForWriting.close() }
    return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
}

/// A throw-away PKI made with the `openssl` CLI: a CA, a leaf for localhost /
/// 127.0.0.1 / ::1 signed by it, and a second unrelated key (for mismatch tests).
/// Made once per test process in a temporary directory.
struct TestCertificates: Sendable {
    let directory: URL
    var ca: String { directory.appendingPathComponent("ca.pem").path }
    var leaf: String { directory.appendingPathComponent("leaf.pem").path }
    var leafKey: String { directory.appendingPathComponent("leaf.key").path }
    var otherKey: String { directory.appendingPathComponent("other.key").path }

    private static let made: Result<TestCertificates, any Error> = Result { try TestCertificates() }

    /// The PKI, made on first use; throws (failing only the TLS tests, not the whole
    /// run) when the `openssl` CLI is missing or fails.
    static var shared: TestCertificates {
        get throws { try made.get() }
    }

    private init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("spinnet-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let ext = """
        subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1
        basicConstraints=CA:FALSE
        keyUsage=digitalSignature,keyEncipherment
        extendedKeyUsage=serverAuth
        """
        try ext.write(to: directory.appendingPathComponent("leaf.ext"), atomically: true, encoding: .utf8)
        let steps: [[String]] = [
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=SpinNet Test CA"],
            ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=localhost"],
            ["x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "leaf.pem", "-days", "2", "-extfile", "leaf.ext"],
            ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", "other.key"],
        ]
        for step in steps {
            let result = try run("openssl", step, in: directory)
            guard result.status == 0 else {
                throw NSError(domain: "openssl", code: Int(result.status), userInfo: [NSLocalizedDescriptionKey: result.stderr])
            }
        }
        try "not a certificate\n".write(to: directory.appendingPathComponent("garbage.pem"), atomically: true, encoding: .utf8)
    }

    var garbage: String { directory.appendingPathComponent("garbage.pem").path }
}
