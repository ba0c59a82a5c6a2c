import SpinCore
import SpinMachines
import Testing

// The Swift example of docs/MACHINES.md, verbatim but for the file's path (tests do not
// run from the package's root), so that the document cannot drift from the API
// (Tests/e2e/test_readme.py checks that its lines are here).
@Suite(.timeLimit(.minutes(1)))
struct MachinesReadmeTests {
    @Test func readmeExample_Runs() async throws {
        let path = configDirectory.appendingPathComponent("machines/door.json").path
        let door = try MachineDefinition(contentsOfFile: path, name: "machines/door.json")
        let opened = door.transition(door.initialState, MachineEvent(type: "OPEN"))
        // {"value":"opened","context":{"code":"1234","opens":1}}, and doorOpened goes out on Gear doors
        let ignored = door.transition(door.initialState, MachineEvent(type: "CLOSE"))
        // nil: closed has no transition for CLOSE

        let doors = Gear<MachineEvent>()
        let loop = door.spin(gears: ["doors": doors]).start()   // after timers on a ContinuousClock
        loop.emit(MachineEvent(type: "OPEN"))                    // back to closed 300 ms later

        defer { loop.stop() }
        #expect(opened == MachineState(value: ["opened"], context: ["code": "1234", "opens": 1]))
        #expect(opened?.step.propagations == [MachinePropagation(gear: "doors", event: MachineEvent(type: "doorOpened"))])
        #expect(ignored == nil)
        var states = loop.states.makeAsyncIterator()
        while let state = await states.next(), state.value != ["opened"] {}
        while let state = await states.next(), state.value != ["closed"] {}
        #expect(loop.state.context["opens"] == 1)
    }
}
