import Foundation
import SpinMachines
import SpinWire
import SpinJSON

extension SpinServerConfiguration {
    /// The kind of a config entry that names a machine file instead of a kind.
    public static let machineKind = "machine"

    /// A declarative machine named by a config entry: the file as the entry wrote it and
    /// its definition, loaded and validated when the configuration is.
    public struct MachineSource: Sendable, Equatable {
        /// The path as written in the config file (relative to the config file's directory).
        public var path: String
        public var definition: MachineDefinition

        public init(path: String, definition: MachineDefinition) {
            self.path = path
            self.definition = definition
        }

        /// Two sources are the same machine when they name the same file.
        public static func == (lhs: MachineSource, rhs: MachineSource) -> Bool {
            lhs.path == rhs.path
        }

        /// Reads and validates the machine at `path`, relative to the directory of
        /// `configFile`; issues name the file as `path` is written. The text must be
        /// JSON as the server reads it (RFC 8259, no key twice in one object): a syntax
        /// error is reported at its line and column.
        /// - Throws: the validation issues, one per line, or why the file cannot be read.
        static func load(path: String, configFile: String, hostGears: Set<String>?,
                         readFile: (String) throws -> Data) throws(MachineValidationError) -> MachineSource {
            let resolved = SpinServerConfiguration.resolve(path, relativeTo: configFile)
            let data: Data
            do {
                data = try readFile(resolved)
            } catch {
                throw MachineValidationError(issues: [MachineIssue(file: path, path: "", kind: .unreadable("\(resolved): \(error)"))])
            }
            let bytes = Array(data)
            if let problem = JSONValidator.firstProblem(in: bytes) {
                throw MachineValidationError(issues: [MachineIssue(file: path, path: "", kind: .syntax(problem.located(in: bytes)))])
            }
            return MachineSource(path: path, definition: try MachineDefinition(json: bytes, file: path, hostGears: hostGears))
        }
    }
}
