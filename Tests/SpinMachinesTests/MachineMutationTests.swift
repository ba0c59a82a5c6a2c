import Foundation
@testable import SpinMachines
import SpinTesting
import Testing

/// Machine files a little wrong in every way the format allows, made by mutating valid
/// ones (the shipped machines and machines with every feature: parallel states, history,
/// `always`, `after`, `raise`, `reenter`, `onDone`): each must load or be refused with
/// issues, never trap, recurse without end or hang, and one that loads must take any
/// event, and its states encode and decode, without trapping. A history state that was
/// its parent's initial state without a target once made the check recurse until the
/// stack overflowed; this is the net that would have caught it.
///
/// Seeded, so a failure names its case; `SPIN_MACHINE_MUTATIONS` sets how many cases
/// (default 8,000, about seven seconds here) and `SPIN_MACHINE_MUTATION_SEED` the seed (the long
/// form: 200,000 cases for each of a few seeds).
@Suite struct MachineMutationTests {
    static let seeds: [String] = [
        #"""
        { "id": "m", "initial": "a", "context": { "n": 0, "s": "x" },
          "states": {
            "a": { "initial": "a1", "entry": [ { "type": "assign", "set": { "n": { "add": 1 } } } ],
                   "on": { "GO": "b", "BACK": { "target": "a.h", "reenter": true }, "DEEP": "a.hd" },
                   "states": { "a1": { "on": { "NEXT": "a2" }, "after": { "100": "a2" } },
                               "a2": { "initial": "x", "states": { "x": { "on": { "IN": "y" } }, "y": { "type": "final" } },
                                       "onDone": "a1" },
                               "h": { "type": "history" }, "hd": { "type": "history", "history": "deep", "target": "a2" } } },
            "b": { "always": [ { "target": "c", "guard": { "eq": ["event.type", "JUMP"] } } ],
                   "on": { "RAISE": { "actions": [ { "type": "raise", "event": { "type": "GO" } },
                                                   { "type": "raise", "event": { "type": "LATER" }, "delay": 50, "id": "t" } ] },
                           "CANCEL": { "actions": [ { "type": "cancel", "id": "t" } ] }, "LATER": "a" } },
            "c": { "type": "final" } } }
        """#,
        #"""
        { "id": "p", "initial": "on", "context": { "k": 1 },
          "on": { "RESET": { "target": "#p", "reenter": true }, "ROOT": { "target": "#two", "reenter": true } },
          "states": {
            "on": { "type": "parallel", "onDone": "two",
                    "states": { "r1": { "initial": "a", "states": { "a": { "on": { "X": "b" } }, "b": { "type": "final" },
                                                                  "h": { "type": "history", "history": "deep" } } },
                                "r2": { "initial": "c", "states": { "c": { "always": { "target": "d", "guard": { "in": "#p.on.r1.b" } } },
                                                                  "d": { "type": "final" } } } } },
            "two": { "id": "two", "initial": { "target": "t1", "actions": [ { "type": "assign", "set": { "k": { "add": 1 } } } ] },
                     "states": { "t1": { "on": { "*": "t2" } }, "t2": { "on": { "mouse.*": "t1" } } },
                     "on": { "BACK": "on.r1.h" } } } }
        """#,
        #"""
        { "initial": "foo", "states": { "foo": { "type": "history", "target": "bar" },
          "bar": { "initial": "baz", "on": { "OUT": "qux" },
                   "states": { "baz": { "type": "history", "target": "qwe" }, "qwe": { "on": { "MOVE": "other" } }, "other": {} } },
          "qux": { "on": { "IN": "bar" } } } }
        """#,
    ]

    /// Names, keys and values the mutations draw from: what the format reads, what it
    /// does not, and names that are almost right.
    static let words = ["a", "a1", "a2", "b", "c", "h", "hd", "x", "y", "on", "r1", "r2", "two", "t1", "foo", "bar", "baz", "qwe",
                        ".a1", ".x", "#m", "#p", "#two", "#m.a", "#p.on.r1.b", "a.h", "on.r1.h", "", ".", "#", "..", "a..b"]
    static let keys = ["initial", "states", "on", "type", "target", "history", "always", "after", "onDone", "entry", "exit",
                       "reenter", "guard", "actions", "id", "context", "description", "version"]
    static let events = ["GO", "BACK", "DEEP", "NEXT", "IN", "JUMP", "RAISE", "CANCEL", "LATER", "RESET", "ROOT", "X", "OUT",
                         "MOVE", "mouse.click", "OTHER", "xstate.init"]

    @Test func mutatedMachines_LoadOrAreRefused_AndThoseThatLoad_TakeAnyEvent() throws {
        let count = ProcessInfo.processInfo.environment["SPIN_MACHINE_MUTATIONS"].flatMap(Int.init) ?? 8000
        let seed = ProcessInfo.processInfo.environment["SPIN_MACHINE_MUTATION_SEED"].flatMap(UInt64.init) ?? 20261130
        var random = SeededGenerator(seed: seed)
        var seeds = Self.seeds
        for name in ["door", "session", "auth-feature", "auth-router"] {
            seeds.append(try String(contentsOf: configDirectory.appendingPathComponent("machines/\(name).json"), encoding: .utf8))
        }
        let trees = try seeds.map { try JSONSerialization.jsonObject(with: Data($0.utf8), options: [.fragmentsAllowed]) }
        var loaded = 0
        for index in 0..<count {
            var tree = trees[Int.random(in: 0..<trees.count, using: &random)]
            for _ in 0..<Int.random(in: 1...4, using: &random) { tree = mutate(tree, using: &random) }
            guard let data = try? JSONSerialization.data(withJSONObject: tree, options: [.fragmentsAllowed]) else { continue }
            let machine: MachineDefinition
            do {
                machine = try MachineDefinition(json: Array(data), file: "case-\(index).json")
            } catch {
                #expect(!error.issues.isEmpty, "case \(index): refused without an issue")
                continue
            }
            loaded += 1
            var state = machine.initialState
            for _ in 0..<30 {
                let type = Self.events[Int.random(in: 0..<Self.events.count, using: &random)]
                let payload: [String: MachineValue] = type == "GO" ? ["n": .number(1)] : [:]
                if let next = machine.transition(state, MachineEvent(type: type, payload: payload)) { state = next }
                if let path = state.activePaths.randomElement(using: &random) {
                    let after = MachineEvent.after(state: path, delay: 100)
                    if let next = machine.transition(state, after) { state = next }
                }
                _ = machine.isDone(state)
                _ = machine.awaitsTime(in: state)
            }
            let encoded = try JSONEncoder().encode(state)
            #expect(try JSONDecoder().decode(MachineState.self, from: encoded) == state, "case \(index)")
        }
        // The net holds only if mutations keep some machines valid.
        #expect(loaded > count / 20, "only \(loaded) of \(count) mutated machines loaded")
    }

    /// A version 2 made by mutating a valid machine, with a migration from it that maps
    /// random paths to random names and changes the context: walked to any state, the
    /// version 1 machine's state migrates or is refused naming both versions, never traps,
    /// and a state that migrates is one version 2 takes (its events too). Same seed and
    /// count variables as above (a quarter of the count).
    @Test func migrationsBetweenMutatedVersions_NeverTrap_AndWhatMigratesFits() throws {
        let count = (ProcessInfo.processInfo.environment["SPIN_MACHINE_MUTATIONS"].flatMap(Int.init) ?? 8000) / 4
        let seed = ProcessInfo.processInfo.environment["SPIN_MACHINE_MUTATION_SEED"].flatMap(UInt64.init) ?? 20261130
        var random = SeededGenerator(seed: seed ^ 0x5EED)
        var seeds = Self.seeds
        for name in ["door", "session", "auth-feature", "auth-router"] {
            seeds.append(try String(contentsOf: configDirectory.appendingPathComponent("machines/\(name).json"), encoding: .utf8))
        }
        let olders = try seeds.map { try MachineDefinition(json: Array($0.utf8), file: "v1.json") }
        let trees = try seeds.map { try JSONSerialization.jsonObject(with: Data($0.utf8), options: [.fragmentsAllowed]) }
        var migrated = 0
        for index in 0..<count {
            let pick = Int.random(in: 0..<trees.count, using: &random)
            let older = olders[pick]
            var tree = trees[pick]
            for _ in 0..<Int.random(in: 0...2, using: &random) { tree = mutate(tree, using: &random) }
            guard var root = tree as? [String: Any] else { continue }
            let paths = older.statePaths.map { $0.joined(separator: ".") }
            var states: [String: Any] = [:]
            for _ in 0..<Int.random(in: 0...3, using: &random) {
                let from = paths.randomElement(using: &random) ?? "a"
                states[from] = (paths + Self.words).randomElement(using: &random) ?? "a"
            }
            let word = { Self.words.randomElement(using: &random) ?? "a" }
            root["version"] = 2
            root["migrations"] = ["1": ["states": states,
                                        "context": ["rename": [word(): word()], "remove": [word()], "set": [word(): 1]]]]
            guard let data = try? JSONSerialization.data(withJSONObject: root),
                  let newer = try? MachineDefinition(json: Array(data), file: "v2-\(index).json") else { continue }
            _ = newer.migrationIssues(from: older)
            var state = older.initialState
            for _ in 0..<Int.random(in: 0...12, using: &random) {
                let type = Self.events[Int.random(in: 0..<Self.events.count, using: &random)]
                if let next = older.transition(state, MachineEvent(type: type)) { state = next }
            }
            let moved: MachineState
            do {
                moved = try newer.migrate(state, fromVersion: 1)
            } catch {
                #expect(error.description.hasPrefix("version 1 → 2: "), "case \(index): \(error)")
                continue
            }
            migrated += 1
            #expect(newer.problem(taking: moved) == nil, "case \(index)")
            let encoded = try JSONEncoder().encode(moved)
            #expect(try JSONDecoder().decode(MachineState.self, from: encoded) == moved, "case \(index)")
            var next = moved
            for _ in 0..<6 {
                let type = Self.events[Int.random(in: 0..<Self.events.count, using: &random)]
                if let after = newer.transition(next, MachineEvent(type: type)) { next = after }
            }
        }
        // The net holds only if some states do migrate.
        #expect(migrated > count / 20, "only \(migrated) of \(count) states migrated")
    }

    /// One change somewhere in `tree`: a value replaced by a word, a key removed or added,
    /// a subtree copied elsewhere.
    private func mutate(_ tree: Any, using random: inout SeededGenerator) -> Any {
        var paths: [[Step]] = []
        collect(tree, at: [], into: &paths)
        guard let path = paths.randomElement(using: &random) else { return tree }
        let choice = Int.random(in: 0..<6, using: &random)
        return rewrite(tree, at: path[...]) { value in
            switch choice {
            case 0: return Self.words.randomElement(using: &random)!
            case 1:
                guard var object = value as? [String: Any], let key = object.keys.sorted().randomElement(using: &random) else {
                    return value
                }
                object[key] = nil
                return object
            case 2:
                guard var object = value as? [String: Any] else { return value }
                let key = Self.keys.randomElement(using: &random)!
                let values: [Any] = [Self.words.randomElement(using: &random)!, true, 1, ["x": [String: Any]()],
                                     ["type": "history", "target": Self.words.randomElement(using: &random)!], "parallel", "final",
                                     "history", "deep", ["target": Self.words.randomElement(using: &random)!, "reenter": true]]
                object[key] = values.randomElement(using: &random)!
                return object
            case 3:
                // A subtree of the whole file in this place (a state inside itself, say).
                var all: [[Step]] = []
                collect(tree, at: [], into: &all)
                guard let other = all.randomElement(using: &random) else { return value }
                return self.value(in: tree, at: other[...]) ?? value
            case 4:
                guard var object = value as? [String: Any] else { return value }
                object["type"] = ["history", "parallel", "final", "compound"].randomElement(using: &random)!
                return object
            default:
                guard var object = value as? [String: Any] else { return value }
                object["initial"] = Self.words.randomElement(using: &random)!
                return object
            }
        }
    }

    private enum Step {
        case key(String)
        case index(Int)
    }

    private func collect(_ value: Any, at path: [Step], into paths: inout [[Step]]) {
        paths.append(path)
        if let object = value as? [String: Any] {
            // In key order: a dictionary's own order changes from run to run.
            for key in object.keys.sorted() { collect(object[key]!, at: path + [.key(key)], into: &paths) }
        } else if let array = value as? [Any] {
            for (index, element) in array.enumerated() { collect(element, at: path + [.index(index)], into: &paths) }
        }
    }

    private func value(in tree: Any, at path: ArraySlice<Step>) -> Any? {
        guard let step = path.first else { return tree }
        switch step {
        case .key(let key): return (tree as? [String: Any])?[key].flatMap { value(in: $0, at: path.dropFirst()) }
        case .index(let index):
            guard let array = tree as? [Any], array.indices.contains(index) else { return nil }
            return value(in: array[index], at: path.dropFirst())
        }
    }

    private func rewrite(_ tree: Any, at path: ArraySlice<Step>, _ change: (Any) -> Any) -> Any {
        guard let step = path.first else { return change(tree) }
        switch step {
        case .key(let key):
            guard var object = tree as? [String: Any], let member = object[key] else { return tree }
            object[key] = rewrite(member, at: path.dropFirst(), change)
            return object
        case .index(let index):
            guard var array = tree as? [Any], array.indices.contains(index) else { return tree }
            array[index] = rewrite(array[index], at: path.dropFirst(), change)
            return array
        }
    }
}
