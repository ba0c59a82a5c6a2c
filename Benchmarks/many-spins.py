#!/usr/bin/env python3
"""Many configured Spins: how start-up, memory, descriptors and the Spin list grow with
their number, one or two builds side by side (say the previous release and this one).

    swift build -c release --product spin-server
    python3 Benchmarks/many-spins.py .build/release/spin-server [baseline-binary] [count ...]

For each count (default 1000 and 10000) it writes a config of that many `door` machines
(Config/machines/door.json, on Gear `doors`), then for each build: a first start on an
empty storage directory and a restart on what it wrote, each timed from exec to
`GET /readyz` 200, with the server's RSS and open descriptors once ready, and the time of
one `GET /v1/spins` (the default page). The servers run one at a time; nothing else
should load the machine. The issue "Spins on demand" sets where this must go (a million
Spins, restart in a second, descriptors independent of the count); today every Spin is
recovered before /readyz and keeps a journal file open.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_config(directory: Path, count: int) -> Path:
    (directory / "machines").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "Config" / "machines" / "door.json", directory / "machines" / "door.json")
    config = {"spins": [{"name": f"door-{i:07d}", "machine": "machines/door.json"} for i in range(count)],
              "gears": [{"name": "doors"}]}
    path = directory / "spin-server.json"
    path.write_text(json.dumps(config))
    return path


def start(binary: str, config: Path, storage: Path) -> dict:
    log_path = storage.with_suffix(".log")
    with open(log_path, "w") as log:
        began = time.monotonic()
        process = subprocess.Popen([binary, "--config", str(config), "--storage", str(storage), "--port", "0"],
                                   stdout=log, stderr=subprocess.STDOUT)
    try:
        port = None
        while port is None:
            if process.poll() is not None:
                raise SystemExit(f"{binary} exited {process.returncode}:\n{log_path.read_text()[-2000:]}")
            match = re.search(r"listening on http://[^:]+:(\d+)", log_path.read_text())
            port = int(match.group(1)) if match else None
            time.sleep(0.02)
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            time.sleep(0.02)
        ready = time.monotonic() - began
        status = Path(f"/proc/{process.pid}/status").read_text()
        rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024
        fds = len(os.listdir(f"/proc/{process.pid}/fd"))
        began = time.monotonic()
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/spins", timeout=60).read()
        listing = time.monotonic() - began
        return {"ready_s": ready, "rss_mib": rss, "fds": fds, "list_ms": listing * 1000}
    finally:
        process.terminate()
        process.wait(120)


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 64
    builds = {"ours": sys.argv[1]}
    counts = [1000, 10000]
    if len(sys.argv) > 2 and sys.argv[2] != "-":
        builds["baseline"] = sys.argv[2]
    if len(sys.argv) > 3:
        counts = [int(value) for value in sys.argv[3:]]
    print("| Spins | build | first start: ready | restart: ready | RSS MiB | fds | GET /v1/spins ms |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="spin-many-") as scratch:
        for count in counts:
            config = write_config(Path(scratch) / f"config-{count}", count)
            for name, binary in builds.items():
                storage = Path(scratch) / f"{name}-{count}"
                first = start(binary, config, storage)
                again = start(binary, config, storage)
                print(f"| {count} | {name} | {first['ready_s']:.2f} s | {again['ready_s']:.2f} s | "
                      f"{again['rss_mib']:.0f} | {again['fds']} | {again['list_ms']:.0f} |", flush=True)
                shutil.rmtree(storage, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
