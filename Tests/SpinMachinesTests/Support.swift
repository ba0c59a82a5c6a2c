import Foundation
import SpinMachines

/// A machine from JSON text, reported as `file`.
func makeMachine(_ json: String, file: String = "test.json", hostGears: Set<String>? = nil) throws(MachineValidationError) -> MachineDefinition {
    try MachineDefinition(json: Array(json.utf8), file: file, hostGears: hostGears)
}

/// The issue lines loading `json` reports (empty when it is valid).
func issueLines(_ json: String, file: String = "test.json", hostGears: Set<String>? = nil) -> [String] {
    do {
        _ = try makeMachine(json, file: file, hostGears: hostGears)
        return []
    } catch {
        return error.issues.map(\.description)
    }
}

func event(_ type: String, _ payload: [String: MachineValue] = [:]) -> MachineEvent {
    MachineEvent(type: type, payload: payload)
}

/// The repository's `Config` directory.
let configDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Config")

/// A shipped machine, loaded as the server names it (`machines/door.json`).
func shippedMachine(_ name: String, hostGears: Set<String>? = nil) throws(MachineValidationError) -> MachineDefinition {
    try MachineDefinition(contentsOfFile: configDirectory.appendingPathComponent("machines/\(name).json").path,
                          name: "machines/\(name).json", hostGears: hostGears)
}

/// The door machine of the design (the shipped `machines/door.json`).
func door() throws -> MachineDefinition { try shippedMachine("door") }

/// The gear event types a state made by a transition propagates, in order.
func propagatedTypes(_ state: MachineState?) -> [String] {
    state?.step.propagations.map(\.event.type) ?? []
}
