/// A value that writes its own compact JSON: byte for byte what `OrderedJSONEncoder` makes
/// of its `Encodable` conformance, without an `Encoder`. For the types a server encodes on
/// every event and every history entry (a machine's state), where the encoder's
/// containers and dynamic casts cost several times the bytes they make.
package protocol JSONWritable: Encodable {
    /// Appends the value's JSON; false (whatever was appended) when it has none (a NaN):
    /// the encoder then says why.
    func writeJSON(into bytes: inout [UInt8]) -> Bool
}

extension OrderedJSONEncoder {
    /// What `encode` makes of a `JSONWritable` value, written by the value itself (the
    /// encoder when the value has no JSON, to say why).
    package func encode<T: JSONWritable>(writing value: T) throws -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128)
        if value.writeJSON(into: &bytes) { return bytes }
        return try encode(value)
    }
}
