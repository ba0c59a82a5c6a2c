#!/usr/bin/env bash
# The project's test command: the Swift tests (unit, in-process, live on port 0), then
# the end-to-end suites that drive the built server with real clients: curl, Python
# requests and websockets, openssl s_client (Tests/e2e), the example package run as its README says (Tests/examples), headless Chromium
# (Tests/browser), the Dockerfile checks (Tests/docker), the short form of the cluster
# chaos test (Tests/cluster, one test), a smoke run of the benchmark
# harness (Benchmarks/run --smoke, one test), and the Autobahn|Testsuite WebSocket
# conformance cases (Tests/autobahn, each case counted as a test).
set -uo pipefail
cd "$(dirname "$0")/.."
# As root (CI), setup.sh installs what is missing. As any other user nothing can be
# installed: check that setup.sh has run (as root, once) and name what is missing.
# SPIN_TESTS_AS_USER=1 forces the non-root path (for testing this check as root).
if [ "$(id -u)" -eq 0 ] && [ -z "${SPIN_TESTS_AS_USER:-}" ]; then
    bash Tests/setup.sh || exit 1
else
    missing=()
    for pkg in libssl-dev zlib1g-dev libpq-dev libsqlite3-dev postgresql curl openssl chromium chromium-driver testssl.sh slowhttptest; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("Debian package $pkg")
    done
    # The import names of the packages of Tests/*/requirements.txt.
    for module in pytest pytest_timeout requests websockets openapi_spec_validator jsonschema h11 selenium schemathesis yaml; do
        python3 -c "import $module" >/dev/null 2>&1 || missing+=("Python module $module")
    done
    [ -f "${AUTOBAHN_HOME:-$PWD/.build/autobahn-py27}/.installed" ] || missing+=("Autobahn|Testsuite (Tests/autobahn/install.sh)")
    if ((${#missing[@]})); then
        echo "run.sh: not running as root, and these are missing:" >&2
        printf '  %s\n' "${missing[@]}" >&2
        echo "run.sh: run sudo bash Tests/setup.sh once, then run Tests/run.sh again" >&2
        exit 1
    fi
fi

failed=0
passed=0
log=$(mktemp)

# A throwaway PostgreSQL (Tests/postgres/pg.sh) for the postgres backend's Swift tests,
# which are skipped without SPIN_TEST_DATABASE_URL. The e2e suite starts its own.
pg_dir=$(mktemp -d /tmp/spin-pg-XXXXXX)
trap 'Tests/postgres/pg.sh remove "$pg_dir"' EXIT
if url=$(Tests/postgres/pg.sh start "$pg_dir"); then
    export SPIN_TEST_DATABASE_URL="$url"
else
    echo "run.sh: could not start PostgreSQL: the postgres backend's tests fail"; failed=$((failed + 1))
fi

echo "=== swift test"
swift test 2>&1 | tee "$log" | grep -E '^✘|: error: |Test run with' || true
if ! grep -qE 'Test run with [0-9]+ tests? .*passed' "$log"; then
    echo "swift test failed"; tail -n 60 "$log"; failed=$((failed + 1))
else
    passed=$((passed + $(grep -oE 'Test run with [0-9]+' "$log" | grep -oE '[0-9]+' | tail -n 1)))
fi

echo "=== end-to-end suites"
swift build --product spin-server 2>&1 | tail -n 1
export SPIN_SERVER_BIN="$PWD/.build/debug/spin-server"
for suite in Tests/e2e Tests/examples Tests/browser Tests/docker; do
    [ -d "$suite" ] || continue
    echo "--- $suite"
    python3 -m pytest -q -p no:cacheprovider --timeout=120 "$suite" 2>&1 | tee "$log" | tail -n 25
    status=${PIPESTATUS[0]}
    count=$(grep -oE '[0-9]+ passed' "$log" | tail -n 1 | grep -oE '[0-9]+' || echo 0)
    passed=$((passed + count))
    bad=$(grep -oE '[0-9]+ (failed|errors?)' "$log" | awk '{ sum += $1 } END { print sum + 0 }')
    if [ "$status" -ne 0 ]; then failed=$((failed + (bad > 0 ? bad : 1))); fi
done

echo "=== cluster chaos, short form (Tests/cluster/run.sh: three nodes on PostgreSQL, kills, SIGTERMs, pauses)"
if Tests/cluster/run.sh >"$log" 2>&1; then
    passed=$((passed + 1)); grep -E '^(ok|flagged|chaos summary)' "$log"
else
    failed=$((failed + 1)); tail -n 60 "$log"
fi

echo "=== benchmark harness smoke (Benchmarks/run --smoke, debug build: that every scenario runs, not how fast)"
if BENCH_BUILD=debug Benchmarks/run --smoke >"$log" 2>&1; then
    passed=$((passed + 1)); grep -E '^\|' "$log"
else
    failed=$((failed + 1)); tail -n 60 "$log"
fi
echo "=== pinned benchmark smoke (Benchmarks/pinned --smoke: server and wrk on separate CPUs)"
if Benchmarks/pinned --smoke >"$log" 2>&1; then
    passed=$((passed + 1)); grep -E '^\|' "$log"
else
    failed=$((failed + 1)); tail -n 60 "$log"
fi

echo "=== Autobahn|Testsuite (WebSocket conformance, Tests/autobahn)"
bash Tests/autobahn/run.sh 2>&1 | tee "$log" | grep -E '^autobahn: ' || true
summary=$(grep -E '^autobahn: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
if [ -z "$summary" ]; then
    tail -n 30 "$log"; failed=$((failed + 1))
else
    passed=$((passed + $(echo "$summary" | awk '{ print $2 }')))
    failed=$((failed + $(echo "$summary" | awk '{ print $4 }')))
fi

echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
