import SpinStorage

// The definitions' versions a start keeps in storage (see `StoredDefinition`).
extension LoopServer {
    /// Stores the version of every hosted definition (configured machines, machine kinds,
    /// Swift kinds registered with a version) that storage does not hold as it is, and
    /// gives each the older versions storage holds, before any Spin is recovered. Throws
    /// when storage cannot be read or written, or a machine's migrations name states the
    /// stored older version lacks.
    func keepDefinitions(_ journal: Journal) throws {
        for definition in hostedDefinitions { try journal.keep(definition) }
    }

    /// Every definition hosted (configured machines and Swift Spins of a versioned kind,
    /// machine kinds, versioned Swift kinds), each once.
    var hostedDefinitions: [any StoredDefinition] {
        var seen: Set<ObjectIdentifier> = []
        var definitions: [any StoredDefinition] = []
        for definition in host.spins.compactMap(\.storedDefinition) + (host.factory?.storedDefinitions ?? [])
        where seen.insert(ObjectIdentifier(definition)).inserted {
            definitions.append(definition)
        }
        return definitions
    }
}

extension Journal {
    /// Stores `definition`'s version unless storage holds it as it is, and gives it the
    /// older versions storage holds (`StoredDefinition.take(older:)`).
    package func keep(_ definition: any StoredDefinition) throws {
        let name = definition.storedName
        let stored: [Int: [UInt8]]
        do {
            stored = try store.definitions(named: name)
        } catch {
            throw RecoveryError(spin: nil, problem: "cannot read the stored versions of \(name): \(error)", underlying: error)
        }
        if let kept = stored[definition.version], kept != definition.source {
            logger.warning("\(name): the file of version \(definition.version) changed since this storage first ran it, with the same \"version\": its Spins replay what they recorded through the changed file; give a changed machine the next \"version\" (with \"migrations\" for what it renames) to keep their history as it was")
        }
        if stored[definition.version] != definition.source {
            do {
                try store.storeDefinition(definition.source, named: name, version: definition.version)
            } catch {
                throw RecoveryError(spin: nil, problem: "cannot store version \(definition.version) of \(name): \(error)", underlying: error)
            }
        }
        if let newest = stored.keys.max(), newest > definition.version {
            logger.warning("\(name): the storage holds version \(newest), newer than the version \(definition.version) this server runs: Spins recorded under it stay unrecoverable here")
        }
        let older = stored.filter { $0.key < definition.version }
        let (problem, skipped) = definition.take(older: older)
        if let problem {
            throw RecoveryError(spin: nil, problem: "\(name), version \(definition.version): \(problem)")
        }
        for reason in skipped {
            logger.warning("\(name): \(reason); a Spin recorded under it is unrecoverable")
        }
        if !older.isEmpty {
            let versions = (older.keys.sorted() + [definition.version]).map(String.init).joined(separator: ", ")
            logger.info("\(name): runs version \(definition.version) (stored: \(versions)); a Spin recorded under an older version migrates when it next runs")
        }
    }
}
