/// TLS settings of a listener: a PEM certificate chain and key, TLS 1.2 at least, and
/// the ALPN protocols offered (`http/1.1` by default: SpinServer speaks HTTP/1.1 only).
package struct TLSConfiguration: Sendable, Hashable {
    /// The oldest TLS version accepted.
    package enum MinimumVersion: Sendable, Hashable {
        /// TLS 1.2, the default: what current browsers and curl still negotiate with
        /// older servers; 1.0/1.1 are deprecated (RFC 8996).
        case tls12
        case tls13
    }

    /// PEM file: the leaf certificate first, then its intermediates.
    package var certificateChainPath: String
    /// PEM file with the unencrypted private key of the leaf.
    package var privateKeyPath: String
    package var minimumVersion: MinimumVersion
    /// ALPN protocols in server preference order (RFC 7301); a client offering none of
    /// them is served without ALPN (no `no_application_protocol` alert), since curl and
    /// browsers then fall back to HTTP/1.1.
    package var alpnProtocols: [String]

    package init(
        certificateChainPath: String,
        privateKeyPath: String,
        minimumVersion: MinimumVersion = .tls12,
        alpnProtocols: [String] = ["http/1.1"]
    ) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
        self.minimumVersion = minimumVersion
        self.alpnProtocols = alpnProtocols
    }
}
