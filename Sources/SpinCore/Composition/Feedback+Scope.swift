/// Composition of feedbacks, the counterpart of `Reducer+Scope.swift`: a feedback written
/// for a child's own state and events runs inside a parent, sees the child's part of each
/// parent state, and its events are wrapped into the parent's (`EventPath.embed`). Every
/// form lifts (effects, `react`, Gears, `.execute(on:)`), because what is lifted is the
/// running feedback, not its effect.
///
/// A child's feedback runs as long as its child is there: for an optional child, from the
/// state where it appears to the one where it goes (then its effects are cancelled, as by
/// `stop()`; a child that comes back starts a new run); for a collection, one run per
/// element id, cancelled when the element leaves the collection. When the child's state is
/// `Equatable`, its feedback sees a parent state only when its part changed: a sibling's
/// events make no new state of this child, so they neither start its effects again nor
/// cancel them (`cancelOnNewState`). A transition table's effects
/// (`TransitionTable.effects(environment:)`, which start from the event that made a state)
/// lift too: the child's run hears the child's events, with its part of the states.
extension Feedback {
    /// This child feedback inside a parent: it sees the part of each parent state at
    /// `state` and its events are embedded by `event`.
    public func pullback<Parent: Sendable, ParentEvent: Sendable>(
        state: KeyPath<Parent, State> & Sendable,
        event path: EventPath<ParentEvent, Event>
    ) -> Feedback<Parent, ParentEvent> {
        lifted(children: { parent in CollectionOfOne((0, parent[keyPath: state])) }, embed: { _ in path.embed },
               route: { path.extract($0).map { (0, $0) } }, same: nil)
    }

    /// `pullback(state:event:)` for an `Equatable` child: a parent state whose part is the
    /// one the feedback saw last does not reach it.
    public func pullback<Parent: Sendable, ParentEvent: Sendable>(
        state: KeyPath<Parent, State> & Sendable,
        event path: EventPath<ParentEvent, Event>
    ) -> Feedback<Parent, ParentEvent> where State: Equatable {
        lifted(children: { parent in CollectionOfOne((0, parent[keyPath: state])) }, embed: { _ in path.embed },
               route: { path.extract($0).map { (0, $0) } }, same: { $0 == $1 })
    }

    /// This feedback for an optional state: it runs while the state is there (from the
    /// first state where it is), and is stopped, every effect cancelled, when it becomes
    /// nil. Lift the result with `pullback` onto an optional child.
    public func optional() -> Feedback<State?, Event> {
        lifted(children: { state in state.map { [(0, $0)] } ?? [] },
               embed: { _ in { $0 } }, route: { (0, $0) }, same: nil)
    }

    /// `optional()` for an `Equatable` state: it sees a state only when it changed.
    public func optional() -> Feedback<State?, Event> where State: Equatable {
        lifted(children: { state in state.map { [(0, $0)] } ?? [] },
               embed: { _ in { $0 } }, route: { (0, $0) }, same: { $0 == $1 })
    }

    /// This element feedback for each element of the identified collection at `state`
    /// (TCA's `forEach`): one run per id, which sees its element of every parent state
    /// and whose events are embedded with its id; when the id leaves the collection, its
    /// run is stopped and every effect of it cancelled (nothing it produces afterwards is
    /// applied).
    public func forEach<Parent: Sendable, ParentEvent: Sendable>(
        state: KeyPath<Parent, [State]> & Sendable,
        event path: EventPath<ParentEvent, (State.ID, Event)>
    ) -> Feedback<Parent, ParentEvent> where State: Identifiable, State.ID: Sendable {
        lifted(children: { parent in parent[keyPath: state].lazy.map { ($0.id, $0) } },
               embed: { id in { path.embed((id, $0)) } }, route: path.extract, same: nil)
    }

    /// `forEach(state:event:)` for `Equatable` elements: an element's run sees a parent
    /// state only when its element changed.
    public func forEach<Parent: Sendable, ParentEvent: Sendable>(
        state: KeyPath<Parent, [State]> & Sendable,
        event path: EventPath<ParentEvent, (State.ID, Event)>
    ) -> Feedback<Parent, ParentEvent> where State: Identifiable & Equatable, State.ID: Sendable {
        lifted(children: { parent in parent[keyPath: state].lazy.map { ($0.id, $0) } },
               embed: { id in { path.embed((id, $0)) } }, route: path.extract, same: { $0 == $1 })
    }

    /// The one lifting all the forms share: `children` lists the (key, child state) pairs
    /// of a parent state, `embed` makes the event wrapper of a key's run, `route` tells
    /// which key's run a parent event is for (only asked for a feedback that hears
    /// transitions: a transition table's effects).
    private func lifted<Parent: Sendable, ParentEvent: Sendable, Key: Hashable & Sendable, Children: Sequence>(
        children: @escaping @Sendable (Parent) -> Children,
        embed: @escaping @Sendable (Key) -> @Sendable (Event) -> ParentEvent,
        route: @escaping @Sendable (ParentEvent) -> (Key, Event)?,
        same: (@Sendable (State, State) -> Bool)?
    ) -> Feedback<Parent, ParentEvent> where Children.Element == (Key, State) {
        let makeRunner = self.makeRunner
        let hearsTransitions = self.hearsTransitions
        return Feedback<Parent, ParentEvent>(executor: executor, hearsTransitions: hearsTransitions) { context in
            let make = { @Sendable (key: Key) -> any FeedbackRunner<State> in
                let wrap = embed(key)
                let parent = context.host
                let host = FeedbackHost<Event>(
                    label: parent.label, runsInline: parent.runsInline, delivery: parent.delivery,
                    submitCaught: { event, receipt in parent.submit(caught: wrap(event), receipt: receipt) }
                ) { event, stillLatest in parent.submit(wrap(event), stillLatest) }
                return makeRunner(FeedbackContext(host: host, index: context.index, executor: context.executor))
            }
            guard hearsTransitions else { return ChildrenRunner(children: children, same: same, make: make) }
            return TransitionChildrenRunner(children: children, same: same, route: route, make: make)
        }
    }
}
