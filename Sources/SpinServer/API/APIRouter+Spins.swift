import SpinWire
import SpinJSON

/// The Spin routes: the list, one Spin, its schema, its events, its resumption and its stream.
extension APIRouter {
    /// `GET /v1/spins?prefix=&after=&limit=`: a page of the Spins the caller may read, in
    /// name order, with the name to ask `after` for the next page (`"next"`, null on the
    /// last). A Spin another cluster node runs shows as `remote` with its node: the owner
    /// has the sequence (`GET /v1/spins/{name}` through any node asks it).
    func spinList(_ call: RouteCall) {
        guard let runtimeSpins, runtimeSpins.listsStored else {
            return call.answer(spinList(call.request, for: call.caller.permissions))
        }
        let query: SpinListQuery
        do { query = try SpinListQuery(call.request.target) } catch { return call.fail(error) }
        let permissions = call.caller.permissions
        // Spins made at run time that sleep may be on disk only: the page is read off
        // this thread.
        runtimeSpins.list(prefix: query.prefix, after: query.after, limit: query.limit,
                          include: { permissions.allows(.read, spin: $0) }) { [self] listed in
            call.answer(listed.map { spinList($0.page, more: $0.more) })
        }
    }

    /// `spinList` of the Spins in memory only.
    func spinList(_ request: HTTPRequest, for permissions: Permissions) -> Result<APIResponse, APIError> {
        let query: SpinListQuery
        do { query = try SpinListQuery(request.target) } catch { return .failure(error) }
        let (page, more) = host.spins(prefix: query.prefix, after: query.after, limit: query.limit) {
            permissions.allows(.read, spin: $0)
        }
        return .success(spinList(page.map(RuntimeSpins.Listed.hosted), more: more))
    }

    /// The body of `GET /v1/spins`: `{"spins": [...], "next": name | null}`.
    private func spinList(_ page: [RuntimeSpins.Listed], more: Bool) -> APIResponse {
        let remote = page.compactMap { listed -> String? in
            guard case .hosted(let spin) = listed, !spin.isPrepared else { return nil }
            return spin.name
        }
        let owners = remote.isEmpty ? [:] : cluster.status(hostedSpins: remote).owners
        let list = page.map { listed -> JSONValue in
            switch listed {
            case .stored(let name, let kind, let sequence):
                var fields: [(String, JSONValue)] = [("name", .string(name)), ("sequence", .number(String(sequence))),
                                                     ("status", .string(SpinStatus.asleep.rawValue)), ("kind", .string(kind))]
                if let version = host.factory?.machineTraits(of: kind)?.version {
                    fields.append(("version", .number(String(version))))
                }
                return .object(fields)
            case .hosted(let spin) where !spin.isPrepared:
                return .object([("name", .string(spin.name)),
                                ("status", .string("remote")), ("kind", .string(spin.kind)),
                                ("node", owners[spin.name].map(JSONValue.string) ?? .null)])
            case .hosted(let spin):
                var fields: [(String, JSONValue)] = [("name", .string(spin.name)),
                                                     ("sequence", .number(String(spin.snapshot().sequence))),
                                                     ("status", .string(spin.status.rawValue)),
                                                     ("kind", .string(spin.kind))]
                if let version = definitionVersion(of: spin) { fields.append(("version", .number(String(version)))) }
                return .object(fields)
            }
        }
        let next: JSONValue = more ? page.last.map { .string($0.name) } ?? .null : .null
        return .json(200, .object([("spins", .array(list)), ("next", next)]))
    }

    /// The version of its definition a Spin of a versioned one runs (a machine file, a
    /// Swift kind registered with a version; asleep: its machine kind's); nil otherwise.
    private func definitionVersion(of spin: any HostedSpin) -> Int? {
        spin.storedDefinition != nil ? spin.definitionVersion : host.factory?.machineTraits(of: spin.kind)?.version
    }

    /// `GET /v1/spins/{name}`: the Spin's sequence, status and state; a declarative
    /// machine's definition (the dashboard's chart) and version, and why it is
    /// unrecoverable when it is.
    func spinDetail(_ name: Substring) -> Result<APIResponse, APIError> {
        guard let spin = host.spin(named: String(name)) else { return .failure(.spinNotFound(String(name))) }
        let (sequence, state) = spin.snapshot()
        var fields: [(String, JSONValue)] = [("name", .string(spin.name)),
                                             ("sequence", .number(String(sequence))),
                                             ("status", .string(spin.status.rawValue)),
                                             ("state", state)]
        if let machine = spin.machineDefinition { fields.append(("machine", machine)) }
        if let version = definitionVersion(of: spin) { fields.append(("version", .number(String(version)))) }
        if let problem = spin.unrecoverable { fields.append(("unrecoverable", problem.json)) }
        fields.append(("schema", .string(OpenAPIDocument.schemaPath(of: spin.name))))
        return .success(.json(200, .object(fields)))
    }

    /// `GET /v1/spins/{name}/schema`: the JSON Schemas of the Spin's events and state.
    func spinSchema(_ name: Substring) -> Result<APIResponse, APIError> {
        guard let spin = host.spin(named: String(name)) else { return .failure(.spinNotFound(String(name))) }
        return .success(.json(200, .object([("event", JSONValue(spin.schema.event.json)),
                                            ("state", JSONValue(spin.schema.state.json))])))
    }

    /// `POST /v1/spins/{name}/events`: answered once the events are applied and durable
    /// (`EventAcknowledgement.post`), or where the Spin went when it moved meanwhile.
    func postEvents(_ call: RouteCall) {
        guard let spin = host.spin(named: String(call.name)) else { return call.fail(.spinNotFound(String(call.name))) }
        acknowledgement.post(call.request, to: spin, from: call.caller.subject, trace: call.trace) { [self] response in
            followMove(of: spin.name, response, call)
        }
    }

    /// `POST /v1/spins/{name}/resume` (`EventAcknowledgement.resume`): refused while the
    /// Spin is unrecoverable, or held because its storage fails (it goes on by itself
    /// once the storage works); sent on when it moved meanwhile.
    func resumeSpin(_ call: RouteCall) {
        guard let spin = host.spin(named: String(call.name)) else { return call.fail(.spinNotFound(String(call.name))) }
        if let problem = spin.unrecoverable { return call.fail(.spinUnrecoverable(spin.name, problem)) }
        if let refusal = EventAcknowledgement.refusal(of: feeds.feed(spin.name), spin.name,
                                                      retryAfter: limits.retryAfterSeconds) {
            return followMove(of: spin.name, .error(refusal), call)
        }
        acknowledgement.resume(call.request, spin, from: call.caller.subject) { [self] response in
            followMove(of: spin.name, response, call)
        }
    }

    /// `PUT /v1/spins/{name}` `{"kind": k}`: makes the Spin of kind `k` (201), or says it
    /// exists with that kind (200); 409 `spin_exists` with another kind or for a configured
    /// Spin, 404 `kind_not_found`, 400 for a bad name or body.
    func createSpin(_ call: RouteCall) {
        let name = String(call.name)
        let kind: String
        switch Self.creation(call.request) {
        case .success(let requested): kind = requested
        case .failure(let error): return call.fail(error)
        }
        guard let runtimeSpins else {
            if let spin = host.spin(named: name) { return call.fail(.spinExists(name, kind: spin.kind)) }
            return call.fail(.kindNotFound(kind, known: []))
        }
        runtimeSpins.create(name, kind: kind) { call.answer($0) }
    }

    /// The body of a `PUT`: `{"kind": "<name>"}` and nothing else, as JSON.
    static func creation(_ request: HTTPRequest) -> Result<String, APIError> {
        let members: [(key: String, value: JSONValue)]
        switch jsonObject(request, shape: "{\"kind\": \"<a configured kind>\"}") {
        case .success(let object): members = object
        case .failure(let error): return .failure(error)
        }
        guard let kindValue = members.first(where: { $0.key == "kind" })?.value, case .string(let kind) = kindValue else {
            return .failure(.badRequest("the body must name the kind: {\"kind\": \"<a configured kind>\"}"))
        }
        if let extra = members.first(where: { $0.key != "kind" }) {
            return .failure(.badRequest("unknown member \"\(extra.key)\": the body is {\"kind\": \"<a configured kind>\"}"))
        }
        return .success(kind)
    }

    /// The members of a body that must be one JSON object (`shape`, for the message): 415
    /// for a body not sent as JSON, 400 `malformed_json` for text that is not JSON, 400
    /// `bad_request` for JSON that is not an object.
    static func jsonObject(_ request: HTTPRequest, shape: String) -> Result<[(key: String, value: JSONValue)], APIError> {
        let contentType = request.headers["Content-Type"]
        guard MediaType.isJSON(contentType) else { return .failure(.unsupportedMediaType(contentType)) }
        let bytes = Array(request.body)
        if let problem = JSONValidator.firstProblem(in: bytes) { return .failure(.malformedJSON(problem.located(in: bytes))) }
        guard case .object(let members)? = try? JSONValue(parsing: bytes) else {
            return .failure(.badRequest("the body must be a JSON object \(shape)"))
        }
        return .success(members)
    }

    /// `DELETE /v1/spins/{name}`: removes a Spin made at run time and its history (200);
    /// 409 `spin_exists` for a configured Spin.
    func deleteSpin(_ call: RouteCall) {
        let name = String(call.name)
        guard let runtimeSpins else {
            if host.spin(named: name) != nil { return call.fail(.spinExists(name, kind: nil, deleting: true)) }
            return call.fail(.spinNotFound(name))
        }
        runtimeSpins.delete(name) { call.answer($0) }
    }

    /// A request about one Spin, made ready first: one made at run time that sleeps, in
    /// memory or on disk only (a name some kind's `names` match is looked for in the
    /// store), is woken, transparently (again if it fell asleep in between); with `makes`,
    /// an event or stream for an unknown Spin whose name an `onEvent` kind matches makes
    /// it. Then (or at once) `route` runs. A request counts as activity: a Spin read often
    /// does not fall asleep in between.
    func ready(_ call: RouteCall, makes: Bool = false, attempts: Int = 3, then route: @escaping @Sendable (RouteCall) -> Void) {
        guard let runtimeSpins else { return route(call) }
        let name = String(call.name)
        let hosted = host.spin(named: name)
        if let hosted, !(hosted is SleepingSpin) {
            runtimeSpins.touch(name)
            return route(call)
        }
        guard attempts > 0 else { return route(call) }
        guard hosted != nil || runtimeSpins.mayBeStored(name) else {
            guard makes, runtimeSpins.makesOnEvent(name) else { return route(call) }
            return make(call, attempts: attempts, then: route)
        }
        // Asleep, in memory or only on disk (then looked for in the store).
        runtimeSpins.wake(name) { [self] woke in
            if case .failure(let error) = woke { return call.fail(error) }
            guard host.spin(named: name) != nil else {
                // No Spin of that name: made now (an `onEvent` kind's), or not found.
                guard makes, runtimeSpins.makesOnEvent(name) else { return route(call) }
                return make(call, attempts: attempts, then: route)
            }
            ready(call, attempts: attempts - 1, then: route)
        }
    }

    /// `ready` for an event or stream whose Spin an `onEvent` kind makes.
    private func make(_ call: RouteCall, attempts: Int, then route: @escaping @Sendable (RouteCall) -> Void) {
        guard let runtimeSpins else { return route(call) }
        runtimeSpins.createOnEvent(String(call.name)) { [self] error in
            if let error { return call.fail(error) }
            ready(call, attempts: attempts - 1, then: route)
        }
    }

    /// `GET /v1/spins/{name}/stream`: the Spin's states from `?since` (or `Last-Event-ID`),
    /// whole or as JSON Patches (`?delta=json-patch`).
    func spinStream(_ call: RouteCall) -> RouteOutcome {
        guard let spin = host.spin(named: String(call.name)) else { return .respond(.error(.spinNotFound(String(call.name)))) }
        if let problem = spin.unrecoverable { return .respond(.error(.spinUnrecoverable(spin.name, problem))) }
        let resume: StreamResume?
        let deltas: Bool
        do {
            resume = try StreamResume(call.request)
            deltas = try Self.wantsDeltas(call.request)
        } catch {
            return .respond(.error(error))
        }
        return openStream(call.request, .state(spin, feeds.feed(spin.name), resume: resume, deltas: deltas),
                          identity: call.caller)
    }
}
