/// Composition of reducers, as TCA's `pullback`/`combine`/`optional`/`forEach` and
/// HarvestOptics' lifting: a reducer written for a child's own state and events runs
/// inside a parent, on the child's part of the parent's state (changed in place, through
/// a writable key path) and only for the parent events that are the child's (an
/// `EventPath`). SpinCore.docc, Composition, has a worked example.
///
/// A lifted reducer is partial (`Reducer.partial`): it declines a parent event that is not
/// its child's, and one for a child that is not there (a nil optional, an id not in the
/// collection); the loop then ignores the event (reply "ignored"), as it does an event a
/// transition table has no row for. `Reducer.combine` declines only what all its parts
/// decline, so a parent made of lifted children applies exactly the events one of them
/// takes.
extension Reducer {
    /// The reducer as an in-place step that says whether the event applied.
    var inPlace: @Sendable (inout State, Event) -> Bool {
        if let step { return step }
        let reduce = self.reduce
        return { state, event in
            state = reduce(state, event)
            return true
        }
    }

    /// This child reducer inside a parent: it applies the parent events `event` extracts
    /// to the part of the parent's state at `state`, in place, and declines every other
    /// event.
    public func pullback<Parent: Sendable, ParentEvent: Sendable>(
        state: WritableKeyPath<Parent, State> & Sendable,
        event path: EventPath<ParentEvent, Event>
    ) -> Reducer<Parent, ParentEvent> {
        let step = inPlace
        let extract = path.extract
        return Reducer<Parent, ParentEvent>(decliningInPlace: { parent, event in
            guard let child = extract(event) else { return false }
            return step(&parent[keyPath: state], child)
        })
    }

    /// This reducer for an optional state: it applies events while the state is there and
    /// declines them while it is nil (TCA's `optional()`; lift it with `pullback` onto an
    /// optional child: a detail screen's state that comes and goes).
    public func optional() -> Reducer<State?, Event> {
        let step = inPlace
        return Reducer<State?, Event>(decliningInPlace: { state, event in
            guard state != nil else { return false }
            return step(&state!, event)
        })
    }

    /// This element reducer over a collection of identified children (TCA's `forEach`):
    /// a parent event that `event` extracts as `(id, childEvent)` is applied, in place, to
    /// the element of the array at `state` with that id; declined when no element has it
    /// (the child was removed: its late events change nothing). Elements are found by a
    /// linear search: the collection is a screen's rows, not a table.
    public func forEach<Parent: Sendable, ParentEvent: Sendable>(
        state: WritableKeyPath<Parent, [State]> & Sendable,
        event path: EventPath<ParentEvent, (State.ID, Event)>
    ) -> Reducer<Parent, ParentEvent> where State: Identifiable, State.ID: Sendable {
        let step = inPlace
        let extract = path.extract
        return Reducer<Parent, ParentEvent>(decliningInPlace: { parent, event in
            guard let (id, child) = extract(event),
                  let index = parent[keyPath: state].firstIndex(where: { $0.id == id }) else { return false }
            return step(&parent[keyPath: state][index], child)
        })
    }

    /// Several reducers as one, applied in order to each event: each sees the state the
    /// previous one made. The result declines an event only if every part declines it
    /// (with a plain, non-partial, part it applies every event; with no partial part it
    /// is a plain reducer).
    public static func combine(_ reducers: Reducer...) -> Reducer {
        combine(reducers)
    }

    /// `combine(_:...)` over an array.
    public static func combine(_ reducers: [Reducer]) -> Reducer {
        let steps = reducers.map(\.inPlace)
        if !reducers.contains(where: \.isPartial) {
            return Reducer(mutating: { state, event in
                for step in steps { _ = step(&state, event) }
            })
        }
        return Reducer(decliningInPlace: { state, event in
            var applied = false
            for step in steps where step(&state, event) { applied = true }
            return applied
        })
    }
}
