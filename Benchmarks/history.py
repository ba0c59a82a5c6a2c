#!/usr/bin/env python3
"""What reading a Spin's history costs (issue "History"): the default config's `door`
kind under `storage.history: "all"` (segments of `storage.snapshotEvery` = 1000 events).

    swift build -c release --product spin-server
    python3 Benchmarks/history.py .build/release/spin-server [--events 100000] [--disk-events 1000000]

1. `?at=N` for 1,000 random N over a journal of `--events` events of door-1 (target:
   p99 <= 50 ms), each state compared with the one its stream sent live at N.
2. A page of 1,000 entries from a random `from` (target: <= 20 ms), 200 of them.
3. POST throughput of door-1 under wrk (`Benchmarks/wrk/post-doors.lua`, an OPEN and a
   CLOSE per request) for 10 s, without and with a reader asking for random pages of
   1,000 in a loop (target: >= 0.9x). The server runs on CPU 0, wrk and the reader on
   CPU 1 (`taskset`); the server's CPU time per request is reported too.
4. Disk per retained event: `--disk-events` events of door-2 (posted 1,000 a request),
   the storage directory's bytes per event (journals, `spins.db`, `history.db`).

Times are the client's, request sent to answer read, over loopback.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests
from websockets.asyncio.client import connect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "Tests" / "e2e"))
from spin_e2e import SpinServer, free_port  # noqa: E402

PAIR = [{"type": "OPEN"}, {"type": "CLOSE"}]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def post_many(http: requests.Session, base: str, spin: str, events: int, per_request: int) -> None:
    body = json.dumps(PAIR * (per_request // 2))
    for _ in range(events // per_request):
        response = http.post(f"{base}/v1/spins/{spin}/events", data=body, headers={"Content-Type": "application/json"})
        assert response.status_code == 202, response.text


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--disk-events", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=int, default=10)
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="spin-history-"))
    server = SpinServer(Path(options.binary).resolve(), root / "server", port=free_port(),
                        config_patch={"storage": {"history": "all", "fsync": "batch"}})
    server.extra_args += []
    server.start(ready_timeout=120)
    # Every thread of the server, and those it makes later (they inherit it), on CPU 0.
    subprocess.run(["taskset", "-a", "-cp", "0", str(server.pid)], check=True, capture_output=True)
    try:
        run(server, options)
    finally:
        server.terminate(timeout=120)
        shutil.rmtree(root, ignore_errors=True)


def run(server: SpinServer, options) -> None:
    base = server.base_url
    http = requests.Session()
    http.trust_env = False
    live: dict[int, dict] = {}

    # 1. The journal, with the states streamed live.
    async def watch(until: int) -> None:
        async with connect(f"{server.ws_base}/v1/spins/door-1/stream", max_size=None, ping_interval=None) as ws:
            ready.set()
            while not live or max(live) < until:
                message = json.loads(await asyncio.wait_for(ws.recv(), 30))
                if message["type"] == "state":
                    live[message["sequence"]] = message["state"]
    assert http.put(f"{base}/v1/spins/door-1", json={"kind": "door"}).status_code == 201
    ready = threading.Event()
    watcher = threading.Thread(target=lambda: asyncio.run(watch(options.events)))
    watcher.start()
    ready.wait(10)
    began = time.monotonic()
    post_many(http, base, "door-1", options.events, 100)
    watcher.join(120)
    print(f"journal: {options.events} events of door-1 in {time.monotonic() - began:.1f} s; "
          f"{len(live)} states streamed live")
    sequence = http.get(f"{base}/v1/spins/door-1").json()["sequence"]

    rng = random.Random(38)
    times, mismatches = [], 0
    for n in rng.sample(range(1, sequence + 1), 1000):
        started = time.perf_counter()
        answer = http.get(f"{base}/v1/spins/door-1", params={"at": n})
        times.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, answer.text
        if n in live and answer.json()["state"] != live[n]:
            mismatches += 1
    compared = sum(1 for n in live if n <= sequence)
    print(f"?at=N, 1000 random N over {sequence} events: p50 {percentile(times, 50):.2f} ms, "
          f"p99 {percentile(times, 99):.2f} ms, max {max(times):.2f} ms; {mismatches} states differ from the live ones")

    # 2. Pages of 1,000 (and the server's CPU time per page: steadier than the wall time on a
    # shared machine).
    times = []
    cpu_before = cpu_seconds(server.pid)
    for _ in range(200):
        start = rng.randrange(1, sequence - 1000)
        started = time.perf_counter()
        answer = http.get(f"{base}/v1/spins/door-1/history", params={"from": start, "limit": 1000})
        times.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200 and len(answer.json()["entries"]) == 1000, answer.text[:200]
    page_cpu = (cpu_seconds(server.pid) - cpu_before) / 200 * 1000
    print(f"page of 1000 entries, 200 random: p50 {percentile(times, 50):.2f} ms, p99 {percentile(times, 99):.2f} ms; "
          f"server CPU {page_cpu:.2f} ms per page")

    # 3. POST throughput with and without a reader.
    def wrk() -> tuple[float, float]:
        before = cpu_seconds(server.pid)
        result = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c8", f"-d{options.seconds}s", "-s",
                                 str(ROOT / "Benchmarks" / "wrk" / "post-doors.lua"), base],
                                capture_output=True, text=True, env=os.environ | {"SPINS": "1"})
        cpu = cpu_seconds(server.pid) - before
        requests_done = int(re.search(r"(\d+) requests in", result.stdout).group(1))
        return requests_done / options.seconds, cpu / max(1, requests_done) * 1e6
    alone, alone_cpu = wrk()
    stop = threading.Event()
    reads = [0]

    def reader() -> None:
        os.sched_setaffinity(0, {1})
        session = requests.Session()
        session.trust_env = False
        while not stop.is_set():
            start = rng.randrange(1, sequence - 1000)
            assert session.get(f"{base}/v1/spins/door-1/history", params={"from": start, "limit": 1000}).status_code == 200
            reads[0] += 1
    thread = threading.Thread(target=reader)
    thread.start()
    together, together_cpu = wrk()
    stop.set()
    thread.join()
    print(f"POST door-1 (wrk, 8 connections, an OPEN and a CLOSE each): {alone:.0f} req/s alone, "
          f"{together:.0f} req/s with a reader ({reads[0] / options.seconds:.0f} pages/s): {together / alone:.2f}x; "
          f"server CPU {alone_cpu:.1f} µs/request alone, {together_cpu:.1f} with the reader (its pages included)")

    # 4. Disk per retained event, on a storage directory of its own.
    if options.disk_events > 0:
        server.terminate(timeout=300)
        disk = SpinServer(server.binary, server.workdir.parent / "disk", port=server.port,
                          config_patch={"storage": {"history": "all", "fsync": "batch"}})
        disk.start(ready_timeout=120)

        def stored() -> int:
            return sum(f.stat().st_size for f in disk.storage.rglob("*") if f.is_file())
        assert http.put(f"{base}/v1/spins/door-2", json={"kind": "door"}).status_code == 201
        disk.terminate(timeout=300)
        empty = stored()
        disk.start(ready_timeout=120)
        began = time.monotonic()
        post_many(http, base, "door-2", options.disk_events, 1000)
        disk.terminate(timeout=300)
        files = {f.name: f.stat().st_size for f in disk.storage.iterdir() if f.is_file()}
        print(f"disk: {options.disk_events} events of door-2 in {time.monotonic() - began:.0f} s: "
              f"{(stored() - empty) / options.disk_events:.1f} bytes per event retained, all of them "
              f"(history.db {files.get('history.db', 0) / 1e6:.2f} MB, spins.db {files.get('spins.db', 0) / 1e6:.2f} MB "
              f"with the journal's last {10_000} to {20_000} events and the snapshot)")
        server.start(ready_timeout=300)


if __name__ == "__main__":
    main()
