import Foundation
import SpinCore
@testable import SpinServer
import SpinStorage
import Testing

@Suite struct SuspensionMarkerTests {
    @Test func aWrittenSuspension_IsReadBack_UntilRemoved() throws {
        let directory = NSTemporaryDirectory() + "spin-marker-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let markers = SuspensionMarker(store: FileSpinStore(directory: directory))
        #expect(try markers.read(spin: "levels") == nil)
        try markers.write(spin: "levels", Suspension(reason: .feedbackBudget(100_000), sequence: 100_021))
        let content = try String(contentsOfFile: directory + "/levels.suspended", encoding: .utf8)
        #expect(content.hasPrefix(#"{"sequence":100021,"reason":"its feedbacks and Gears produced more than 100000 events"#))
        #expect(try markers.read(spin: "levels")
                == "suspended before the restart at sequence 100021: its feedbacks and Gears produced more than 100000 events in a row without a client event (limits.feedbackBudget)")
        markers.remove(spin: "levels")
        #expect(try markers.read(spin: "levels") == nil)
        markers.remove(spin: "levels")
    }
}
