/// The web dashboard served at `GET /` (docs/PROTOCOL.md): one self-contained HTML document,
/// `dashboard.html` in this folder (a resource, not a Swift string: edit it as HTML).
///
/// Everything is inline (CSS and JavaScript; no CDN, no external fonts, no build step) so
/// the page works on an air-gapped host and is served from memory with
/// `Content-Type: text/html; charset=utf-8`. What the page does:
/// - lists the hosted Spins (`GET /v1/spins`) with their sequence and live state, one
///   WebSocket per Spin on `/v1/spins/{name}/stream` (snapshot first, then state
///   messages), reconnecting with capped, jittered exponential back-off and showing the
///   connection status of each stream;
/// - sends events to the selected Spin (`POST /v1/spins/{name}/events`, JSON editor,
///   optional `?wait=true`), shows the answer or the error code and message, and keeps
///   the last events sent per Spin in `localStorage` to click and re-send;
/// - draws each declarative machine Spin (kind `machine`) as an SVG state chart from the
///   `machine` member of `GET /v1/spins/{name}`: a box per state (children inside their
///   parent), arcs labelled with events and `after N ms` timers, a double border for
///   final states, a dot for initial ones; the current state and its ancestors are lit
///   (class `current`) as states arrive on the stream;
/// - logs transitions as they arrive (time, Spin, sequence, event → state; sequence gaps
///   from a conflated stream are marked);
/// - shows Gear traffic (`GET /v1/gears`, then `/v1/gears/{name}/stream`);
/// - marks a Spin suspended by its runaway guard, with a Resume button
///   (`POST /v1/spins/{name}/resume`, admin scope); the list is read again every 3 s
///   and after a 409, since streams carry states and not the status;
/// - works with bearer tokens: the token lives in `sessionStorage` only, goes out as
///   `Authorization: Bearer` on fetches and, because browsers cannot set headers on a
///   WebSocket, as the `access_token` query parameter on stream URLs.
///
/// Invariant: the script never assigns server data to `innerHTML`; all text is set through
/// `textContent` / `createTextNode`, so the page cannot be scripted by a Spin's state.
package enum Dashboard {
    /// The `Content-Type` header value to serve `html` with.
    package static let contentType = "text/html; charset=utf-8"

    /// The dashboard document (UTF-8 text): `dashboard.html` beside this file, shipped in
    /// SpinServer's resource bundle and read once.
    package static let html: String = BundledResource.text("dashboard.html")
}
