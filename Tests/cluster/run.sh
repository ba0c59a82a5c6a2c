#!/usr/bin/env bash
# The cluster chaos test (Tests/cluster/README.md): three spin-server nodes on a throwaway
# PostgreSQL under load while a driver kills, terminates, pauses and restarts them and
# pauses the database; then it checks what clients were promised. Usage, from anywhere:
#
#   Tests/cluster/run.sh                 the short form: 80 s of load, about 100 s in all
#   Tests/cluster/run.sh --long          the long form: 20 minutes of load
#   Tests/cluster/run.sh [chaos.py arguments]    e.g. --duration 300 --seed 7 --keep
#
# SPIN_SERVER_BIN=/path/to/spin-server skips the build and tests that binary; otherwise
# this checkout's debug build (SPIN_CHAOS_BUILD=release for the release build, the
# realistic one for the long form). Exit code 0: every check passed; 1: one failed;
# 2: the harness could not run.
set -euo pipefail
cd "$(dirname "$0")/../.."

python3 -c 'import requests, websockets' 2>/dev/null \
    || python3 -m pip install -q --disable-pip-version-check -r Tests/cluster/requirements.txt
if [ -z "${SPIN_SERVER_BIN:-}" ]; then
    configuration="${SPIN_CHAOS_BUILD:-debug}"
    swift build -c "$configuration" --product spin-server
    export SPIN_SERVER_BIN="$PWD/.build/$configuration/spin-server"
fi
arguments=("$@")
if [ "${1:-}" = "--long" ]; then
    arguments=(--duration 1200 "${@:2}")
fi
exec python3 Tests/cluster/chaos.py "${arguments[@]}"
