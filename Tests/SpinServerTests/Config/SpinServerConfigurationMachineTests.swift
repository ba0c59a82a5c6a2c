import Foundation
import SpinMachines
import Testing
@testable import SpinServer

/// Config entries `{"name":..,"machine":"machines/x.json"}`: the machine file is read
/// relative to the config file and validated at load, and its errors are configuration
/// errors naming the entry, the machine file and the JSON path inside it.
@Suite struct SpinServerConfigurationMachineTests {
    typealias Loading = SpinServerConfigurationLoadingTests

    static let door = #"""
        { "initial": "closed",
          "states": { "closed": { "on": { "OPEN": "opened" } },
                      "opened": { "entry": [ { "type": "gear.propagate", "gear": "doors", "event": { "type": "doorOpened" } } ],
                                  "on": { "CLOSE": "closed" } } },
          "gears": { "doors": {} } }
        """#

    @Test func machineEntry_IsLoadedRelativeToTheConfigFile() throws {
        let loaded = try Loading.make(#"""
            { "spins": [ { "name": "door", "machine": "machines/door.json" } ], "gears": [ { "name": "doors" } ] }
            """#, configPath: "conf/spin.json", flags: .init(config: "conf/spin.json"),
            files: ["conf/machines/door.json": Self.door])
        let entry = try #require(loaded.configuration.spins.first)
        #expect(entry.name == "door")
        #expect(entry.kind == "machine")
        #expect(entry.machine?.path == "machines/door.json")
        #expect(entry.attachedGears == ["doors"])
        #expect(loaded.configuration.summary.hasPrefix("1 spin (door@doors), 1 gear (doors)"))
    }

    @Test func aMachineError_NamesTheEntryTheMachineFileAndThePath() {
        let broken = Self.door.replacingOccurrences(of: #""CLOSE": "closed""#, with: #""CLOSE": "clsoed""#)
        let error = Loading.error(#"""
            { "spins": [ { "name": "door", "machine": "machines/door.json" } ], "gears": [ { "name": "doors" } ] }
            """#, files: ["Config/machines/door.json": broken])
        #expect(error?.description
            == #"Config/spin-server.json: spins[0].machine: machines/door.json: states.opened.on.CLOSE: unknown state "clsoed" (did you mean "closed"?)"#)
    }

    @Test(arguments: [
        (#"{ "spins": [ { "name": "door", "machine": "machines/door.json" } ] }"#,
         #"Config/spin-server.json: spins[0].machine: machines/door.json: gears.doors: Gear "doors" is not listed in the config's gears (gears is empty): add {"name": "doors"} to "gears" in Config/spin-server.json"#),
        (#"{ "spins": [ { "name": "door", "machine": "machines/door.json" }, { "name": "c", "kind": "counter" } ], "gears": [ ] }"#,
         #"Config/spin-server.json: spins[0].machine: machines/door.json: gears.doors: Gear "doors" is not listed in the config's gears (gears is empty): add {"name": "doors"} to "gears" in Config/spin-server.json"#),
        (#"{ "spins": [ { "name": "door", "machine": "machines/nope.json" } ] }"#,
         "Config/spin-server.json: spins[0].machine: machines/nope.json: cannot read the file: Config/machines/nope.json: No such file or directory"),
        (#"{ "spins": [ { "name": "door", "kind": "counter", "machine": "machines/door.json" } ] }"#,
         #"Config/spin-server.json: spins[0].kind: an entry with "machine" has no kind: remove "kind""#),
        (#"{ "spins": [ { "name": "door", "gear": "doors", "machine": "machines/door.json" } ], "gears": [ { "name": "doors" } ] }"#,
         #"Config/spin-server.json: spins[0].gear: a machine names its Gears in its own file ("gears"): remove "gear""#),
    ])
    func badMachineEntry_IsOneConfigurationError(json: String, expected: String) {
        #expect(Loading.error(json, files: ["Config/machines/door.json": Self.door])?.description == expected)
    }

    @Test func aSyntaxErrorInAMachineFile_GivesItsLineAndColumn() {
        // Line 4 starts with "é" (two bytes): the column counts characters, not bytes.
        let broken = "{ \"initial\": \"a\",\n  \"states\": {\n\"a\": { \"on\": { \"E\": \"a\" } },\n\"é\": 1 \"b\": {} } }"
        let error = Loading.error(#"{ "spins": [ { "name": "m", "machine": "machines/m.json" } ] }"#,
                                  files: ["Config/machines/m.json": broken])
        #expect(error?.description == "Config/spin-server.json: spins[0].machine: machines/m.json: "
            + "line 4, column 8: expected ',' or '}' after an object member")
    }

    @Test func aKeyTwiceInOneObjectOfAMachineFile_IsRefused() {
        let twice = Self.door.replacingOccurrences(of: #""on": { "CLOSE": "closed" }"#,
                                                   with: #""on": { "CLOSE": "closed" }, "on": { "OPEN": "opened" }"#)
        let error = Loading.error(#"""
            { "spins": [ { "name": "door", "machine": "machines/door.json" } ], "gears": [ { "name": "doors" } ] }
            """#, files: ["Config/machines/door.json": twice])
        #expect(error?.description == #"Config/spin-server.json: spins[0].machine: machines/door.json: "#
            + #"the key "on" appears twice in one object (at states.opened.on); each key may appear once"#)
    }

    @Test func aGear_MayBeSharedByMachinesAndSwiftSpins() throws {
        for spins in [#"{ "name": "f", "kind": "feature", "gear": "doors" }, { "name": "door", "machine": "machines/door.json" }"#,
                      #"{ "name": "door", "machine": "machines/door.json" }, { "name": "f", "kind": "feature", "gear": "doors" }"#] {
            let loaded = try Loading.make(#"{ "spins": [ "# + spins + #" ], "gears": [ { "name": "doors" } ] }"#,
                                          files: ["Config/machines/door.json": Self.door])
            #expect(loaded.configuration.spins.map(\.name).sorted() == ["door", "f"])
        }
    }

    @Test func aGearOnlyAMachineUses_CountsAsAttached() throws {
        let loaded = try Loading.make(#"""
            { "spins": [ { "name": "door", "machine": "machines/door.json" } ], "gears": [ { "name": "doors" } ] }
            """#, files: ["Config/machines/door.json": Self.door])
        #expect(loaded.configuration.gears == [.init(name: "doors")])
    }
}
