#!/usr/bin/env bash
# Runs the Autobahn|Testsuite fuzzing client (wstest) against spin-server's WebSocket echo
# (--echo-endpoint, /v1/echo): the same codec, permessage-deflate and limits as the state
# streams. Fails unless every case is OK, NON-STRICT or INFORMATIONAL.
#
# Usage: Tests/autobahn/run.sh              the CI selection (CI_CASES below)
#        Tests/autobahn/run.sh --all        every case but section 9
#        Tests/autobahn/run.sh --section9   section 9 (performance: up to 16 MiB messages), not in CI
#
# SPIN_SERVER_BIN   the server to test (default: swift build, then .build/debug/spin-server)
# AUTOBAHN_REPORTS  where the reports go (default .build/autobahn-reports; open index.html)
# AUTOBAHN_TIMEOUT  seconds wstest may take (default 900)
# AUTOBAHN_PYTHON, AUTOBAHN_HOME: see install.sh (run first; quiet when already installed).
set -euo pipefail
cd "$(dirname "$0")/../.."

# Sections 1-7 (framing, pings, reserved bits, opcodes, fragmentation, UTF-8, closing),
# 10 (miscellaneous) and 12-13 (permessage-deflate). Section 9 is performance.
CI_CASES='["1.*", "2.*", "3.*", "4.*", "5.*", "6.*", "7.*", "10.*", "12.*", "13.*"]'
CI_EXCLUDED='["12.*.8", "12.*.9", "12.*.10", "12.*.13", "12.*.14", "12.*.15", "12.*.16", "12.*.17", "12.*.18",
              "13.*.8", "13.*.9", "13.*.10", "13.*.13", "13.*.14", "13.*.15", "13.*.16", "13.*.17", "13.*.18"]'

mode=${1:-ci}
case "$mode" in
    ci)         cases=$CI_CASES; excluded=$CI_EXCLUDED ;;
    --all)      cases=$CI_CASES; excluded='[]' ;;
    --section9) cases='["9.*"]'; excluded='[]' ;;
    *) echo "usage: $0 [--all | --section9]" >&2; exit 2 ;;
esac

fail() { echo "autobahn: FAILED: $*" >&2; echo "autobahn: 0 passed, 1 failed"; exit 1; }

bash Tests/autobahn/install.sh || fail "the wstest install (Tests/autobahn/install.sh)"
home=${AUTOBAHN_HOME:-$PWD/.build/autobahn-py27}

if [ -z "${SPIN_SERVER_BIN:-}" ]; then
    swift build --product spin-server 2>&1 | tail -n 1
    SPIN_SERVER_BIN=$PWD/.build/debug/spin-server
fi
[ -x "$SPIN_SERVER_BIN" ] || fail "no server binary at $SPIN_SERVER_BIN"

reports=${AUTOBAHN_REPORTS:-$PWD/.build/autobahn-reports}
work=$(mktemp -d)
server_pid=
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# Section 9 sends messages of up to 16 MiB; the default limit (1 MiB) would close them 1009.
limits='{}'
[ "$mode" = --section9 ] && limits='{"maxWebSocketMessageBytes": 20000000}'
cat >"$work/config.json" <<JSON
{
  "listen": { "host": "127.0.0.1", "port": 0 },
  "limits": $limits,
  "storage": { "directory": "$work/data", "fsync": "none" },
  "spins": [ { "name": "counter", "kind": "counter" } ],
  "testing": { "echoEndpoint": true }
}
JSON

"$SPIN_SERVER_BIN" --config "$work/config.json" >"$work/server.log" 2>&1 &
server_pid=$!
port=
for _ in $(seq 1 300); do
    port=$(sed -nE 's|.*listening on http://127\.0\.0\.1:([0-9]+).*|\1|p' "$work/server.log" | head -n 1)
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "the server exited at start-up"; }
    sleep 0.1
done
[ -n "$port" ] || { cat "$work/server.log" >&2; fail "the server did not say which port it listens on"; }

rm -rf "$reports"
cat >"$work/spec.json" <<JSON
{
  "outdir": "$reports",
  "servers": [ { "agent": "spin-server", "url": "ws://127.0.0.1:$port/v1/echo" } ],
  "cases": $cases,
  "exclude-cases": $excluded,
  "exclude-agent-cases": {}
}
JSON

echo "autobahn: wstest -m fuzzingclient against $SPIN_SERVER_BIN (port $port), cases $cases"
started=$(date +%s)
if ! (cd "$work" && timeout "${AUTOBAHN_TIMEOUT:-900}" "$home/python2.7" "$OLDPWD/Tests/autobahn/wstest.py" "$home" \
        -m fuzzingclient -s "$work/spec.json" >"$work/wstest.log" 2>&1); then
    tail -n 30 "$work/wstest.log" >&2
    fail "wstest did not finish (timeout ${AUTOBAHN_TIMEOUT:-900} s or an error above)"
fi
seconds=$(( $(date +%s) - started ))
kill -0 "$server_pid" 2>/dev/null || { tail -n 30 "$work/server.log" >&2; fail "the server died during the run"; }
[ -f "$reports/index.json" ] || fail "wstest wrote no report ($reports/index.json)"

echo "autobahn: wstest took ${seconds} s; reports in $reports/index.html"
if [ "$mode" = --section9 ]; then
    python3 - "$reports/index.json" <<'PY'
import json, sys
cases = {}
for agent_cases in json.load(open(sys.argv[1])).values():
    cases.update(agent_cases)
for case_id in sorted(cases, key=lambda c: [int(p) for p in c.split(".")]):
    print("autobahn: %-8s %-14s %6d ms" % (case_id, cases[case_id]["behavior"], cases[case_id]["duration"]))
PY
fi
python3 Tests/autobahn/report.py "$reports/index.json"
