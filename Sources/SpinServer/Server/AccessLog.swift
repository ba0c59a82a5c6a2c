import Logging
import SpinNet
import SpinWire

/// The access log of one connection: one line per answered request, and one per request
/// the parser refused. Numbers are logged as numbers (JSON logs write them unquoted); a
/// line's fields are built only when it is logged (the metadata is an autoclosure).
struct AccessLog {
    let logger: Logger
    /// The client's address (`remote`), from the connection.
    let remote: SocketAddress?

    /// The line of an answered request; `sub` names who sent it (audit: accepted and
    /// refused writes alike) when its credentials name a subject.
    func answered(_ request: HTTPRequest, status: Int, bytes: Int, milliseconds: Double,
                  requestID: String, subject: String?) {
        logger.info("\(request.method.rawValue) \(request.target.path) \(status)",
                    metadata: Self.metadata(request, status: status, bytes: bytes, milliseconds: milliseconds,
                                            remote: remote, requestID: requestID, subject: subject))
    }

    /// The line of a request the parser refused (`status`, its error's `code`) on `connection`.
    func badRequest(connection: UInt64, status: Int, code: String, requestID: String) {
        logger.info("bad request", metadata: ["connection": "\(connection)", "status": .stringConvertible(status),
                                              "code": "\(code)", "request_id": "\(requestID)"])
    }

    /// An answered request's fields.
    static func metadata(_ request: HTTPRequest, status: Int, bytes: Int, milliseconds: Double, remote: SocketAddress?,
                         requestID: String, subject: String?) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "method": "\(request.method.rawValue)",
            "path": "\(request.target.path)",
            "status": .stringConvertible(status),
            "bytes": .stringConvertible(bytes),
            "duration_ms": .stringConvertible((milliseconds * 1000).rounded() / 1000),
            "remote": "\(remote?.description ?? "?")",
            "request_id": "\(requestID)",
        ]
        if let subject { metadata["sub"] = "\(subject)" }
        return metadata
    }
}
