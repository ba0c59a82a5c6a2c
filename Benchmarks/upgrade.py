#!/usr/bin/env python3
"""What a machine file's new version costs at a restart (issue "Kinds that upgrade in
place"): the default config's `door` kind, `count` doors made under version 1 (half
locked, half opened and closed: every one with history), all awake at the stop.

    swift build -c release --product spin-server
    python3 Benchmarks/upgrade.py .build/release/spin-server [count]

Times, each from the process's start to its first 200 on /healthz: a restart on the same
version 1 file (every door read back), `--check-upgrade` with version 2 in place (every
door replayed and migrated in memory, nothing written), the restart onto version 2 (every
door migrated and its migration journaled before the server answers), and a restart on
version 2 again (nothing left to migrate). Prints each, and the migrating restart as a
ratio of the plain one.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "Tests" / "e2e"))
from spin_e2e import SpinServer, free_port  # noqa: E402
from test_versions import DOOR, door_v2  # noqa: E402


def main() -> None:
    binary = Path(sys.argv[1]).resolve()
    doors = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    root = Path(tempfile.mkdtemp(prefix="spin-upgrade-"))
    storage, workdir, port = root / "storage", root / "server", free_port()

    def server(machine: dict) -> SpinServer:
        instance = SpinServer(binary, workdir, storage=storage, port=port)
        (workdir / "Config" / "machines" / "door.json").write_text(json.dumps(machine))
        return instance

    def start(instance: SpinServer) -> float:
        began = time.monotonic()
        instance.start(ready_timeout=600)
        return time.monotonic() - began

    try:
        first = server(DOOR)
        first.start()

        def make(part: range) -> None:
            http = requests.Session()
            http.trust_env = False
            for index in part:
                for event in [[{"type": "LOCK"}], [{"type": "OPEN"}, {"type": "CLOSE"}]][index % 2]:
                    response = http.post(f"{first.base_url}/v1/spins/door-{index}/events?wait=true", json=event, timeout=30)
                    assert response.status_code == 200, response.text
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(make, [range(offset, doors, 4) for offset in range(4)]))
        assert first.terminate() == 0
        plain = server(DOOR)
        same = start(plain)
        assert plain.terminate() == 0
        upgraded = server(door_v2())
        began = time.monotonic()
        check = subprocess.run(upgraded.command() + ["--check-upgrade"], capture_output=True, text=True,
                               cwd=upgraded.workdir, env=upgraded.env)
        checking = time.monotonic() - began
        assert check.returncode == 0, check.stdout + check.stderr
        migrating = start(upgraded)
        assert upgraded.terminate() == 0
        again = server(door_v2())
        after = start(again)
        assert again.terminate() == 0
        print(next(line for line in check.stdout.splitlines() if line.startswith("kind.door")))
        print(f"{doors} doors: restart on version 1 {same:.2f} s; --check-upgrade {checking:.2f} s; "
              f"restart onto version 2 (migrating) {migrating:.2f} s ({migrating / same:.2f}x); "
              f"restart on version 2 again {after:.2f} s ({after / same:.2f}x)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
