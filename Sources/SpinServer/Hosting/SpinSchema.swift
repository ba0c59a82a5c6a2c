import SpinCore

/// What a hosted Spin's events and state look like, as JSON Schemas: what the OpenAPI
/// document, `GET /v1/spins/{name}/schema` and the dashboard's example events show.
///
/// A Swift Spin gets its schemas from its types (`SpinSchema.of`): a `TypeTaggedEvent`
/// describes itself, a state type that adopts `JSONSchemaDescribable` too. Give one
/// explicitly to `SpinHost.host(_:named:kind:schema:)` or `SpinKindContext.host(_:schema:)`
/// to say more (or something else).
public struct SpinSchema: Sendable, Equatable {
    /// One event: what `POST /v1/spins/{name}/events` takes (alone or in an array).
    public var event: JSONSchema
    /// The state, as `GET /v1/spins/{name}` shows it.
    public var state: JSONSchema

    /// The schemas `event` and `state`.
    public init(event: JSONSchema, state: JSONSchema) {
        self.event = event
        self.state = state
    }

    /// An event of a type that does not describe itself: an object with a non-empty
    /// string `type`, any other members.
    public static let anyEvent: JSONSchema = .object(["type": .string(minLength: 1)], additionalProperties: true)

    /// The schemas the types describe (`JSONSchemaDescribable`): `anyEvent` for an event
    /// type that does not, any JSON for a state type that does not.
    public static func of<State, Event>(_: State.Type, _: Event.Type) -> SpinSchema {
        SpinSchema(event: (Event.self as? any JSONSchemaDescribable.Type)?.jsonSchema ?? anyEvent,
                   state: (State.self as? any JSONSchemaDescribable.Type)?.jsonSchema ?? .any)
    }
}
