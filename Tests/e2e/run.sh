#!/usr/bin/env bash
# End-to-end tests of spin-server with real clients (curl, openssl, requests,
# websockets). Usage, from anywhere: Tests/e2e/run.sh [extra pytest arguments]
# SPIN_SERVER_BIN=/path/to/spin-server skips the build and tests that binary.
set -euo pipefail
cd "$(dirname "$0")/../.."

python3 -m pip install -q --disable-pip-version-check -r Tests/e2e/requirements.txt
if [ -z "${SPIN_SERVER_BIN:-}" ]; then
    swift build --product spin-server
fi
for tool in curl openssl; do
    command -v "$tool" >/dev/null || { echo "run.sh: $tool is needed (apt-get install $tool)" >&2; exit 2; }
done
exec python3 -m pytest -q --timeout=60 Tests/e2e "$@"
