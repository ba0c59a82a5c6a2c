@testable import SpinServer
import Testing

/// The API answers each of the durability layer's errors as it answered before the layer
/// had errors of its own (the same case, so the same status, code, message and headers).
struct DurabilityErrorTests {
    @Test func eachError_IsAnsweredAsTheAPIErrorItStandsFor() {
        let pairs: [(DurabilityError, APIError)] = [
            (.storageFailed(spin: "c", "disk full"), .storageUnavailable(spin: "c", "disk full")),
            (.unencodable(spin: "c", "its state"), .encodingFailed(spin: "c", "its state")),
            (.stateTooLarge(spin: "c", bytes: 9, limit: 8), .stateTooLarge(spin: "c", bytes: 9, limit: 8)),
            (.moved(spin: "c"), .spinUnavailable("c", retryAfter: 1)),
            (.deleted(spin: "c"), .spinDeleted("c")),
            (.asleep(spin: "c"), .spinStopped("c", applying: false)),
        ]
        for (error, expected) in pairs { #expect(APIError(error) == expected) }
    }
}
