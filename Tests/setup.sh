#!/usr/bin/env bash
# Installs what the tests need and a fresh machine lacks: Debian packages (TLS, zlib and
# libpq and SQLite headers, the PostgreSQL server the postgres backend's tests start, curl, the openssl CLI, Chromium and its driver for the dashboard test,
# testssl.sh and slowhttptest for the conformance checks of Tests/e2e), the Python
# clients of the end-to-end suites, and the Autobahn|Testsuite client (Python 2.7,
# Tests/autobahn/install.sh). Idempotent; quiet when all is there.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pkg in libssl-dev zlib1g-dev libpq-dev libsqlite3-dev postgresql curl openssl chromium chromium-driver testssl.sh slowhttptest; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if ((${#need[@]})); then
    echo "setup: installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

for requirements in Tests/*/requirements.txt; do
    python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -r "$requirements"
done

bash Tests/autobahn/install.sh
