#!/usr/bin/env bash
# How fast PostgreSQL takes the journal's writes: pgbench runs the shape of
# PostgresSpinStore's commit (one INSERT ... SELECT ... FROM unnest(int8[], bytea[],
# bool[]) per batch into spin_journal, primary key (spin, sequence)) against a throwaway
# server started by Tests/postgres/pg.sh, for SCALING.md.
#
#   Benchmarks/postgres-journal.sh [seconds per run=10]
#
# Prints one Markdown row per run: synchronous_commit, connections (a spin-server node
# commits its journals on three, PostgresSpinStore.commitConnections: one node is up to
# three connections committing at once, more nodes more), Spins written,
# events per INSERT, INSERTs (commits) per second, events per second, mean latency.
# DATABASE_URL=postgresql://... measures an existing database instead (it must allow
# CREATE TABLE; the script makes and drops spin_journal_bench there). Needs the Debian
# package postgresql (pgbench, psql, the server).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-10}
command -v pgbench >/dev/null || { echo "pgbench is missing: apt-get install -y postgresql" >&2; exit 1; }

work=$(mktemp -d /tmp/spin-pgbench-XXXXXX)
chmod 755 "$work"   # the server runs as the postgres user when this runs as root
started=""
cleanup() {
    [ -n "$started" ] && Tests/postgres/pg.sh remove "$work/pg" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
if [ -z "${DATABASE_URL:-}" ]; then
    DATABASE_URL=$(Tests/postgres/pg.sh start "$work/pg")
    started=yes
fi

# spin_journal as migration 1 makes it, under another name; a sequence hands out each
# row's `sequence` so that every run's rows are new, as a Spin's next events are.
psql -q -v ON_ERROR_STOP=1 "$DATABASE_URL" <<'SQL'
SET client_min_messages TO warning;
DROP TABLE IF EXISTS spin_journal_bench;
DROP SEQUENCE IF EXISTS spin_journal_bench_sequence;
CREATE TABLE spin_journal_bench (
    spin text NOT NULL,
    sequence bigint NOT NULL,
    event bytea NOT NULL,
    batch_end boolean NOT NULL,
    PRIMARY KEY (spin, sequence)
);
CREATE SEQUENCE spin_journal_bench_sequence;
SQL

# One commit of a batch of :batch events of 20 bytes ({"type":"increase"} plus a byte)
# to one of :spins Spins, as one statement in autocommit (one transaction).
cat >"$work/journal.sql" <<'SQL'
\set spin random(1, :spins)
INSERT INTO spin_journal_bench (spin, sequence, event, batch_end)
SELECT 'spin-' || (:spin)::int, r.sequence, r.event, r.batch_end
FROM unnest(ARRAY(SELECT nextval('spin_journal_bench_sequence') FROM generate_series(1, (:batch)::int)),
            array_fill('\x7b2274797065223a22696e637265617365227d0a'::bytea, ARRAY[(:batch)::int]),
            array_fill(false, ARRAY[(:batch)::int - 1]) || true) AS r(sequence, event, batch_end);
SQL

echo "PostgreSQL $(psql -At "$DATABASE_URL" -c 'SHOW server_version'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), ${seconds} s per run"
# What bounds a synchronous commit: the disk's sync of one WAL page (same file system as
# the throwaway server's data).
fsync_test=$(ls -d /usr/lib/postgresql/*/bin/pg_test_fsync 2>/dev/null | sort -V | tail -n 1)
if [ -n "$fsync_test" ]; then
    echo "disk: $("$fsync_test" -s 2 -f "$work/fsync-test" | grep -m 1 -E '^\s+fdatasync' | awk '{print $2, $3}') fdatasync of one 8 kB write (pg_test_fsync -s 2)"
    rm -f "$work/fsync-test"
fi
echo
echo "| synchronous_commit | connections | Spins | events per INSERT | INSERTs/s | events/s | mean latency ms |"
echo "|---|---|---|---|---|---|---|"
run() { # sync clients spins batch
    local out tps latency
    out=$(PGOPTIONS="-c synchronous_commit=$1" pgbench -n -M prepared -T "$seconds" -c "$2" -j "$2" \
        -D spins="$3" -D batch="$4" -f "$work/journal.sql" "$DATABASE_URL" 2>&1) \
        || { echo "$out" >&2; exit 1; }
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out")
    latency=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")
    printf '| %s | %s | %s | %s | %.0f | %.0f | %s |\n' "$1" "$2" "$3" "$4" "$tps" "$(awk -v t="$tps" -v b="$4" 'BEGIN { print t * b }')" "$latency"
}
for sync in on off; do
    run "$sync" 1 1 1       # one Spin, one event per commit: the per-Spin floor
    run "$sync" 1 1 16      # one Spin, group commit of 16 events
    run "$sync" 1 1 256     # one Spin, 256 events per commit (a busy Spin's batches)
    run "$sync" 1 64 1      # one node, 64 Spins
    run "$sync" 3 64 1      # three nodes (compose.yaml), 64 Spins
    run "$sync" 3 64 16
    run "$sync" 16 64 1     # sixteen nodes
done
if [ -n "$started" ]; then
    # The cost of one connection on the server: the private memory of a backend that has
    # run the journal INSERT 100 times (a node's journal connection), read while it sleeps.
    for _ in $(seq 1 100); do cat "$work/journal.sql"; done | sed -e 's/^\\set.*$//' \
        -e 's/(:spin)::int/1/; s/(:batch)::int/16/g' >"$work/warm.sql"
    { cat "$work/warm.sql"; echo "SELECT pg_sleep(3);"; } | PGAPPNAME=spin-bench-probe psql -q "$DATABASE_URL" >/dev/null &
    probe=$!
    sleep 2
    pid=$(psql -At "$DATABASE_URL" -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'spin-bench-probe'")
    private=$(awk '/^Private_(Clean|Dirty):/ { kb += $2 } END { print kb }' "/proc/$pid/smaps_rollup")
    wait "$probe"
    echo
    echo "one connection's backend after 100 journal INSERTs: ${private} kB private memory (smaps_rollup)"
fi
echo
echo "rows written: $(psql -At "$DATABASE_URL" -c 'SELECT count(*) FROM spin_journal_bench'), table and index size: $(psql -At "$DATABASE_URL" -c "SELECT pg_size_pretty(pg_total_relation_size('spin_journal_bench'))")"
psql -q "$DATABASE_URL" -c 'DROP TABLE spin_journal_bench; DROP SEQUENCE spin_journal_bench_sequence;'
