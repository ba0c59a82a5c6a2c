#!/usr/bin/env bash
# Installs the Autobahn|Testsuite fuzzing client (wstest, Python 2.7 only) from PyPI into
# its own directory, pinned by Tests/autobahn/requirements-py27.txt. Idempotent and quiet
# when the same pins are already installed; fails loudly when Python 2.7 is missing.
#
# AUTOBAHN_PYTHON  the Python 2.7 interpreter (default: python2.7 on PATH, else pyenv's 2.7.x)
# AUTOBAHN_HOME    where to install (default: .build/autobahn-py27)
set -euo pipefail
cd "$(dirname "$0")/../.."

requirements=Tests/autobahn/requirements-py27.txt
home=${AUTOBAHN_HOME:-$PWD/.build/autobahn-py27}

fail() { echo "autobahn: FAILED: $*" >&2; exit 1; }

is27() { [ -n "$1" ] && [ -x "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (2, 7))' 2>/dev/null; }
python=${AUTOBAHN_PYTHON:-}
if [ -n "$python" ]; then
    is27 "$python" || fail "AUTOBAHN_PYTHON=$python is not a Python 2.7 interpreter"
else
    # pyenv's shims answer for the selected version only: its 2.7 installs come first.
    for candidate in "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/2.7*/bin/python \
                     /root/.pyenv/versions/2.7*/bin/python "$(command -v python2.7 || true)"; do
        if is27 "$candidate"; then python=$candidate; break; fi
    done
    [ -n "$python" ] || fail "no Python 2.7 found (wstest runs only on 2.7): install it (pyenv install 2.7.18) or set AUTOBAHN_PYTHON"
fi

stamp="$(sha256sum "$requirements" | cut -d' ' -f1) $python"
if [ -f "$home/.installed" ] && [ "$(cat "$home/.installed")" = "$stamp" ]; then
    exit 0
fi

echo "autobahn: installing wstest (Python 2.7) into $home"
rm -rf "$home" "$home.partial"
mkdir -p "$(dirname "$home")"
log=$(mktemp)
if ! PYTHONWARNINGS=ignore "$python" -m pip install --disable-pip-version-check --no-warn-script-location \
        --target "$home.partial" -r "$requirements" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    rm -f "$log"
    fail "pip install -r $requirements with $python"
fi
rm -f "$log"
ln -s "$python" "$home.partial/python2.7"
"$home.partial/python2.7" Tests/autobahn/wstest.py "$home.partial" --autobahnversion >/dev/null 2>&1 \
    || fail "wstest does not start after the install (try: $home.partial/python2.7 Tests/autobahn/wstest.py $home.partial -a)"
echo "$stamp" >"$home.partial/.installed"
mv "$home.partial" "$home"
