#!/usr/bin/env bash
# A container's CPU limit (issue 36, "every core"): the server in a control group limited
# to LIMIT CPUs (default 1) on a host with more, as `docker run --cpus=1` makes it, beside
# the Hummingbird peer and, optionally, an earlier build, in alternating rounds.
#
#   swift build -c release --product spin-server
#   swift build --package-path Benchmarks -c release --product hummingbird-peer
#   sudo Benchmarks/cpu-limit.sh [seconds=5] [rounds=3]
#
# Each contender runs in a new cgroup (v1's cpu controller: cpu.cfs_quota_us over
# cpu.cfs_period_us; else v2's cpu.max) with the limit, in a mount namespace where the
# group is bind-mounted over the cgroup file system's cpu directory (v2: its root), as a
# container runtime shows a container its own group; its affinity is every CPU. wrk
# (-t1 -c64, 16 counters, Benchmarks/wrk/spread-counters.lua) runs on LOAD_CPUS (default 1) and
# competes with the server's threads there, as a neighbour would. Per run: requests/s,
# p50/p99, the server's CPU µs per request, its event loop threads, and the CFS
# throttling the group had (periods throttled / periods, from cpu.stat).
# SPIN_SERVER_BIN (default .build/release/spin-server), BENCH_BASELINE_BIN (an earlier
# build, optional), PEER_BIN (default Benchmarks/.build/release/hummingbird-peer; empty to
# leave the peer out), FSYNC (none; batch), BENCH_PORT (19800). Needs root, wrk, unshare.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${1:-5}
rounds=${2:-3}
limit=${LIMIT:-1}
fsync=${FSYNC:-none}
port=${BENCH_PORT:-19800}
load_cpus=${LOAD_CPUS:-1}
server_bin=${SPIN_SERVER_BIN:-$root/.build/release/spin-server}
baseline_bin=${BENCH_BASELINE_BIN:-}
peer_bin=${PEER_BIN-$root/Benchmarks/.build/release/hummingbird-peer}
spins=16
[ "$(id -u)" = 0 ] || { echo "making a control group needs root" >&2; exit 1; }
for tool in wrk unshare taskset curl python3; do command -v "$tool" >/dev/null || { echo "$tool is missing" >&2; exit 1; }; done
[ -x "$server_bin" ] || { echo "no $server_bin: swift build -c release --product spin-server" >&2; exit 1; }

if [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
    hierarchy=/sys/fs/cgroup/cpu version=1
elif grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
    hierarchy=/sys/fs/cgroup version=2
else
    echo "no writable cgroup with a cpu controller" >&2; exit 1
fi
work=$(mktemp -d)
group=$hierarchy/spin-bench-$$
mkdir "$group"
quota=$(python3 -c "print(int($limit * 100000))")
if [ $version = 1 ]; then echo 100000 >"$group/cpu.cfs_period_us"; echo "$quota" >"$group/cpu.cfs_quota_us"
else echo "$quota 100000" >"$group/cpu.max"; fi
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rmdir "$group" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

names=($(seq -f 'c%g' 0 $((spins - 1))))
spin_list=$(printf '{ "name": "%s", "kind": "counter" },' "${names[@]}")
throttled() { # periods throttled and periods of the group
    if [ $version = 1 ]; then awk '/^nr_periods/ {p=$2} /^nr_throttled/ {t=$2} END {print t, p}' "$group/cpu.stat"
    else awk '/^nr_periods/ {p=$2} /^nr_throttled/ {t=$2} END {print t, p}' "$group/cpu.stat"; fi
}

run() { # name binary
    local name=$1 bin=$2 command
    rm -rf "$work/storage"
    cat >"$work/c.json" <<CONF
{ "listen": { "host": "127.0.0.1", "port": $port }, "limits": { "inbox": 4096, "maxConnections": 1024 },
  "storage": { "directory": "$work/storage", "fsync": "$fsync" }, "log": { "level": "warning" },
  "spins": [ ${spin_list%,} ] }
CONF
    if [ "$name" = peer ]; then command=("$bin" --port "$port" --log-level warning $(printf -- '--spin %s ' "${names[@]}"))
    else command=("$bin" --config "$work/c.json"); fi
    # Into the group, then a mount namespace that shows the group as the cpu hierarchy.
    (echo $BASHPID >"$group/cgroup.procs"
     exec unshare -m sh -c 'mount --bind "$0" "$1" && shift && exec "$@"' "$group" "$hierarchy" "${command[@]}" \
        >"$work/$name.log" 2>&1) &
    pid=$!
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
    taskset -c "$load_cpus" wrk -t1 -c64 -d1s -s Benchmarks/wrk/spread-counters.lua "http://127.0.0.1:$port/" -- $spins >/dev/null
    local t0 s0 out t1 s1
    t0=$(awk '{print $14 + $15}' "/proc/$pid/stat"); s0=$(throttled)
    out=$(taskset -c "$load_cpus" wrk --latency -t1 -c64 -d"${seconds}s" -s Benchmarks/wrk/spread-counters.lua "http://127.0.0.1:$port/" -- $spins)
    t1=$(awk '{print $14 + $15}' "/proc/$pid/stat"); s1=$(throttled)
    local loops
    loops=$(for task in /proc/$pid/task/*; do cat "$task/comm"; done | grep -c -E '^(spin-loop|NIO-)' || true)
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
    python3 - "$name" "$round" "$t1" "$t0" "$(getconf CLK_TCK)" "$s0" "$s1" "$loops" <<PY
import re, sys
name, rnd, t1, t0, hz, s0, s1, loops = sys.argv[1:]
out = """$out"""
requests = int(re.search(r"(\d+) requests in", out).group(1))
rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1); p99 = re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1)
non = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
(t0_, p0), (t1_, p1) = map(int, s0.split()), map(int, s1.split())
cpu = (int(t1) - int(t0)) / int(hz) * 1e6 / requests
print(f"| {rnd} | {name} | {rate:.0f} | {p50} | {p99} | {cpu:.1f} | {loops} | {t1_ - t0_}/{p1 - p0} | {non.group(1) if non else 0} |")
PY
}

echo "cgroup v$version, limit $limit CPUs of $(nproc), fsync $fsync, $seconds s per run, wrk on CPU $load_cpus"
echo "| round | contender | requests/s | p50 | p99 | CPU µs/request | loop threads | periods throttled | non-2xx |"
echo "|---|---|---|---|---|---|---|---|---|"
for round in $(seq "$rounds"); do
    run ours "$server_bin"
    [ -n "$baseline_bin" ] && run baseline "$baseline_bin"
    [ -n "$peer_bin" ] && [ -x "$peer_bin" ] && run peer "$peer_bin"
done
