#!/usr/bin/env bash
# Throughput per node (issue 21, part 5), for SCALING.md: POSTed events/s through a Spin's
# owner and through a node that relays to it, on the PostgreSQL backend
# (`synchronous_commit` on), beside the file backend and beside pgbench's ceiling for the
# journal's INSERT shape, measured side by side in each round on this machine.
#
#   Benchmarks/postgres-nodes.sh [seconds per run=10] [rounds=3]
#
# Starts a throwaway PostgreSQL (Tests/postgres/pg.sh, default postgresql.conf), two
# release spin-server nodes (n1, n2) on one database of it (fsync batch, the counter Spin,
# leaseSeconds 10) and one release spin-server on the file backend (fsync batch). Each
# round then runs, one after the other (the disk's sync rate drifts on a shared machine,
# so every ratio is taken within a round):
#   - pgbench, one connection, the INSERT of Benchmarks/postgres-journal.sh with as many
#     events per INSERT as wrk has connections (every event in flight in one commit: the
#     most a commit can carry under this load): the ceiling (the same since issue 21,
#     when a node wrote every journal through one connection; it commits on three now,
#     PostgresCommitPipeline); and the same with the node's whole statement (the lease
#     fence's row locked FOR SHARE in the INSERT's statement, PostgresSpinStore.insertFenced);
#   - wrk POSTing {"type":"increase"} to /v1/spins/counter/events through the owner, then
#     through the other node (which relays to the owner), then to the file-backend server.
# Per run: events/s, p50/p99 (wrk --latency), for PostgreSQL the events per commit
# (journal rows / transactions the database committed meanwhile, pg_stat_database), the
# CPU time of the spin-server processes on the path per event (/proc/PID/stat; through
# the relay: both nodes), and any answer other than 202 (printed on stderr, by status).
# Then the medians of the per-round ratios.
#
# Pinning (taskset; set one empty to leave it to the scheduler): OWNER_CPUS (the counter's
# owner and the file-backend server, default 0), RELAY_CPUS (the relaying node, default 1),
# PG_CPUS (the PostgreSQL server and its backends, default 0), LOAD_CPUS (wrk and pgbench,
# default 1). On a 2-core machine that gives the owner and its database one core and the
# load generator the other, and the relaying node shares the generator's core, as a
# relaying node on its own machine shares nothing with the owner. RELAY_CPUS=0 puts both
# nodes on one core instead.
# SPIN_SERVER_BIN (default .build/release/spin-server; `swift build -c release --product
# spin-server`), CONNECTIONS (wrk's, default 64), THREADS (wrk's, default 2), BENCH_PORT
# (first of three ports, default 19700). Needs wrk, taskset and Debian's postgresql.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

seconds=${1:-10}
rounds=${2:-3}
connections=${CONNECTIONS:-64}
threads=${THREADS:-2}
base_port=${BENCH_PORT:-19700}
owner_cpus=${OWNER_CPUS-0}
relay_cpus=${RELAY_CPUS-1}
pg_cpus=${PG_CPUS-0}
load_cpus=${LOAD_CPUS-1}
server_bin=${SPIN_SERVER_BIN:-$root/.build/release/spin-server}
for tool in wrk pgbench psql taskset python3 curl; do
    command -v "$tool" >/dev/null || { echo "$tool is missing" >&2; exit 1; }
done
[ -x "$server_bin" ] || { echo "no $server_bin: swift build -c release --product spin-server" >&2; exit 1; }

pinned() { # cpus command...: the command under taskset unless cpus is empty
    local cpus=$1
    shift
    if [ -n "$cpus" ]; then taskset -c "$cpus" "$@"; else "$@"; fi
}
pin_process() { # cpus pid: every thread of a running process
    [ -z "$1" ] || taskset -a -p -c "$1" "$2" >/dev/null
}

work=$(mktemp -d /tmp/spin-pgnodes-XXXXXX)
chmod 755 "$work"   # the database server runs as the postgres user when this runs as root
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    Tests/postgres/pg.sh remove "$work/pg" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

url=$(Tests/postgres/pg.sh start "$work/pg")
# The postmaster and its processes now; the backends it forks later inherit the mask.
postmaster=$(head -n 1 "$work/pg/data/postmaster.pid")
for pid in $postmaster $(pgrep -P "$postmaster"); do pin_process "$pg_cpus" "$pid"; done
psql -q "$url" -c "CREATE DATABASE spin_nodes" >/dev/null
cluster_url="${url%/*}/spin_nodes"

echo "PostgreSQL $(psql -At "$url" -c 'SHOW server_version') (synchronous_commit $(psql -At "$url" -c 'SHOW synchronous_commit')), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "pinning: owner and file server on CPU ${owner_cpus:-any}, relaying node on CPU ${relay_cpus:-any}, PostgreSQL on CPU ${pg_cpus:-any}, wrk and pgbench on CPU ${load_cpus:-any}; wrk -t$threads -c$connections, ${seconds} s per run, $rounds rounds"
fsync_test=$(ls -d /usr/lib/postgresql/*/bin/pg_test_fsync 2>/dev/null | sort -V | tail -n 1)
if [ -n "$fsync_test" ]; then
    echo "disk: $("$fsync_test" -s 2 -f "$work/fsync-test" | grep -m 1 -E '^\s+fdatasync' | awk '{print $2, $3}') fdatasync of one 8 kB write (pg_test_fsync -s 2)"
    rm -f "$work/fsync-test"
fi
echo "spin-server: $server_bin (built $(date -u -r "$server_bin" '+%Y-%m-%d %H:%M UTC'); this checkout at $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'))"
echo

# pgbench's tables: the journal's as migration 1 makes it, under another name, and a
# lease row for the fence to lock.
psql -q -v ON_ERROR_STOP=1 "$url" <<'SQL'
SET client_min_messages TO warning;
CREATE TABLE spin_journal_bench (spin text NOT NULL, sequence bigint NOT NULL, event bytea NOT NULL,
                                 batch_end boolean NOT NULL, PRIMARY KEY (spin, sequence));
CREATE SEQUENCE spin_journal_bench_sequence;
CREATE TABLE spin_leases_bench (spin text PRIMARY KEY, node text NOT NULL, epoch bigint NOT NULL,
                                expires_at timestamptz NOT NULL);
INSERT INTO spin_leases_bench VALUES ('spin-1', 'n1', 1, 'infinity');
SQL
rows="FROM unnest(ARRAY(SELECT nextval('spin_journal_bench_sequence') FROM generate_series(1, (:batch)::int)),
            array_fill('\\x7b2274797065223a22696e637265617365227d'::bytea, ARRAY[(:batch)::int]),
            array_fill(false, ARRAY[(:batch)::int - 1]) || true) AS r(sequence, event, batch_end)"
cat >"$work/insert.sql" <<SQL
INSERT INTO spin_journal_bench (spin, sequence, event, batch_end)
SELECT 'spin-1', r.sequence, r.event, r.batch_end $rows;
SQL
cat >"$work/fenced.sql" <<SQL
WITH lease AS (SELECT 1 FROM spin_leases_bench WHERE spin = 'spin-1' AND node = 'n1' AND epoch = 1 AND expires_at > now() FOR SHARE),
stored AS (INSERT INTO spin_journal_bench (spin, sequence, event, batch_end)
           SELECT 'spin-1', r.sequence, r.event, r.batch_end $rows WHERE EXISTS (SELECT 1 FROM lease) RETURNING 1)
SELECT count(*) FROM stored;
SQL
results=$work/results
: >"$results"
pgbench_run() { # label script batch
    local out tps latency
    out=$(pinned "$load_cpus" pgbench -n -M prepared -T "$seconds" -c 1 -j 1 -D batch="$3" -f "$work/$2" "$url" 2>&1) \
        || { echo "$out" >&2; exit 1; }
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out")
    latency=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")
    # label events/s p50(mean) p99(-) events-per-commit cpu(-)
    awk -v l="$1" -v t="$tps" -v b="$3" -v m="$latency" 'BEGIN { printf "%s %.0f %s - %s -\n", l, t * b, m, b }' | tee -a "$results" >&2
}

# The servers.
start_server() { # name port cpus storage-json cluster-json
    cat >"$work/$1.json" <<CONF
{
  "listen": { "host": "127.0.0.1", "port": $2 },
  "limits": { "maxConnections": 30000, "inbox": 4096, "streamQueue": 64 },
  "storage": { $4, "fsync": "batch" },
  "log": { "level": "warning", "format": "text" },
  $5
  "spins": [ { "name": "counter", "kind": "counter" } ]
}
CONF
    local pin=()
    [ -n "$3" ] && pin=(taskset -c "$3")
    "${pin[@]}" "$server_bin" --config "$work/$1.json" >"$work/$1.log" 2>&1 &   # not in a function: $! is the server
    pids+=($!)
    eval "pid_$1=$!"
}
port_n1=$base_port
port_n2=$((base_port + 1))
port_file=$((base_port + 2))
start_server n1 "$port_n1" "$owner_cpus" "\"backend\": \"postgres\", \"url\": \"$cluster_url\"" '"cluster": { "node": "n1", "leaseSeconds": 10 },'
start_server n2 "$port_n2" "$owner_cpus" "\"backend\": \"postgres\", \"url\": \"$cluster_url\"" '"cluster": { "node": "n2", "leaseSeconds": 10 },'
start_server file "$port_file" "$owner_cpus" "\"directory\": \"$work/storage-file\"" ''

# Until both nodes see both live and agree on the counter's owner, which answers.
owner_port=""
relay_port=""
for _ in $(seq 200); do
    ports=$(python3 - "$port_n1" "$port_n2" <<'PY' 2>/dev/null || true
import json, sys, urllib.request
ports = dict(zip(["n1", "n2"], sys.argv[1:]))
views = []
for port in ports.values():
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/cluster", timeout=2) as r:
        views.append(json.load(r))
owners = [{s: n["node"] for n in v["nodes"] if n["live"] for s in n["spins"]} for v in views]
live = [sorted(n["node"] for n in v["nodes"] if n["live"]) for v in views]
owner = owners[0].get("counter")
if owner and all(o.get("counter") == owner for o in owners) and all(l == ["n1", "n2"] for l in live):
    for port in ports.values():
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/spins/counter", timeout=2) as r:
            assert r.status == 200
    print(ports[owner], [p for n, p in ports.items() if n != owner][0])
PY
)
    if [ -n "$ports" ]; then
        read -r owner_port relay_port <<<"$ports"
        break
    fi
    sleep 0.2
done
[ -n "$owner_port" ] || { echo "the two nodes did not settle" >&2; cat "$work"/n*.log >&2; exit 1; }
if [ "$owner_port" = "$port_n1" ]; then owner_pid=$pid_n1 relay_pid=$pid_n2; else owner_pid=$pid_n2 relay_pid=$pid_n1; fi
pin_process "$relay_cpus" "$relay_pid"
for _ in $(seq 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port_file/v1/spins/counter")" = 200 ] && break
    sleep 0.1
done

cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"type":"increase"}'
wrk.headers["Content-Type"] = "application/json"
response = function(status, headers, body)
    if status ~= 202 then io.stderr:write("answer " .. status .. ": " .. body .. "\n") end
end
LUA

db_counts() { # -> "commits rows" of the cluster's database so far
    psql -At -F' ' "$cluster_url" -c "SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
                                             (SELECT coalesce(max(sequence), 0) FROM spin_journal WHERE spin = 'counter')"
}
cpu_ticks() { # pids... -> their utime + stime so far, in clock ticks
    local total=0 pid
    for pid in "$@"; do total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat"))); done
    echo "$total"
}
measure() { # label port pids-whose-CPU-counts...
    local out before after cpu_before cpu_after label=$1 port=$2
    shift 2
    pinned "$load_cpus" wrk -t"$threads" -c"$connections" -d2s -s "$work/post.lua" "http://127.0.0.1:$port/v1/spins/counter/events" \
        >/dev/null 2>"$work/wrk.err"
    before=$(db_counts)
    cpu_before=$(cpu_ticks "$@")
    out=$(pinned "$load_cpus" wrk -t"$threads" -c"$connections" -d"${seconds}s" --latency -s "$work/post.lua" \
        "http://127.0.0.1:$port/v1/spins/counter/events" 2>"$work/wrk.err")
    cpu_after=$(cpu_ticks "$@")
    after=$(db_counts)
    sed 's/"requestId":"[^"]*"//' "$work/wrk.err" | sort | uniq -c | sed "s/^/  $label: /" >&2
    printf '%s\n' "$out" >"$work/wrk.out"
    python3 - "$label" "$before" "$after" "$work/wrk.out" "$((cpu_after - cpu_before))" "$(getconf CLK_TCK)" <<'PY' | tee -a "$results" >&2
import re, sys
label, before, after = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
ticks, hertz = int(sys.argv[5]), int(sys.argv[6])
out = open(sys.argv[4]).read()
def ms(text):
    value, unit = re.match(r"([0-9.]+)(us|ms|s)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
rate = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))
p50 = ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))
p99 = ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
socket = re.search(r"Socket errors: (.*)", out)
commits = int(after[0]) - int(before[0])
rows = int(after[1]) - int(before[1])
per_commit = f"{rows / commits:.1f}" if label != "file" and commits > 0 else "-"
total = float(re.search(r"(\d+) requests in", out).group(1))
cpu = ticks / hertz / total * 1e6 if total else 0
problems = (f" non-2xx {errors.group(1)}" if errors else "") + (f" socket errors: {socket.group(1)}" if socket else "")
print(f"{label} {rate:.0f} {p50:.2f} {p99:.2f} {per_commit} {cpu:.0f}{problems}")
PY
}
for round in $(seq 1 "$rounds"); do
    echo "round $round (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    echo "round" >>"$results"
    pgbench_run ceiling insert.sql "$connections"
    pgbench_run fenced fenced.sql "$connections"
    measure owner "$owner_port" "$owner_pid"
    measure relay "$relay_port" "$owner_pid" "$relay_pid"
    measure file "$port_file" "$pid_file"
done

python3 - "$results" <<'PY'
import statistics, sys
rounds = []
for line in open(sys.argv[1]):
    parts = line.split()
    if parts == ["round"]:
        rounds.append({})
        continue
    rounds[-1][parts[0]] = parts
print("| round | run | events/s | p50 ms | p99 ms | events per commit | commits/s | spin-server CPU µs per event | other answers |")
print("|---|---|---|---|---|---|---|---|---|")
names = {"ceiling": "pgbench, INSERT alone (mean latency as p50)", "fenced": "pgbench, the node's fenced INSERT",
         "owner": "postgres, through the owner", "relay": "postgres, through a relaying node", "file": "file backend"}
for number, runs in enumerate(rounds, 1):
    for label in ["ceiling", "fenced", "owner", "relay", "file"]:
        p = runs[label]
        commits = f"{float(p[1]) / float(p[4]):.0f}" if p[4] != "-" else "-"
        print(f"| {number} | {names[label]} | {p[1]} | {p[2]} | {p[3]} | {p[4]} | {commits} | {p[5]} | {' '.join(p[6:]) or '-'} |")
def ratio(f):
    values = [f(r) for r in rounds]
    return f"{statistics.median(values):.2f} ({', '.join(f'{v:.2f}' for v in values)})"
num = lambda r, label, i: float(r[label][i])
print()
print("| ratio | median (per round) | target |")
print("|---|---|---|")
print(f"| owner events/s ÷ pgbench ceiling events/s | {ratio(lambda r: num(r, 'owner', 1) / num(r, 'ceiling', 1))} | ≥ 0.5 |")
print(f"| owner commits/s ÷ pgbench ceiling commits/s | {ratio(lambda r: (num(r, 'owner', 1) / num(r, 'owner', 4)) / (num(r, 'ceiling', 1) / num(r, 'ceiling', 4)))} | |")
print(f"| relay p99 ÷ owner p99 | {ratio(lambda r: num(r, 'relay', 3) / num(r, 'owner', 3))} | ≤ 1.3 |")
print(f"| relay p50 ÷ owner p50 | {ratio(lambda r: num(r, 'relay', 2) / num(r, 'owner', 2))} | |")
print(f"| relay events/s ÷ owner events/s | {ratio(lambda r: num(r, 'relay', 1) / num(r, 'owner', 1))} | |")
print(f"| postgres (owner) events/s ÷ file events/s | {ratio(lambda r: num(r, 'owner', 1) / num(r, 'file', 1))} | |")
PY
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
