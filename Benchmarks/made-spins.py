#!/usr/bin/env python3
"""Spins made at run time (`PUT /v1/spins/{name}`): how fast they are made, what a
sleeping one costs, how fast one wakes, and what a restart with them on disk takes.

    swift build -c release --product spin-server
    python3 Benchmarks/made-spins.py .build/release/spin-server [--wrk] [count ...]

For each count (default 2000 and 10000): a server with kind `door` (Config/machines/door.json,
names `door-*`, Gear `doors-{key}`) and `limits.idleSpinSeconds` 2, `fsync: batch`, on an
empty storage directory. It makes `count` doors over HTTP from 8 keep-alive clients, or
with `--wrk` from wrk on CPU 1, the server on CPU 0 (Benchmarks/wrk/make-doors.lua)
(creates/s), waits until every one sleeps, reads the server's RSS and open descriptors and
the storage directory's size, wakes 200 of them one after the other with `GET` (the wake
latency's p50 and p99, each GET a new Spin), then restarts the server on that directory
and times exec → `GET /readyz` 200. The issue "Spins on demand" sets the targets (a
million Spins: ≥ 20,000 creates/s, restart ≤ 1 s and flat, ≤ 256 bytes of RSS per
sleeping Spin, descriptors independent of the count, first event to a sleeping Spin
≤ 5 ms p99, ≤ 1 KiB of disk per sleeping Spin); this measures where the build stands.
"""
from __future__ import annotations

import http.client
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_config(directory: Path) -> Path:
    (directory / "machines").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "Config" / "machines" / "door.json", directory / "machines" / "door.json")
    config = {"kinds": [{"name": "door", "machine": "machines/door.json", "names": "door-*",
                         "gears": {"doors": "doors-{key}"}}],
              "limits": {"idleSpinSeconds": 2, "maxConnections": 64},
              "storage": {"fsync": "batch"}, "log": {"level": "warning"}}
    path = directory / "spin-server.json"
    path.write_text(json.dumps(config))
    return path


class Server:
    def __init__(self, binary: str, config: Path, storage: Path):
        self.log_path = storage.with_suffix(".log")
        self.log = open(self.log_path, "a")
        self.log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.began = time.monotonic()
        self.process = subprocess.Popen([binary, "--config", str(config), "--storage", str(storage), "--port", "0",
                                         "--log-level", "info"], stdout=self.log, stderr=subprocess.STDOUT)
        self.port = None
        while self.port is None:
            if self.process.poll() is not None:
                raise SystemExit(f"{binary} exited {self.process.returncode}:\n{self.log_path.read_text()[-2000:]}")
            with open(self.log_path, "rb") as log:      # this run's lines only: the log grows with every make
                log.seek(self.log_start)
                match = re.search(rb"listening on http://[^:]+:(\d+)", log.read())
            self.port = int(match.group(1)) if match else None
            time.sleep(0.01)
        while self.request("GET", "/readyz")[0] != 200:
            time.sleep(0.01)
        self.ready_s = time.monotonic() - self.began

    def request(self, method: str, path: str, body: str | None = None, connection=None):
        own = connection is None
        connection = connection or http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.read()
        except OSError:
            return 0, b""
        finally:
            if own:
                connection.close()

    def rss_mib(self) -> float:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def stop(self):
        self.process.terminate()
        self.process.wait(300)
        self.log.close()


def make(server: Server, count: int, clients: int = 8) -> float:
    names = [f"door-{i:07d}" for i in range(count)]
    failures = []

    def worker(share):
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        for name in share:
            status, body = server.request("PUT", f"/v1/spins/{name}", json.dumps({"kind": "door"}), connection)
            if status != 201:
                failures.append((name, status, body[:200]))
        connection.close()

    began = time.monotonic()
    threads = [threading.Thread(target=worker, args=(names[i::clients],)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.monotonic() - began
    if failures:
        raise SystemExit(f"{len(failures)} creates failed, first: {failures[0]}")
    return count / took


def on_disk(server: Server) -> int | None:
    """`spin_spins_on_disk`, when the server reports it."""
    status, body = server.request("GET", "/metrics")
    match = re.search(rb"^spin_spins_on_disk (\d+)", body, re.M)
    return int(match.group(1)) if status == 200 and match else None


def stored(server: Server, base: int) -> int:
    """The Spins made so far: on disk, and in memory beyond the `base` there before (a
    door that a repeated PUT found is in memory for a moment)."""
    status, body = server.request("GET", "/metrics")
    disk = re.search(rb"^spin_spins_on_disk (\d+)", body, re.M)
    memory = re.search(rb"^spin_spins_in_memory (\d+)", body, re.M)
    return int(disk.group(1)) + int(memory.group(1)) - base if disk and memory else 0


def make_with_wrk(server: Server, count: int) -> float:
    """Makes the doors with wrk (pinned to CPU 1, the server to CPU 0): creates/s up to
    the moment the server reports all of them on disk."""
    subprocess.run(["taskset", "-apc", "0", str(server.process.pid)], capture_output=True, check=True)
    env = dict(os.environ, COUNT=str(count), THREADS="2")
    base = stored(server, 0)
    began = time.monotonic()
    wrk = subprocess.Popen(["taskset", "-c", "1", "wrk", "-t2", "-c64", f"-d{int(count / 2000) + 30}s",
                            "-s", str(ROOT / "Benchmarks" / "wrk" / "make-doors.lua"), f"http://127.0.0.1:{server.port}"],
                           env=env, stdout=subprocess.DEVNULL)
    try:
        while stored(server, base) < count:
            if wrk.poll() is not None:
                raise SystemExit(f"wrk ended with {stored(server, base)} of {count} made")
            time.sleep(0.2)
        return count / (time.monotonic() - began)
    finally:
        wrk.terminate()
        wrk.wait()


def all_asleep(server: Server, count: int, timeout: float = 600) -> float:
    began = time.monotonic()
    while on_disk(server) is not None and time.monotonic() - began < timeout:
        if on_disk(server) == count:
            return time.monotonic() - began
        time.sleep(0.5)
    while time.monotonic() - began < timeout:
        asleep, after = 0, ""
        while True:
            status, body = server.request("GET", f"/v1/spins?prefix=door-&limit=1000&after={after}")
            page = json.loads(body)
            asleep += sum(1 for spin in page["spins"] if spin["status"] == "asleep")
            if page["next"] is None:
                break
            after = page["next"]
        if asleep == count:
            return time.monotonic() - began
        time.sleep(0.5)
    raise SystemExit("not every Spin fell asleep")


def directory_bytes(path: Path) -> int:
    return int(subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True).stdout.split()[0])


def directory_blocks(path: Path) -> int:
    return int(subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True).stdout.split()[0]) * 1024


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    use_wrk = "--wrk" in sys.argv
    arguments = [arg for arg in sys.argv[1:] if arg != "--wrk"]
    binary = arguments[0]
    counts = [int(arg) for arg in arguments[1:]] or [2000, 10000]
    rows = []
    for count in counts:
        with tempfile.TemporaryDirectory(prefix="spin-made-") as scratch:
            work = Path(scratch)
            config = write_config(work)
            storage = work / "data"
            server = Server(binary, config, storage)
            idle_rss = server.rss_mib()
            rate = make_with_wrk(server, count) if use_wrk else make(server, count)
            all_asleep(server, count)
            time.sleep(1)
            rss, fds = server.rss_mib(), server.fds()
            wakes = []
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            for index in random.Random(1).sample(range(count), min(200, count)):
                began = time.monotonic()
                status, _ = server.request("GET", f"/v1/spins/door-{index:07d}", connection=connection)
                wakes.append((time.monotonic() - began) * 1000)
                assert status == 200, status
            connection.close()
            server.stop()
            disk, blocks = directory_bytes(storage), directory_blocks(storage)
            again = Server(binary, config, storage)
            restart, restart_rss = again.ready_s, again.rss_mib()
            again.stop()
            wakes.sort()
            rows.append({
                "count": count, "creates_per_s": rate,
                "rss_asleep_mib": rss, "bytes_per_sleeping": (rss - idle_rss) * 1048576 / count, "fds": fds,
                "wake_p50_ms": statistics.median(wakes), "wake_p99_ms": wakes[int(len(wakes) * 0.99) - 1],
                "disk_bytes_per_spin": disk / count, "disk_blocks_per_spin": blocks / count,
                "restart_s": restart, "restart_rss_mib": restart_rss,
            })
            print(json.dumps(rows[-1]), flush=True)
    print("\n| Spins made | creates/s | RSS all asleep | RSS per sleeping Spin | fds | wake p50 / p99 | disk per Spin (bytes / blocks) | restart to /readyz |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['count']:,} | {row['creates_per_s']:,.0f} | {row['rss_asleep_mib']:.0f} MiB | "
              f"{row['bytes_per_sleeping']:,.0f} B | {row['fds']} | {row['wake_p50_ms']:.1f} / {row['wake_p99_ms']:.1f} ms | "
              f"{row['disk_bytes_per_spin']:,.0f} / {row['disk_blocks_per_spin']:,.0f} | {row['restart_s']:.2f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
