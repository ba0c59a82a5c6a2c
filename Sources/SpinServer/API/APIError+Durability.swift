extension APIError {
    /// What a client is answered when the durability layer does not acknowledge its
    /// events (`DurabilityError`): the one place its errors become HTTP ones.
    package init(_ error: DurabilityError) {
        switch error {
        case .storageFailed(let spin, let detail): self = .storageUnavailable(spin: spin, detail)
        case .unencodable(let spin, let detail): self = .encodingFailed(spin: spin, detail)
        case .stateTooLarge(let spin, let bytes, let limit): self = .stateTooLarge(spin: spin, bytes: bytes, limit: limit)
        case .moved(let spin): self = .spinUnavailable(spin, retryAfter: 1)
        case .deleted(let spin): self = .spinDeleted(spin)
        case .asleep(let spin): self = .spinStopped(spin, applying: false)
        }
    }
}
