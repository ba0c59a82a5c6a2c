import SpinWire
import SpinJSON

/// The routes that put a state of a Spin's history back in place: `POST
/// /v1/spins/{name}/restore` moves the Spin itself back, `POST /v1/spins/{name}/fork` makes
/// a new Spin from it. Both read the state as `?at=N` does (`SpinHistory`, on its readers),
/// then give it to a Spin as a transition of its own (`HostedSpin.replaceState`): journaled
/// with its state, streamed as a snapshot of a new epoch, answered once durable. History
/// only grows: a restore is one more entry, never a cut.
extension APIRouter {
    /// The type of a restore's event, `{"type":"spin.restored","at":N}`.
    static let restoredEventType = "spin.restored"
    /// The type of a fork's first event, `{"type":"spin.forked","from":"<name>","at":N}`.
    static let forkedEventType = "spin.forked"

    /// `POST /v1/spins/{name}/restore` `{"at": N}`: 200 `{"name","sequence","at","state"}`,
    /// `sequence` being the restore's own. 409 `spin_suspended` for a suspended Spin, 503
    /// for an unrecoverable one, 410/404 for an `at` outside its history, 409
    /// `state_not_restorable` for a state of another version of its definition.
    func restoreSpin(_ call: RouteCall) {
        let name = String(call.name)
        guard let spin = host.spin(named: name) else { return call.fail(.spinNotFound(name)) }
        if let problem = spin.unrecoverable { return call.fail(.spinUnrecoverable(spin.name, problem)) }
        let at: UInt64
        switch Self.stateRequest(call.request, naming: false) {
        case .success(let request): at = request.at
        case .failure(let error): return call.fail(error)
        }
        let feed = feeds.feed(name)
        if let refusal = EventAcknowledgement.refusal(of: feed, name, retryAfter: limits.retryAfterSeconds) {
            return followMove(of: name, .error(refusal), call)
        }
        if spin.status == .suspended { return call.fail(.spinSuspended(name)) }
        let history = self.history
        SpinHistory.readers.run {
            do throws(APIError) {
                let state = try Self.restorable(history, spin, feed, at: at)
                let event = JSONValue.object([("type", .string(Self.restoredEventType)), ("at", .number(String(at)))])
                Self.replace(spin, feed, with: state, at: at, event: event, origin: call.caller.subject) { result in
                    call.answer(result.map { sequence in
                        .json(200, .object([("name", .string(name)), ("sequence", .number(String(sequence))),
                                            ("at", .number(String(at))), ("state", state)]))
                    })
                }
            } catch {
                call.fail(error)
            }
        }
    }

    /// `POST /v1/spins/{name}/fork` `{"at": N, "name": "<new>"}`: 201 `{"name","kind",
    /// "sequence","from","at"}`, a Spin made at run time of the same kind, whose history
    /// begins with `{"type":"spin.forked","from":"<name>","at":N}` at sequence 1 in the
    /// state at N. 409 `spin_exists` for a name in use, 409 `state_not_restorable` when
    /// the kind is not made at run time, or the new name is another cluster node's; 403
    /// without admin on the new name too.
    func forkSpin(_ call: RouteCall) {
        let name = String(call.name)
        guard let spin = host.spin(named: name) else { return call.fail(.spinNotFound(name)) }
        if let problem = spin.unrecoverable { return call.fail(.spinUnrecoverable(spin.name, problem)) }
        let at: UInt64, fork: String
        switch Self.stateRequest(call.request, naming: true) {
        case .success(let request): (at, fork) = (request.at, request.name ?? "")
        case .failure(let error): return call.fail(error)
        }
        // Making a Spin needs admin on its name, as PUT does.
        guard call.caller.permissions.allows(.admin, spin: fork) else { return call.fail(.forbiddenOnSpin(.admin, spin: fork)) }
        if let existing = host.spin(named: fork) { return call.fail(.spinExists(fork, kind: existing.kind)) }
        guard let runtimeSpins, let kindEntry = host.factory?.kind(named: spin.kind) else {
            return call.fail(.stateNotRestorable(spin: name, at: at,
                                                 reason: "its kind \"\(spin.kind)\" is not one this server makes at run time (the config's kinds)"))
        }
        guard kindEntry.gears(of: fork) != nil else {
            return call.fail(.stateNotRestorable(spin: name, at: at,
                                                 reason: "\"\(fork)\" is not one of kind \"\(spin.kind)\"'s names (\"\(kindEntry.names?.pattern ?? "")\"): fork to one of them"))
        }
        if case .local = cluster.routing(of: fork, hops: 0) {} else {
            return call.fail(.stateNotRestorable(spin: name, at: at,
                                                 reason: "Spin \"\(fork)\" would be served by another node of the cluster; fork to a name this node serves, or ask the node that serves \"\(fork)\""))
        }
        let feed = feeds.feed(name)
        let (history, host, feeds, kind) = (self.history, self.host, self.feeds, spin.kind)
        SpinHistory.readers.run {
            do throws(APIError) {
                let state = try Self.restorable(history, spin, feed, at: at)
                runtimeSpins.create(fork, kind: kind) { made in
                    switch made {
                    case .failure(let error): return call.fail(error)
                    case .success(let response) where response.status != 201:
                        // Made meanwhile by someone else: not a fork of this one.
                        return call.fail(.spinExists(fork, kind: kind))
                    case .success: break
                    }
                    let event = JSONValue.object([("type", .string(Self.forkedEventType)), ("from", .string(name)),
                                                  ("at", .number(String(at)))])
                    // Woken (a kind made asleep), then given the state; again when it fell
                    // asleep in between (its loop stopped before it took the state).
                    @Sendable func place(attempts: Int) {
                        Self.awake(fork, in: runtimeSpins, host: host) { woke in
                            guard case .success(let forked) = woke else {
                                if case .failure(let error) = woke { call.fail(error) }
                                return
                            }
                            Self.replace(forked, feeds.feed(fork), with: state, at: at, event: event,
                                         origin: call.caller.subject) { result in
                                if case .failure(.spinStopped) = result, attempts > 1 { return place(attempts: attempts - 1) }
                                call.answer(result.map { sequence in
                                    .json(201, .object([("name", .string(fork)), ("kind", .string(kind)),
                                                        ("sequence", .number(String(sequence))), ("from", .string(name)),
                                                        ("at", .number(String(at)))]))
                                })
                            }
                        }
                    }
                    place(attempts: 3)
                }
            } catch {
                call.fail(error)
            }
        }
    }

    /// The state of `spin` at `at`, when it is of the version of the definition the Spin
    /// runs (a state of an older one would need its migration; a later one cannot be).
    private static func restorable(_ history: SpinHistory, _ spin: any HostedSpin, _ feed: SpinFeed,
                                   at: UInt64) throws(APIError) -> JSONValue {
        let (state, version) = try history.versionedState(of: spin, feed: feed, at: at)
        guard version == spin.definitionVersion else {
            throw .stateNotRestorable(spin: spin.name, at: at,
                                      reason: "it is of version \(version) of the Spin's definition, which runs version \(spin.definitionVersion) now")
        }
        return state
    }

    /// Gives `state` to `spin` as transition `event` and calls `done` with its sequence
    /// once durable, or with why not.
    private static func replace(_ spin: any HostedSpin, _ feed: SpinFeed, with state: JSONValue, at: UInt64,
                                event: JSONValue, origin: String?,
                                done: @escaping @Sendable (Result<UInt64, APIError>) -> Void) {
        spin.replaceState(with: state, event: event, origin: origin,
                          replacement: StateReplacement(epoch: Journal.makeEpoch())) { replaced in
            switch replaced {
            case nil:
                // Suspended or stopped (to sleep, to move) since it was asked: nothing changed.
                done(.failure(spin.status == .suspended ? .spinSuspended(spin.name) : .spinStopped(spin.name, applying: false)))
            case .failure(let refusal):
                done(.failure(.stateNotRestorable(spin: spin.name, at: at, reason: refusal.reason)))
            case .success(let sequence):
                feed.whenDurable(sequence) { error in
                    if let error { return done(.failure(APIError(error))) }
                    done(.success(sequence))
                }
            }
        }
    }

    /// Spin `name` with a loop: woken first when it sleeps (a kind made asleep), in a few
    /// attempts (it may fall asleep again in between).
    private static func awake(_ name: String, in runtimeSpins: RuntimeSpins, host: SpinHost, attempts: Int = 3,
                              then: @escaping @Sendable (Result<any HostedSpin, APIError>) -> Void) {
        if let spin = host.spin(named: name), !(spin is SleepingSpin) {
            runtimeSpins.touch(name)
            return then(.success(spin))
        }
        guard attempts > 0 else { return then(.failure(.spinStopped(name, applying: false))) }
        runtimeSpins.wake(name) { woke in
            if case .failure(let error) = woke { return then(.failure(error)) }
            awake(name, in: runtimeSpins, host: host, attempts: attempts - 1, then: then)
        }
    }

    /// The body of a restore (`{"at": N}`) or of a fork (`naming`: `{"at": N, "name":
    /// "<new>"}`), as JSON, and nothing else.
    static func stateRequest(_ request: HTTPRequest, naming: Bool) -> Result<(at: UInt64, name: String?), APIError> {
        let shape = naming ? #"{"at": <a sequence>, "name": "<the new Spin>"}"# : #"{"at": <a sequence>}"#
        let members: [(key: String, value: JSONValue)]
        switch jsonObject(request, shape: shape) {
        case .success(let object): members = object
        case .failure(let error): return .failure(error)
        }
        if let extra = members.first(where: { $0.key != "at" && (!naming || $0.key != "name") }) {
            return .failure(.badRequest("unknown member \"\(extra.key)\": the body is \(shape)"))
        }
        guard let atValue = members.first(where: { $0.key == "at" })?.value else {
            return .failure(.badRequest("the body must name the sequence: \(shape)"))
        }
        // A whole number, written as JSON Schema's integer allows (`30`, `30.0`, `3e1`).
        guard case .number(let text) = atValue,
              let at = UInt64(sequenceText: text) ?? Double(text).flatMap({ $0 >= 0 ? UInt64(exactly: $0) : nil }) else {
            return .failure(.badRequest("\"at\" must be a sequence, a whole number from 0, not \(atValue.text)"))
        }
        guard naming else { return .success((at, nil)) }
        guard case .string(let name)? = members.first(where: { $0.key == "name" })?.value else {
            return .failure(.badRequest("the body must name the new Spin as a string: \(shape)"))
        }
        guard SpinHost.isNameText(name), !name.isEmpty else {
            return .failure(.invalidSpinName(name))
        }
        return .success((at, name))
    }
}
