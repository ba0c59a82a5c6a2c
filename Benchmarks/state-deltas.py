#!/usr/bin/env python3
"""State deltas (`?delta=json-patch`) against whole states, on a real server: bytes per state
message, and the server's CPU time per event with N subscribers, both modes in the same run.

    swift build -c release --product spin-server
    python3 Benchmarks/state-deltas.py .build/release/spin-server [rounds] [subscribers] [events]

The Spin is a JSON machine whose context holds a list of 10,000 items (`{"id":i,"name":..,
"stock":..}`, about 440 KB of state) and one `selected` item beside it; each event (`SELECT`)
replaces that one item, so each state differs from the one before in one item. Per round
and mode (no stream, whole states, deltas; `rounds` rounds of the three, default 3):
`subscribers` WebSocket streams (default 100; none in the first mode, which measures what
an event costs without streams: the machine's reducer and the encoding of its state) read
their snapshot, then `events` events (default 60) are POSTed one after the other, and the
round ends when every stream has the last state. The
server's user+system time over the round (from /proc) divided by the events is its CPU per
event; bytes per state message are the text frames' payloads after the snapshot.

Needs `websockets` (Tests/e2e/requirements.txt). The subscribers run in this process on the
same machine: the figures that matter are the ratios of the two modes in the same run.
"""
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from websockets.asyncio.client import connect

ITEMS = 10_000


def machine() -> dict:
    return {
        "id": "catalog",
        "initial": "open",
        "context": {"items": [{"id": i, "name": f"item {i}", "stock": i % 7} for i in range(ITEMS)],
                    "selected": None},
        "states": {"open": {"on": {
            "SELECT": {"actions": [{"type": "assign", "set": {"selected": {"from": "event.item"}}}]},
        }}},
    }


def ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def post(port: int, body: dict) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/spins/catalog/events", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["sequence"]


async def round_(port: int, pid: int, mode: str, subscribers: int, events: int, start: int) -> dict:
    query = "?delta=json-patch" if mode == "deltas" else ""
    if mode == "none":
        subscribers = 0
    target = start + events
    totals = {"bytes": 0, "messages": 0, "patches": 0}
    ready = asyncio.Event()
    connected = 0

    async def subscriber():
        nonlocal connected
        async with connect(f"ws://127.0.0.1:{port}/v1/spins/catalog/stream{query}", max_size=None,
                           compression=None) as ws:
            snapshot = json.loads(await ws.recv())
            assert snapshot["type"] == "snapshot" and snapshot["sequence"] == start, snapshot["sequence"]
            connected += 1
            if connected == subscribers:
                ready.set()
            while True:
                frame = await ws.recv(decode=False)
                head = frame[:120].decode(errors="replace")
                sequence = int(head.split('"sequence":', 1)[1].split(",", 1)[0])
                totals["bytes"] += len(frame)
                totals["messages"] += 1
                if b'"patch":' in frame[:200 + frame.find(b'"event":')]:
                    totals["patches"] += 1
                if sequence >= target:
                    return

    tasks = [asyncio.create_task(subscriber()) for _ in range(subscribers)]
    if tasks:
        await asyncio.wait_for(ready.wait(), 120)
    before, began = ticks(pid), time.monotonic()
    for n in range(events):
        await asyncio.to_thread(post, port, {"type": "SELECT", "item": {"id": n, "name": f"selected {n}", "stock": n % 7}})
    await asyncio.wait_for(asyncio.gather(*tasks), 600)
    if not tasks:
        await asyncio.sleep(0.5)  # the last events' journal writes
    cpu = (ticks(pid) - before) / os.sysconf("SC_CLK_TCK")
    return {"mode": mode, "events": events, "subscribers": subscribers,
            "seconds": round(time.monotonic() - began, 2), "cpu_ms_per_event": round(cpu * 1000 / events, 2),
            "bytes_per_message": round(totals["bytes"] / max(totals["messages"], 1), 1),
            "patch_share": round(totals["patches"] / max(totals["messages"], 1), 3)}


def main() -> None:
    binary = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    subscribers = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    events = int(sys.argv[4]) if len(sys.argv) > 4 else 60
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    work = Path(tempfile.mkdtemp(prefix="state-deltas-"))
    (work / "catalog.json").write_text(json.dumps(machine()))
    (work / "spin.json").write_text(json.dumps({
        "listen": {"host": "127.0.0.1", "port": port},
        "storage": {"directory": str(work / "storage"), "fsync": "none"}, "log": {"level": "warning"},
        "spins": [{"name": "catalog", "machine": "catalog.json"}]}))
    server = subprocess.Popen([binary, "--config", str(work / "spin.json")],
                              stdout=open(work / "server.log", "wb"), stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        sequence = post(port, {"type": "SELECT", "item": None})
        results = []
        for _ in range(rounds):
            for mode in ("none", "whole", "deltas"):
                result = asyncio.run(round_(port, server.pid, mode, subscribers, events, sequence))
                sequence += events
                results.append(result)
                print(json.dumps(result), flush=True)
        none = [r for r in results if r["mode"] == "none"]
        whole = [r for r in results if r["mode"] == "whole"]
        delta = [r for r in results if r["mode"] == "deltas"]
        mean = lambda rows, key: sum(r[key] for r in rows) / len(rows)  # noqa: E731
        print(json.dumps({
            "bytes_ratio": round(mean(delta, "bytes_per_message") / mean(whole, "bytes_per_message"), 5),
            "cpu_ratio": round(mean(delta, "cpu_ms_per_event") / mean(whole, "cpu_ms_per_event"), 3),
            "no_streams_cpu_ms_per_event": round(mean(none, "cpu_ms_per_event"), 2),
            "whole_cpu_ms_per_event": round(mean(whole, "cpu_ms_per_event"), 2),
            "deltas_cpu_ms_per_event": round(mean(delta, "cpu_ms_per_event"), 2),
            "whole_bytes_per_message": round(mean(whole, "bytes_per_message")),
            "deltas_bytes_per_message": round(mean(delta, "bytes_per_message"), 1)}))
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
