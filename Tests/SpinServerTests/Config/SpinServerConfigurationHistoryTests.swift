import Testing
@testable import SpinServer

/// `storage.history` and `storage.snapshotEvery`: what each form keeps, and the errors
/// that name the key.
@Suite struct SpinServerConfigurationHistoryTests {
    typealias Loading = SpinServerConfigurationLoadingTests

    @Test func eachForm_SaysHowMuchHistoryIsKept() throws {
        let defaults = try Loading.make().configuration.storage
        #expect(defaults.history == .events && defaults.retainEvents == 10000 && defaults.snapshotEvery == 1000)
        #expect(!defaults.history.archives && defaults.retainedTransitions == 10000)
        let events = try Loading.make(#"{"storage": {"history": {"events": 50}}}"#).configuration.storage
        #expect(events.history == .events && events.retainEvents == 50)
        let all = try Loading.make(#"{"storage": {"history": "all", "retainEvents": 10, "snapshotEvery": 200}}"#).configuration.storage
        #expect(all.history == .all && all.snapshotEvery == 200 && all.retainEvents == 10)
        // A segment's worth stays in memory, to be written once durable.
        #expect(all.retainedTransitions == 200)
        #expect(try Loading.make(#"{"storage": {"history": {"days": 30}}}"#).configuration.storage.history == .days(30))
        // The same count twice is no contradiction.
        #expect(try Loading.make(#"{"storage": {"history": {"events": 7}, "retainEvents": 7}}"#).configuration.storage.retainEvents == 7)
    }

    @Test func aBadForm_NamesTheKeyAndTheForms() {
        let cases: [(String, String, String)] = [
            (#""everything""#, "storage.history", #"unknown choice "everything": must be {"events": K}, {"days": D} or "all""#),
            (#"{"weeks": 2}"#, "storage.history", #"unknown key "weeks""#),
            (#"{"days": 1, "events": 2}"#, "storage.history", #"must be {"events": K}, {"days": D} or "all""#),
            (#"{"days": 0}"#, "storage.history.days", "must be 1 to 36500, got 0"),
            (#"{"events": -1}"#, "storage.history.events", "must be 0 to 10000000, got -1"),
            ("7", "storage.history", #"must be {"events": K}"#),
        ]
        for (value, key, problem) in cases {
            let error = Loading.error(#"{"storage": {"history": \#(value)}}"#)
            #expect(error?.key == key && error?.problem.contains(problem) == true, "\(value): \(String(describing: error))")
        }
        let disagree = Loading.error(#"{"storage": {"history": {"events": 5}, "retainEvents": 6}}"#)
        #expect(disagree?.key == "storage.history" && disagree?.problem.contains("disagree") == true)
        let every = Loading.error(#"{"storage": {"snapshotEvery": 5}}"#)
        #expect(every?.key == "storage.snapshotEvery" && every?.problem == "must be 10 to 1000000, got 5")
    }
}
