#!/usr/bin/env python3
"""What an awake, idle Spin costs in memory (issue "Spins on demand": ≤ 8 KiB of RSS per
awake idle Spin with 10,000 awake).

    swift build -c release --product spin-server
    python3 Benchmarks/awake-spins.py .build/release/spin-server [count] [--heaptrack]

A server with kind `door` (Config/machines/door.json, names `door-*`, Gear `doors-{key}`,
made on its first event), `limits.idleSpinSeconds` 3600 (none falls asleep), `fsync:
batch`, on an empty storage directory. 500 doors get their first event first (the
allocator's and the server's one-time growth), then the RSS is read; then `count` more
(default 10,000) get theirs, from 8 keep-alive clients, each `POST [{"type":"OPEN"}]`,
and the RSS is read again once the server is quiet, half-way and at the end. Prints the
difference per door over all of them and over the second half alone (memory that fills
once, such as the allocator's per-thread caches, is in the first figure only).
With `--heaptrack` the server runs under heaptrack and the file it wrote is named: its
`heaptrack_print -p` report says which allocations stay per awake Spin.
"""
from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def server_pid(process: subprocess.Popen, heaptrack: bool) -> int:
    if not heaptrack:
        return process.pid
    # heaptrack runs the server as its child.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
        for pid in children.read_text().split() if children.exists() else []:
            if "spin-server" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                return int(pid)
        time.sleep(0.1)
    raise RuntimeError("the server did not start under heaptrack")


def post(connection: http.client.HTTPConnection, name: str) -> int:
    connection.request("POST", f"/v1/spins/{name}/events", body=b'[{"type":"OPEN"}]',
                       headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    return response.status


def wake(port: int, names: list[str], clients: int = 8) -> None:
    failures: list[str] = []

    def run(part: list[str]) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for name in part:
            status = post(connection, name)
            if status != 202:
                failures.append(f"{name}: {status}")
        connection.close()

    threads = [threading.Thread(target=run, args=(names[index::clients],)) for index in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(f"{len(failures)} POSTs failed, first {failures[:3]}")


def quiet_rss(pid: int) -> int:
    """The RSS once it stops moving (the journal's and the allocator's work settled)."""
    last = rss_kib(pid)
    for _ in range(50):
        time.sleep(0.2)
        now = rss_kib(pid)
        if abs(now - last) < 64:
            return now
        last = now
    return last


def main() -> int:
    arguments = [argument for argument in sys.argv[1:] if not argument.startswith("--")]
    heaptrack = "--heaptrack" in sys.argv
    if not arguments:
        print(__doc__)
        return 2
    binary = arguments[0]
    count = int(arguments[1]) if len(arguments) > 1 else 10_000
    work = Path(tempfile.mkdtemp(prefix="spin-awake-"))
    (work / "machines").mkdir()
    shutil.copy(ROOT / "Config" / "machines" / "door.json", work / "machines" / "door.json")
    config = {"kinds": [{"name": "door", "machine": "machines/door.json", "names": "door-*",
                         "gears": {"doors": "doors-{key}"}, "create": "onEvent"}],
              "limits": {"idleSpinSeconds": 3600, "maxConnections": 64},
              "storage": {"fsync": "batch"}, "log": {"level": "warning"}}
    (work / "config.json").write_text(json.dumps(config))
    command = [binary, "--config", str(work / "config.json"), "--storage", str(work / "storage"), "--port", "0",
               "--log-level", "info"]
    if heaptrack:
        command = ["heaptrack", "-o", str(work / "heaptrack")] + command
    log = open(work / "server.log", "w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        port = None
        deadline = time.monotonic() + 60
        while port is None and time.monotonic() < deadline:
            for line in (work / "server.log").read_text().splitlines():
                if "listening on http://" in line:
                    port = int(line.rsplit(":", 1)[1])
            time.sleep(0.05)
        if port is None:
            raise RuntimeError("the server did not start: " + (work / "server.log").read_text()[-2000:])
        pid = server_pid(process, heaptrack)
        wake(port, [f"door-w{index}" for index in range(500)])
        before = quiet_rss(pid)
        began = time.monotonic()
        half = count // 2
        wake(port, [f"door-{index}" for index in range(half)])
        middle = quiet_rss(pid)
        wake(port, [f"door-{index}" for index in range(half, count)])
        took = time.monotonic() - began
        after = quiet_rss(pid)
        per = (after - before) * 1024 / count
        slope = (after - middle) * 1024 / (count - half)
        print(f"{count} doors woken by their first event in {took:.1f} s; RSS {before} KiB → {middle} KiB → "
              f"{after} KiB: {per:,.0f} bytes per awake idle door (target ≤ 8,192); the second half alone "
              f"{slope:,.0f} (what grows with the doors, without what fills once, such as the allocator's "
              f"per-thread caches)")
    finally:
        process.terminate()
        process.wait(timeout=60)
    if heaptrack:
        files = sorted(work.glob("heaptrack*"))
        print("heaptrack:", ", ".join(str(path) for path in files))
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
