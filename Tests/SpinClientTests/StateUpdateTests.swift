import Foundation
import SpinClient
import Testing

/// What a state message says of itself, without a server: the event of a migration is
/// the server's, told apart from the Spin's own.
struct StateUpdateTests {
    static func update(event: String?) -> StateUpdate<Int> {
        StateUpdate(kind: event == nil ? .snapshot : .state, sequence: 8, epoch: "e", state: 0,
                    event: event.map { Data($0.utf8) })
    }

    @Test func aMigrationsEvent_GivesBothVersions_AndNoOtherEventDoes() throws {
        let migration = try #require(Self.update(event: #"{"type":"spin.migrated","from":1,"to":2}"#).migration)
        #expect(migration.from == 1 && migration.to == 2)
        #expect(Self.update(event: #"{"type":"NEXT"}"#).migration == nil)
        #expect(Self.update(event: #"{"type":"spin.migrated"}"#).migration == nil)
        #expect(Self.update(event: nil).migration == nil)
    }
}
