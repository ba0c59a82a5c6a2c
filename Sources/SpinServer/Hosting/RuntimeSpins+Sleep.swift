import Dispatch
import Synchronization
import Logging
import SpinCore
import SpinStorage
import SpinConcurrency

extension RuntimeSpins {
    // MARK: Sleep and wake

    /// Wakes Spin `name` when it sleeps, in memory or only on disk (else does nothing);
    /// `then` gets whether it woke now (false: it was awake, or no Spin has the name), or
    /// why it could not. The wakes asked for meanwhile are taken together (`drainWakes`);
    /// `background` ones (nobody waits for them) after the others.
    package func wake(_ name: String, background: Bool = false,
                      then: @escaping @Sendable (Result<Bool, APIError>) -> Void) {
        let schedule = state.withLock { state -> Bool in
            if background {
                state.backgroundWakes.append(Wake(name: name, then: then))
            } else {
                state.wakes.append(Wake(name: name, then: then))
            }
            defer { state.wakeScheduled = true }
            return !state.wakeScheduled
        }
        if schedule { queue.async { [self] in drainWakes() } }
    }

    /// A request about Spin `name`: it counts as activity.
    package func touch(_ name: String) {
        state.withLock { $0.awake[name] }?.touch()
    }

    /// Why a Spin could not be brought up: its history cannot run under its definition
    /// as configured (`Journal.Begun.unrecoverable`).
    struct Unrecoverable: Error {
        let problem: SpinServer.Unrecoverable
    }

    /// A Gear event waits for sleeping Spin `name`: woken, and, when that fails (its
    /// storage cannot be read now), tried again after `delay` seconds, doubling up to 30.
    func wakeForGear(_ name: String, delay: Int) {
        wake(name) { [weak self] woke in
            guard case .failure = woke, let self, state.withLock({ $0.records[name] != nil && $0.bringUp != nil }) else { return }
            queue.asyncAfter(deadline: .now() + .seconds(delay)) { [weak self] in
                self?.wakeForGear(name, delay: min(30, delay * 2))
            }
        }
    }

    /// Whether Spin `name` was made at run time (or may be: one not in memory is looked for
    /// in the store when it is woken).
    package func isMade(_ name: String) -> Bool {
        state.withLock { $0.records[name] != nil } || mayBeStored(name)
    }

    /// Wakes up to `chunk` of the Spins asked for (`wake`; a quarter of that of the
    /// background ones, when no request waits), together: each found (in memory or on disk)
    /// and made by its kind, then all brought up with their storage read in one piece of
    /// the journal's work, so that a burst of first events to sleeping Spins waits behind
    /// the journal's sync once per go, not once per Spin. Each caller gets whether its Spin
    /// woke now, or why not.
    func drainWakes(chunk: Int = 64) {
        // At most `chunk` at a time: the rest are taken after what the queue holds
        // meanwhile (a make, a delete), so that a node taking over many Spins at once does
        // not keep those waiting for a whole go.
        let requests = state.withLock { state -> [Wake] in
            // Those a request waits for first; then a few of the others, so that a request
            // that comes meanwhile waits for no more than that.
            var taken = Array(state.wakes.prefix(chunk))
            state.wakes.removeFirst(taken.count)
            if taken.isEmpty {
                taken = Array(state.backgroundWakes.prefix(chunk / 4))
                state.backgroundWakes.removeFirst(taken.count)
            }
            if state.wakes.isEmpty, state.backgroundWakes.isEmpty {
                state.wakeScheduled = false
            } else {
                queue.async { [weak self] in self?.drainWakes(chunk: chunk) }
            }
            return taken
        }
        var outcomes: [String: Result<Bool, APIError>] = [:]
        var rising: [(name: String, made: SpinFactory.Made, record: MadeSpin, sequence: UInt64)] = []
        var asked = Set<String>()
        for request in requests where asked.insert(request.name).inserted {
            switch prepareWake(request.name) {
            case .answered(let outcome): outcomes[request.name] = outcome
            case .made(let made, let record, let sequence): rising.append((request.name, made, record, sequence))
            }
        }
        if !rising.isEmpty {
            let results = state.withLock({ $0.bringUp })?(rising.map { Rising(spin: $0.made.spin, made: $0.record, keepFeed: true) })
            for (index, entry) in rising.enumerated() {
                guard let result = results?[index] else {
                    outcomes[entry.name] = .failure(.unavailable("the server is shutting down", retryAfter: 1))
                    continue
                }
                switch result {
                case .success:
                    host.replace(with: entry.made.spin)
                    adopt(entry.made.spin, entry.record)
                    logger.debug("Spin \(entry.name) woke at sequence \(entry.sequence)")
                    outcomes[entry.name] = .success(true)
                case .failure(let error as Unrecoverable):
                    // Its definition cannot run its history: it stays so, and answers as such.
                    host.replace(with: entry.made.spin)
                    host.isolate(named: entry.name, error.problem)
                    outcomes[entry.name] = .success(false)
                case .failure(let error):
                    logger.error("Spin \(entry.name) could not wake: \(error)")
                    outcomes[entry.name] = .failure(.storageUnavailable(spin: entry.name, "it could not be read back: \(error)"))
                }
            }
        }
        for request in requests { request.then(outcomes[request.name] ?? .success(false)) }
    }

    /// What `prepareWake` came to: an answer already, or the Spin made by its kind and
    /// attached to its Gears, to bring up.
    private enum PreparedWake {
        case answered(Result<Bool, APIError>)
        case made(SpinFactory.Made, MadeSpin, sequence: UInt64)
    }

    /// Finds Spin `name` (in memory, or on disk: `load`) and, when it sleeps, makes it by
    /// its kind.
    private func prepareWake(_ name: String) -> PreparedWake {
        do {
            guard try load(name) else { return .answered(.success(false)) }
        } catch {
            return .answered(.failure(error))
        }
        guard let sleeping = host.spin(named: name) as? SleepingSpin else { return .answered(.success(false)) }
        guard state.withLock({ $0.bringUp != nil }), let factory = host.factory, let kind = factory.kind(named: sleeping.kind) else {
            return .answered(.failure(.unavailable("the server is shutting down", retryAfter: 1)))
        }
        let record = state.withLock { $0.records[name] } ?? MadeSpin(kind: sleeping.kind)
        let made: SpinFactory.Made
        do { made = try factory.make(name, of: kind) } catch { return .answered(.failure(error)) }
        attach(made)
        return .made(made, record, sequence: sleeping.sequence)
    }

    /// Puts to sleep the made Spins idle for `idleSeconds`: no event applied since, nothing
    /// waiting in their inbox or for the disk, no Gear event in flight, no timer of their
    /// own running. On the queue.
    /// At most `chunk` Spins sleep in one go: the rest are taken after what the queue holds
    /// meanwhile (a wake, a make), so that none waits for a whole sweep.
    func sweep(chunk: Int = 32) {
        let limit = UInt64(idleSeconds) * 1_000_000_000
        let awake = state.withLock { $0.awake }
        let idle = awake.filter { name, activity in
            activity.idleNanoseconds(at: feeds.feed(name).snapshot.sequence) >= limit
        }.map(\.key)
        var slept = 0
        for name in idle {
            guard let spin = host.spin(named: name), !(spin is SleepingSpin), spin.unrecoverable == nil,
                  spin.pendingEvents == 0, !spin.awaitsTime,
                  !feeds.feed(name).isFailing, feeds.feed(name).pendingCount == 0, gears.isSettled(name) else { continue }
            if slept == chunk { return queue.async { [weak self] in self?.sweep(chunk: chunk) } }
            sleep(spin)
            slept += 1
        }
        // The sleeping Spins kept in memory meanwhile: let go of when nothing keeps them.
        for name in state.withLock({ $0.lingering }) where host.spin(named: name) is SleepingSpin {
            release(name)
        }
    }

    /// `spin` sleeps: its loop stops, what it applied is synced and its journal closed, its
    /// Gear receiver keeps what it is sent, its feed stays only for the streams that watch
    /// it, and a `SleepingSpin` takes its place. Events it took and did not apply come back
    /// to their requests, which wake it again (`APIRouter.followMove`).
    func sleep(_ spin: any HostedSpin) {
        let name = spin.name
        spin.stopAndWait()
        endTerm(of: name)
        // Synced first: what it took of its Gears is settled before its receiver is
        // parked with what it settled (else it would ask to be woken for them at once).
        let rests = journal?.sleep(spin: name) ?? false
        gears.park(name)
        let sequence = spin.snapshot().sequence
        host.replace(with: SleepingSpin(name: name, kind: spin.kind, sequence: sequence))
        feeds.dropUnwatched(name)
        metrics.forget(spin: name)
        if rests { state.withLock { _ = $0.resting.insert(name) } }
        logger.debug("Spin \(name) sleeps at sequence \(sequence)")
        release(name)
    }

    /// Spin `name` no longer runs here (deleted, asleep, or not started; its loop has
    /// stopped, which ended its observations): it is no longer watched for idleness.
    func endTerm(of name: String) {
        _ = state.withLock { $0.awake.removeValue(forKey: name) }
    }
}
