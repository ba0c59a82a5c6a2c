/// How a child's events live inside its parent's: `embed` wraps a child event into the
/// parent's event (an enum case), `extract` gets it back, or nil when a parent event is
/// not for this child. The event half of what composition lifts a child over (the state
/// half is a key path); TCA's case path, HarvestOptics' prism, written by hand.
///
/// ```swift
/// enum AppEvent { case counter(CounterEvent), settings(SettingsEvent) }
///
/// let counter = EventPath<AppEvent, CounterEvent>(embed: AppEvent.counter, extract: {
///     if case .counter(let event) = $0 { event } else { nil }
/// })
/// let settings = EventPath.case(AppEvent.settings)     // the same, found by reflection
/// ```
public struct EventPath<Root, Value>: Sendable {
    public let embed: @Sendable (Value) -> Root
    public let extract: @Sendable (Root) -> Value?

    public init(embed: @escaping @Sendable (Value) -> Root, extract: @escaping @Sendable (Root) -> Value?) {
        self.embed = embed
        self.extract = extract
    }

    /// The path of the enum case `embed` makes, its `extract` found by reflection: a root
    /// is of that case when its case name is the one `embed` gives, and its associated
    /// value is then the child's event. For a case with one associated value (a tuple of
    /// several counts as one: `case row(id: Int, event: RowEvent)` is an
    /// `EventPath<Event, (id: Int, event: RowEvent)>`). A hand-written `extract` (a
    /// `switch`) costs less per event; this one reflects on each event it is asked about.
    public static func `case`(_ embed: @escaping @Sendable (Value) -> Root) -> EventPath {
        EventPath(embed: embed, extract: { root in
            guard let payload = Mirror(reflecting: root).children.first, let label = payload.label,
                  let value = payload.value as? Value,
                  Mirror(reflecting: embed(value)).children.first?.label == label else { return nil }
            return value
        })
    }

    /// This path followed by `next`: a grandchild's events inside the root.
    public func appending<Next>(_ next: EventPath<Value, Next>) -> EventPath<Root, Next> {
        let (outerEmbed, outerExtract) = (embed, extract)
        return EventPath<Root, Next>(embed: { outerEmbed(next.embed($0)) },
                                     extract: { outerExtract($0).flatMap(next.extract) })
    }
}
