#!/usr/bin/env bash
# Spins made over HTTP as fast as wrk asks (issue "Spins on demand": ≥ 20,000 creates/s).
#
#   swift build -c release --product spin-server
#   Benchmarks/create-spins.sh .build/release/spin-server [baseline-binary] [seconds]
#
# For each binary: a server with kind `door` (Config/machines/door.json, names `door-*`,
# Gear `doors-{key}`), `fsync: batch`, on an empty storage directory, pinned to CPU 0;
# wrk pinned to CPU 1 (2 threads, 64 connections) sends `PUT /v1/spins/door-<t>x<n>
# {"kind":"door"}`, every request a new Spin (Benchmarks/wrk/create-doors.lua). Prints
# creates/s, latency p50/p99, the server's CPU µs per create (utime+stime from /proc over
# the run, divided by the creates) and its RSS and descriptors after, then the ratio of
# the first binary's CPU per create to the baseline's.
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:?usage: create-spins.sh BINARY [BASELINE] [SECONDS]}
baseline=${2:-}
seconds=${3:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp Config/machines/door.json "$work/door.json"
cat >"$work/config.json" <<JSON
{"kinds": [{"name": "door", "machine": "door.json", "names": "door-*", "gears": {"doors": "doors-{key}"}}],
 "limits": {"maxConnections": 256}, "storage": {"fsync": "batch"}, "log": {"level": "warning"}}
JSON
ticks=$(getconf CLK_TCK)

run() { # binary label -> prints a line, sets cpu_us
    local bin=$1 label=$2 port=$((18000 + RANDOM % 1000))
    rm -rf "$work/storage" && mkdir "$work/storage"
    taskset -c 0 "$bin" --config "$work/config.json" --storage "$work/storage" --port "$port" >"$work/$label.log" 2>&1 &
    local pid=$!
    for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
    local before; before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    taskset -c 1 wrk -t2 -c64 -d"${seconds}s" -s Benchmarks/wrk/create-doors.lua "http://127.0.0.1:$port" >"$work/$label.wrk"
    local after; after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    local rss; rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
    local fds; fds=$(ls "/proc/$pid/fd" | wc -l)
    kill -TERM "$pid"; wait "$pid" || true
    local requests; requests=$(awk '/requests in/ {print $1}' "$work/$label.wrk")
    local errors; errors=$(awk '/Non-2xx/ {print $NF}' "$work/$label.wrk")
    local rate; rate=$(awk '/Requests\/sec/ {print $2}' "$work/$label.wrk")
    local latency; latency=$(grep '^p50' "$work/$label.wrk")
    cpu_us=$(awk -v t=$((after - before)) -v hz="$ticks" -v n="$requests" 'BEGIN {printf "%.1f", t / hz * 1e6 / n}')
    printf '%-10s creates/s %8s  %s  CPU %6s µs/create  RSS %s KiB  fds %s  non-2xx %s\n' \
        "$label" "$rate" "$latency" "$cpu_us" "$rss" "$fds" "${errors:-0}"
}

run "$binary" this
this=$cpu_us
if [ -n "$baseline" ]; then
    run "$baseline" baseline
    awk -v a="$this" -v b="$cpu_us" 'BEGIN {printf "CPU per create, this / baseline: %.2f\n", a / b}'
fi
