#!/usr/bin/env bash
# Runs the Dockerfile's steps outside a container (no Docker engine needed), reading them
# from the Dockerfile itself so the image and CI cannot drift apart:
#   1. the build stage's `swift build ...` command (skipped with --no-build);
#   2. the runtime ENTRYPOINT+CMD with the runtime ENV, from a copy of the image layout
#      (WORKDIR with Config/ beside it; what the runtime stage copies from the build
#      stage's /out, taken from the bin path: the binary and, beside it, every SwiftPM
#      resource bundle, which must all be copied), loopback only: SPIN_HOST is forced to
#      127.0.0.1, SPIN_PORT to a free port, SPIN_STORAGE to a temp dir;
#   3. the HEALTHCHECK command until it passes (bounded);
#   4. the STOPSIGNAL, expecting exit 0 within 10 s (Docker's default stop timeout).
# Exit 0 when all pass. Always stops the server it started.
#   usage: Tests/docker/run-dockerfile-steps.sh [--no-build]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
READ="python3 $ROOT/Tests/docker/dockerfile.py"
STARTUP_TIMEOUT="${STARTUP_TIMEOUT:-30}"

BUILD_CMD="$($READ build)"
if [[ "${1:-}" != "--no-build" ]]; then
    echo "== build: $BUILD_CMD"
    timeout 1800 bash -c "$BUILD_CMD"
fi
BIN_DIR="$(swift build -c release --static-swift-stdlib --product spin-server --show-bin-path)"
BINARY="$BIN_DIR/spin-server"
[[ -x "$BINARY" ]] || { echo "no binary at $BINARY" >&2; exit 1; }

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# The image layout under $WORK/root: WORKDIR /app with Config/ copied in, and what the
# runtime stage's COPY --from=build lines take from /out (the build stage puts there what
# the bin path holds). Copies, not links: Bundle.main is where the binary really is.
mkdir -p "$WORK/app/data" "$WORK/root"
cp -R "$ROOT/Config" "$WORK/app/Config"
while read -r SOURCE DESTINATION; do
    [[ "$SOURCE" == /out/* ]] || { echo "COPY --from=build of $SOURCE: expected a path under /out" >&2; exit 1; }
    mkdir -p "$(dirname "$WORK/root$DESTINATION")"
    cp -R "$BIN_DIR/${SOURCE#/out/}" "$WORK/root$DESTINATION"
done < <($READ copies)

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
ENV_LINES="$($READ env)"
echo "== runtime ENV from the Dockerfile:"; echo "$ENV_LINES"
eval "$ENV_LINES"
export SPIN_HOST=127.0.0.1 SPIN_PORT="$PORT" SPIN_STORAGE="$WORK/app/data"

# ENTRYPOINT is an absolute path in the image; run the same argv under $WORK/root.
read -r -a ARGV <<< "$($READ entrypoint)"
ARGV[0]="$WORK/root${ARGV[0]}"
[[ -x "${ARGV[0]}" ]] || { echo "the runtime stage does not copy the binary to its ENTRYPOINT" >&2; exit 1; }
# Bundle.module falls back to the build directory, so a bundle the image lacks would go
# unnoticed here: check that each one lands beside the binary.
for BUNDLE in "$BIN_DIR"/spin-server_*.resources; do
    [[ -e "$BUNDLE" ]] || continue
    [[ -d "$(dirname "${ARGV[0]}")/$(basename "$BUNDLE")" ]] || {
        echo "the runtime stage does not copy $(basename "$BUNDLE") beside the binary" >&2; exit 1; }
done
echo "== start: ${ARGV[*]} (SPIN_HOST=$SPIN_HOST SPIN_PORT=$SPIN_PORT)"
(cd "$WORK/app" && exec "${ARGV[@]}") > "$WORK/server.log" 2>&1 &
SERVER_PID=$!

HEALTH="$($READ healthcheck)"
echo "== healthcheck: $HEALTH"
deadline=$((SECONDS + STARTUP_TIMEOUT))
until eval "$HEALTH"; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "server exited during start-up:" >&2; cat "$WORK/server.log" >&2; exit 1
    fi
    if (( SECONDS >= deadline )); then
        echo "HEALTHCHECK did not pass within ${STARTUP_TIMEOUT}s" >&2; cat "$WORK/server.log" >&2; exit 1
    fi
    sleep 0.5
done
echo "healthy"

SIGNAL="$($READ stopsignal)"
echo "== stop with $SIGNAL"
kill -s "${SIGNAL#SIG}" "$SERVER_PID"
status=0
for _ in $(seq 1 100); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "server still running 10 s after $SIGNAL" >&2; cat "$WORK/server.log" >&2; exit 1
fi
wait "$SERVER_PID" || status=$?
SERVER_PID=""
if (( status != 0 )); then
    echo "server exited with $status after $SIGNAL" >&2; cat "$WORK/server.log" >&2; exit 1
fi
echo "stopped cleanly (exit 0)"
echo "1 passed, 0 failed"
