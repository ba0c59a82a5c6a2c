#!/usr/bin/env python3
"""Soak test (outside CI): a built spin-server under mixed load for a fixed time, with
its resident memory and open file descriptors sampled throughout.

Load, all on 127.0.0.1:
- POSTs to `counter` and `levels` at a steady rate (single events and small batches);
- SUBSCRIBERS WebSocket subscribers of `counter` (one in five with permessage-deflate),
  each checking that sequences never
  go backwards and that every gap is explained by a snapshot;
- every few seconds some subscribers disconnect and reconnect with
  `?since=LAST&epoch=EPOCH`, and must get exactly the state messages after LAST (or a
  snapshot when LAST fell out of the retained history).

At the end it prints the memory/descriptor curve (one line per sample) and fails
(exit 1) when the RSS of the last quarter grew more than 10% over the second quarter's,
when descriptors grew, when a subscriber saw a gap without a snapshot or a resume did
not continue exactly, or when a POST failed with anything but 429.

Usage: Tests/soak/soak.py [--minutes 15] [--subscribers 500] [--rate 100]
       (SPIN_SERVER_BIN, default .build/release/spin-server, else .build/debug)
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests
from websockets.asyncio.client import connect

REPO = Path(__file__).resolve().parents[2]


def binary() -> Path:
    if os.environ.get("SPIN_SERVER_BIN"):
        return Path(os.environ["SPIN_SERVER_BIN"]).resolve()
    release = REPO / ".build" / "release" / "spin-server"
    return release if release.exists() else REPO / ".build" / "debug" / "spin-server"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def sample(pid: int) -> tuple[int, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"^VmRSS:\s+(\d+)", status, re.MULTILINE).group(1))
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss, fds


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.posts = 0
        self.post_errors: dict[str, int] = {}
        self.messages = 0
        self.snapshots = 0
        self.resumes = 0
        self.resume_snapshots = 0
        # The client's own keepalive pings unanswered in time: the Python client, not the
        # server, falling behind (its pong waits behind the messages it has not read).
        self.client_timeouts = 0
        self.violations: list[str] = []

    def violation(self, text: str) -> None:
        with self.lock:
            if len(self.violations) < 20:
                self.violations.append(text)


def poster(base: str, rate: float, stop: threading.Event, stats: Stats) -> None:
    session = requests.Session()
    session.trust_env = False
    interval = 1.0 / rate
    next_at = time.monotonic()
    bodies = [
        ("counter", '{"type":"increase"}'),
        ("counter", '[{"type":"decrease"},{"type":"increase"}]'),
        ("levels", '{"type":"increaseLeft"}'),
        ("levels", '{"type":"set","left":3,"right":40}'),
        ("counter", '{"type":"reset"}'),
    ]
    index = 0
    while not stop.is_set():
        spin, body = bodies[index % len(bodies)]
        index += 1
        try:
            response = session.post(f"{base}/v1/spins/{spin}/events", data=body, timeout=5,
                                    headers={"Content-Type": "application/json"})
            with stats.lock:
                stats.posts += 1
                if response.status_code not in (202, 429):
                    key = str(response.status_code)
                    stats.post_errors[key] = stats.post_errors.get(key, 0) + 1
        except requests.RequestException as error:
            with stats.lock:
                stats.post_errors[type(error).__name__] = stats.post_errors.get(type(error).__name__, 0) + 1
        next_at += interval
        delay = next_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            next_at = time.monotonic()


async def subscriber(ws_base: str, stop: asyncio.Event, reconnect_every: float, stats: Stats, deflate: bool) -> None:
    last: int | None = None
    epoch: str | None = None
    while not stop.is_set():
        url = f"{ws_base}/v1/spins/counter/stream"
        resuming = last is not None
        if resuming:
            url += f"?since={last}&epoch={epoch}"
        deadline = time.monotonic() + reconnect_every * random.uniform(0.5, 1.5)
        try:
            # A bounded client queue: a subscriber that falls behind pushes back through TCP,
            # as a real slow client does, and the server conflates for it.
            async with connect(url, open_timeout=10, proxy=None, max_queue=64,
                               compression="deflate" if deflate else None) as ws:
                first = True
                while not stop.is_set() and time.monotonic() < deadline:
                    try:
                        text = await asyncio.wait_for(ws.recv(), 1.0)
                    except asyncio.TimeoutError:
                        continue
                    message = json.loads(text)
                    stats.messages += 1
                    sequence = message["sequence"]
                    if message["type"] == "snapshot":
                        stats.snapshots += 1
                        if first and resuming:
                            stats.resume_snapshots += 1
                    elif message["type"] == "state":
                        if last is not None and sequence != last + 1 and message.get("epoch") == epoch:
                            stats.violation(f"gap without snapshot: {last} -> {sequence} (resumed={resuming and first})")
                    if last is not None and sequence < last and message.get("epoch") == epoch:
                        stats.violation(f"sequence went back: {last} -> {sequence}")
                    if first and resuming:
                        stats.resumes += 1
                    first = False
                    last, epoch = sequence, message.get("epoch")
        except Exception as error:  # a reconnect storm may be refused; count, go on
            if "keepalive ping timeout" in str(error):
                stats.client_timeouts += 1
            elif not stop.is_set():
                stats.violation(f"stream error: {error!r}")
            await asyncio.sleep(1)


async def run(args, ws_base: str, stats: Stats, pid: int, samples: list) -> None:
    stop = asyncio.Event()
    # One subscriber in five negotiates permessage-deflate (a zlib context each on both
    # sides); the rest keep the Python client fast enough to be a fair load.
    tasks = [asyncio.create_task(subscriber(ws_base, stop, args.reconnect_seconds, stats, index % 5 == 0))
             for index in range(args.subscribers)]
    end = time.monotonic() + args.minutes * 60
    started = time.monotonic()
    while time.monotonic() < end:
        await asyncio.sleep(args.sample_seconds)
        rss, fds = sample(pid)
        samples.append((time.monotonic() - started, rss, fds, stats.posts, stats.messages))
        print(f"t={samples[-1][0]:6.0f}s rss={rss / 1024:7.1f} MiB fds={fds:5d} posts={stats.posts:7d} "
              f"messages={stats.messages:9d} resumes={stats.resumes} snapshots={stats.snapshots}", flush=True)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=15)
    parser.add_argument("--subscribers", type=int, default=500)
    parser.add_argument("--rate", type=float, default=100, help="POSTs per second")
    parser.add_argument("--reconnect-seconds", type=float, default=30)
    parser.add_argument("--sample-seconds", type=float, default=10)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="spin-soak-"))
    shutil.copytree(REPO / "Config", work / "Config")
    port = free_port()
    log = open(work / "server.log", "wb")
    process = subprocess.Popen([str(binary()), "--config", str(work / "Config" / "spin-server.json"),
                                "--port", str(port), "--storage", str(work / "data"), "--log-level", "warning"],
                               stdout=log, stderr=subprocess.STDOUT, cwd=work)
    base, ws_base = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}"
    for _ in range(100):
        try:
            if requests.get(base + "/readyz", timeout=1).status_code == 200:
                break
        except requests.RequestException:
            pass
        time.sleep(0.1)
    stats = Stats()
    stop = threading.Event()
    post_thread = threading.Thread(target=poster, args=(base, args.rate, stop, stats), daemon=True)
    post_thread.start()
    samples: list = []
    try:
        asyncio.run(run(args, ws_base, stats, process.pid, samples))
    finally:
        stop.set()
        post_thread.join(timeout=10)
        process.terminate()
        code = process.wait(timeout=30)
        log.close()

    quarter = max(1, len(samples) // 4)
    second = [s[1] for s in samples[quarter:2 * quarter]] or [samples[0][1]]
    last = [s[1] for s in samples[-quarter:]]
    growth = (sum(last) / len(last)) / (sum(second) / len(second)) - 1
    # Descriptors swing by tens between samples while subscribers reconnect: compare the
    # quarters' averages, as for memory, not two single samples.
    second_fds = [s[2] for s in samples[quarter:2 * quarter]] or [samples[0][2]]
    last_fds = [s[2] for s in samples[-quarter:]]
    fd_growth = sum(last_fds) / len(last_fds) - sum(second_fds) / len(second_fds)
    print(f"posts {stats.posts}, post errors {stats.post_errors}, messages {stats.messages}, "
          f"resumes {stats.resumes} ({stats.resume_snapshots} started with a snapshot), "
          f"client keepalive timeouts {stats.client_timeouts}, exit {code}")
    print(f"rss growth last quarter vs second quarter: {growth * 100:+.1f}%; descriptors "
          f"{sum(second_fds) / len(second_fds):.0f} -> {sum(last_fds) / len(last_fds):.0f} (quarter averages)")
    failures = []
    if growth > 0.10:
        failures.append("resident memory grew")
    if fd_growth > 20:
        failures.append("file descriptors grew")
    if stats.violations:
        failures.append("stream violations: " + "; ".join(stats.violations))
    if any(key != "429" for key in stats.post_errors):
        failures.append(f"POST errors: {stats.post_errors}")
    if code != 0:
        failures.append(f"exit code {code}")
    print("soak:", "FAILED: " + " | ".join(failures) if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
