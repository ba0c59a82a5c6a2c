import SpinWire

extension APIRouter {
    /// `?delta=json-patch` on a state stream: state messages carry RFC 6902 patches
    /// (`StatePatcher`). Any other value is refused (400), so that a client never takes
    /// whole states for the format it asked for.
    static func wantsDeltas(_ request: HTTPRequest) throws(APIError) -> Bool {
        guard let delta = request.target.queryParameter("delta") else { return false }
        guard delta == "json-patch" else {
            throw .badRequest("delta must be \"json-patch\" (the one delta format offered), not \"\(delta)\"")
        }
        return true
    }
}
