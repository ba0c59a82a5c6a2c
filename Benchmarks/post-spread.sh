#!/usr/bin/env bash
# Events spread over many Spins against events to one (issue "Spins on demand": POSTs
# spread uniformly over 100,000 Spins cost ≤ 1.5x the CPU per event of POSTs to one).
#
#   swift build -c release --product spin-server
#   Benchmarks/post-spread.sh .build/release/spin-server [spins] [seconds]
#
# A server with kind `door` made on its first event (`onEvent`), `fsync: batch`,
# `limits.idleSpinSeconds` 3600, pinned to CPU 0; wrk on CPU 1 (2 threads, 64
# connections), each request `[{"type":"OPEN"},{"type":"CLOSE"}]` (two events applied).
# First every door is made and woken, once each, then for `seconds` each: POSTs to doors
# drawn uniformly from all of them, and POSTs to door-1 alone (Benchmarks/wrk/post-doors.lua).
# Prints requests/s, p50/p99, the server's CPU µs per request and RSS after each phase,
# and the ratio spread / one.
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:?usage: post-spread.sh BINARY [SPINS] [SECONDS]}
spins=${2:-100000}
seconds=${3:-10}
work=$(mktemp -d)
port=$((19000 + RANDOM % 1000))
cp Config/machines/door.json "$work/door.json"
cat >"$work/config.json" <<JSON
{"kinds": [{"name": "door", "machine": "door.json", "names": "door-*", "gears": {"doors": "doors-{key}"}, "create": "onEvent"}],
 "limits": {"maxConnections": 256, "idleSpinSeconds": 3600}, "storage": {"fsync": "batch"}, "log": {"level": "warning"}}
JSON
taskset -c 0 "$binary" --config "$work/config.json" --storage "$work/storage" --port "$port" >"$work/server.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }

phase() { # label script spins seconds
    local before; before=$(cpu)
    SPINS=$3 START=${START:-0} ORDER=${ORDER:-0} taskset -c 1 wrk -t2 -c64 -d"$4s" -s "$2" "http://127.0.0.1:$port" >"$work/$1.wrk"
    local after; after=$(cpu)
    local requests; requests=$(awk '/requests in/ {print $1}' "$work/$1.wrk")
    local rate; rate=$(awk '/Requests\/sec/ {print $2}' "$work/$1.wrk")
    local errors; errors=$(awk '/Non-2xx/ {print $NF}' "$work/$1.wrk")
    local latency; latency=$(grep '^p50' "$work/$1.wrk" || true)
    local rss; rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
    cpu_us=$(awk -v t=$((after - before)) -v hz="$ticks" -v n="$requests" 'BEGIN {printf "%.1f", t / hz * 1e6 / n}')
    printf '%-8s requests/s %8s  %-28s CPU %6s µs/request  RSS %s KiB  non-2xx %s\n' \
        "$1" "$rate" "$latency" "$cpu_us" "$rss" "${errors:-0}"
}

# Every door made and woken: rounds of 5 s, each starting where the last one stopped.
done_requests=0
while [ "$done_requests" -lt "$spins" ]; do
    ORDER=1 START=$done_requests phase warm Benchmarks/wrk/post-doors.lua "$spins" 5
    done_requests=$((done_requests + $(awk '/requests in/ {print $1}' "$work/warm.wrk")))
done
phase spread Benchmarks/wrk/post-doors.lua "$spins" "$seconds"
spread=$cpu_us
phase one Benchmarks/wrk/post-doors.lua 1 "$seconds"
awk -v a="$spread" -v b="$cpu_us" 'BEGIN {printf "CPU per request, spread over the doors / one door: %.2f\n", a / b}'
