import Foundation
import SpinCore
import SpinStorage
import SpinWire
import SpinJSON

/// Keeps a Spin's suspension across restarts: a document `{"sequence":N,"reason":".."}`
/// in the Spin's store (`<name>.suspended` in a storage directory), written when the Spin
/// is suspended and removed when it is resumed. A Spin whose marker exists is recovered
/// suspended, so a restart does not start a runaway again. (A document of its own rather
/// than a member of the snapshot: a suspended Spin applies no event, so no snapshot would
/// be written to say so.)
struct SuspensionMarker: Sendable {
    let store: any SpinStore

    /// What a stored suspension says, as the reason to suspend the recovered Spin with,
    /// or nil when the Spin was not suspended.
    func read(spin: String) throws -> String? {
        guard let bytes = try store.suspension(of: spin) else { return nil }
        let document = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        let sequence = (document?["sequence"] as? NSNumber).map { " at sequence \($0)" } ?? ""
        let reason = (document?["reason"] as? String).map { ": \($0)" } ?? ""
        return "suspended before the restart\(sequence)\(reason)"
    }

    func write(spin: String, _ suspension: Suspension) throws {
        let document = JSONValue.object([("sequence", .number(String(suspension.sequence))),
                                         ("reason", .string(Self.describe(suspension.reason)))])
        try store.storeSuspension(document.bytes, of: spin)
    }

    func remove(spin: String) {
        store.removeSuspension(of: spin)
    }

    /// A reason in words, for the marker and the log.
    static func describe(_ reason: Suspension.Reason) -> String {
        switch reason {
        case .feedbackBudget(let budget):
            "its feedbacks and Gears produced more than \(budget) events in a row without a client event (limits.feedbackBudget)"
        case .requested(let why): why
        }
    }
}
