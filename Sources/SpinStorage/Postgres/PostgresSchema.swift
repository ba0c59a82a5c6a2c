/// The tables of the PostgreSQL backend and the migrations that make them (docs/OPERATIONS.md,
/// "PostgreSQL"). `spin_schema_version` holds one row per applied migration; start-up
/// applies the missing ones in order, in one transaction, under a transaction-level
/// advisory lock so that servers starting together against one database do not race.
package enum PostgresSchema {
    /// The advisory lock keys of spin-server: `(namespace, key)` for `pg_advisory_*(int4, int4)`.
    /// The namespace is "SPIN" in ASCII.
    package static let lockNamespace: Int32 = 0x5350_494E
    /// Held (transaction-level) while migrating.
    package static let migrationLock: Int32 = 1
    /// Held (session-level) by the one server of a database in single-server mode.
    package static let singleServerLock: Int32 = 2
    /// Held (transaction-level) by each journal commit that writes Gear outbox rows,
    /// until it commits, so that outbox positions are handed out in commit order.
    package static let outboxLock: Int32 = 3

    /// The channel a Gear outbox insert notifies (at its commit).
    package static let outboxChannel = "spin_gear_outbox"

    /// The channel `announce` and `leave` notify: the node or lease rows changed.
    package static let clusterChannel = "spin_cluster"

    /// Migrations by version, in order; version N is `migrations[N - 1]`. Never edit a
    /// released one: add the next.
    package static let migrations: [String] = [
        // 1: journals, snapshots, epochs, suspensions; and the tables of clusters: the
        // ownership lease of each Spin (with its fencing epoch; per partition since 5)
        // and the live nodes.
        """
        CREATE TABLE spin_journal (
            spin text NOT NULL,
            sequence bigint NOT NULL,
            event bytea NOT NULL,
            batch_end boolean NOT NULL,
            PRIMARY KEY (spin, sequence)
        );
        CREATE TABLE spin_snapshots (
            spin text PRIMARY KEY,
            document bytea NOT NULL,
            written_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE spin_epochs (
            spin text PRIMARY KEY,
            epoch text NOT NULL
        );
        CREATE TABLE spin_suspensions (
            spin text PRIMARY KEY,
            document bytea NOT NULL
        );
        CREATE TABLE spin_leases (
            spin text PRIMARY KEY,
            node text NOT NULL,
            epoch bigint NOT NULL,
            expires_at timestamptz NOT NULL
        );
        CREATE TABLE spin_nodes (
            node text PRIMARY KEY,
            advertise text,
            heartbeat_at timestamptz,
            clean boolean NOT NULL DEFAULT false
        );
        """,
        // 2: the Gear outbox of clusters: the Gear events nodes publish to one another,
        // numbered in commit order.
        """
        CREATE TABLE spin_gear_outbox (
            position bigserial PRIMARY KEY,
            gear text NOT NULL,
            node text NOT NULL,
            payload bytea NOT NULL,
            published_at timestamptz NOT NULL DEFAULT now()
        );
        """,
        // 3: empty now. It made a table of the example app (`spin_example_sessions`),
        // which the app makes itself at its first use since storage stopped knowing it;
        // databases migrated before keep the table. Kept so that the versions after it
        // keep their numbers.
        "-- 3: nothing (the example app makes its own table)",
        // 4: the Gear outbox becomes each Spin's transactional outbox: a row is written in
        // the transaction of the journal batch whose transition propagated it, with the
        // sending Spin, its place in that Spin's outbox and the transition's sequence.
        // Rows of version 2 (no sender) were delivered when they were published; nodes
        // skip them.
        """
        ALTER TABLE spin_gear_outbox
            ADD COLUMN sender text,
            ADD COLUMN sender_position bigint,
            ADD COLUMN cause bigint;
        CREATE UNIQUE INDEX spin_gear_outbox_sender ON spin_gear_outbox (sender, sender_position);
        CREATE INDEX spin_gear_outbox_gear ON spin_gear_outbox (gear, position);
        """,
        // 5: leases per partition (`SpinPartitions`) instead of per Spin, so that a lease
        // period's statements grow with nodes and partitions, not with Spins; the
        // cluster's settings, of which the partition count every node must agree on; and
        // the Spins made at run time (`spin_made`: kind, where each joined its Gears, where
        // its outbox starts, and whether it rests, with the sequence and consumption it
        // rests at), names in byte order for `GET /v1/spins` pages, with an index of those
        // that do not rest (what a node serving a partition brings up).
        // The per-Spin lease table goes: a node of the previous release still running
        // against this database can then neither renew a lease nor pass its journal's
        // fence, so it stops writing at once (it cannot serve a Spin beside a node that
        // owns the Spin's partition). The unique index on (partition, epoch) makes the
        // epoch a key column: a takeover's UPDATE (a new epoch) waits for the writes that
        // hold the row `FOR KEY SHARE` (`LeaseFence`), a renewal's (only expires_at) does not.
        """
        CREATE TABLE spin_partitions (
            partition integer PRIMARY KEY,
            node text NOT NULL,
            epoch bigint NOT NULL,
            expires_at timestamptz NOT NULL
        );
        CREATE UNIQUE INDEX spin_partitions_epoch ON spin_partitions (partition, epoch);
        CREATE TABLE spin_cluster_settings (
            name text PRIMARY KEY,
            value text NOT NULL
        );
        CREATE TABLE spin_made (
            name text COLLATE "C" PRIMARY KEY,
            kind text NOT NULL,
            joined text NOT NULL,
            outbox_base bigint NOT NULL,
            resting boolean NOT NULL,
            sequence bigint NOT NULL,
            consumed text NOT NULL,
            made_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX spin_made_awake ON spin_made (name) WHERE NOT resting;
        DROP TABLE spin_leases;
        """,
        // 6: every version of each machine definition a node has run (a kind's, or a
        // configured Spin's), so that any node replays a Spin's events through the
        // definition they were applied with; and the versions each node runs, so that
        // during a rolling upgrade, and of each partition the newest versions a node
        // that held it ran, so that a partition is only given to a node whose versions
        // are at least those (`Placement.owner(of:among:recorded:)`).
        """
        ALTER TABLE spin_nodes ADD COLUMN definitions text NOT NULL DEFAULT '';
        ALTER TABLE spin_partitions ADD COLUMN definitions text NOT NULL DEFAULT '';
        CREATE TABLE spin_definitions (
            name text NOT NULL,
            version integer NOT NULL,
            source bytea NOT NULL,
            stored_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (name, version)
        );
        """,
        // 7: the older history of Spins (`storage.history` days or all), in segments
        // (`HistorySegment`) beside the journal.
        """
        CREATE TABLE spin_history (
            spin text NOT NULL,
            last bigint NOT NULL,
            first bigint NOT NULL,
            last_time bigint NOT NULL,
            base bytea,
            records bytea NOT NULL,
            PRIMARY KEY (spin, last)
        );
        CREATE INDEX spin_history_time ON spin_history (last_time);
        """,
    ]

    /// The version this server's tables have once migrated.
    package static var currentVersion: Int { migrations.count }

    /// Brings the database's tables to `currentVersion`; returns the version found before.
    /// Throws when the database is newer than this server (a newer spin-server migrated it).
    @discardableResult
    package static func migrate(_ connection: PostgresConnection) throws -> Int {
        try connection.transaction {
            _ = try connection.query("SELECT pg_advisory_xact_lock($1::int4, $2::int4)",
                                     [.int64(Int64(lockNamespace)), .int64(Int64(migrationLock))])
            try connection.execute("""
                CREATE TABLE IF NOT EXISTS spin_schema_version (
                    version integer PRIMARY KEY,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
            let found = Int(try connection.query("SELECT coalesce(max(version), 0)::int8 FROM spin_schema_version").int(0, 0) ?? 0)
            guard found <= currentVersion else {
                throw SchemaTooNew(found: found, known: currentVersion)
            }
            for version in (found + 1)..<(currentVersion + 1) {
                try connection.execute(migrations[version - 1])
                _ = try connection.query("INSERT INTO spin_schema_version (version) VALUES ($1::int4)", [.int64(Int64(version))])
            }
            return found
        }
    }

    /// The database was migrated by a newer spin-server.
    package struct SchemaTooNew: Error, CustomStringConvertible {
        package let found: Int
        package let known: Int
        package var description: String {
            "the database's spin-server tables are at schema version \(found), newer than this server knows (\(known)): run a spin-server at least as new as the one that migrated it"
        }
    }
}
