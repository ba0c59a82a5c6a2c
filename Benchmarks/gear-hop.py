#!/usr/bin/env python3
"""Gear hop latency: from a sender's POST acknowledged to the catching Spin's state message,
on real servers, two builds side by side (say the commit before Gear delivery was made
durable, and this one), `fsync: none` and `batch`, in alternating rounds.

    swift build -c release --product spin-server
    python3 Benchmarks/gear-hop.py .build/release/spin-server [baseline-binary] [rounds] [hops]

Each server hosts the pair of the Gear delivery tests (Tests/e2e/fixtures/machines):
`pinger` numbers each PING on Gear `pings`, `ledger` catches them. One hop: a PING is
POSTed on a kept-alive connection (`t0`), its 202 read (`t1`), then the ledger's state
stream (a WebSocket opened before) is read until the state message of that PING (`t2`).
Printed per build and policy, p50 and p99 over every hop of every round, of `t2 - t1`
(acknowledged → caught: what the output gate adds, at most one group commit of the
catching Spin) and `t2 - t0` (sent → caught). One hop at a time, after a warm-up of 50.

The client is this process (Python, raw sockets, no compression): its own costs are a few
tens of µs per hop, the same for both builds; the figures to compare are the builds' in the
same run. Default: 3 rounds of 1000 hops.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MACHINES = REPO / "Tests" / "e2e" / "fixtures" / "machines"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    def __init__(self, binary: str, fsync: str, workdir: Path):
        self.port = free_port()
        workdir.mkdir(parents=True)
        for name in ("pinger", "ledger"):
            shutil.copy(MACHINES / f"{name}.json", workdir / f"{name}.json")
        (workdir / "config.json").write_text(json.dumps({
            "listen": {"host": "127.0.0.1", "port": self.port},
            "storage": {"directory": str(workdir / "data"), "fsync": fsync},
            "log": {"level": "warning"},
            "spins": [{"name": "pinger", "machine": "pinger.json"}, {"name": "ledger", "machine": "ledger.json"}],
            "gears": [{"name": "pings"}],
        }))
        self.process = subprocess.Popen([binary, "--config", str(workdir / "config.json")], cwd=workdir,
                                        stdout=subprocess.DEVNULL, stderr=open(workdir / "server.log", "wb"))
        for _ in range(200):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{binary} did not start: {(workdir / 'server.log').read_text()}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


class Connection:
    """One kept-alive HTTP connection: POST a PING, read the 202."""

    def __init__(self, port: int):
        self.port = port
        body = b'{"type":"PING"}'
        self.request = (b"POST /v1/spins/pinger/events HTTP/1.1\r\nHost: localhost\r\n"
                        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        self.connect()

    def connect(self) -> None:
        self.socket = socket.create_connection(("127.0.0.1", self.port))
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def ping(self) -> int:
        """POSTs, returns the sequence the 202 acknowledges. A server closes a kept-alive
        connection after its 1000th request (`Connection: close`): a new one follows."""
        self.socket.sendall(self.request)
        while True:
            head, separator, rest = self.buffer.partition(b"\r\n\r\n")
            if separator:
                lines = head.lower().split(b"\r\n")
                length = int(next(line.split(b":")[1] for line in lines if line.startswith(b"content-length")))
                if len(rest) >= length:
                    self.buffer = rest[length:]
                    assert head.startswith(b"HTTP/1.1 202"), head
                    if b"connection: close" in lines:
                        self.socket.close()
                        self.connect()
                    return json.loads(rest[:length])["sequence"]
            chunk = self.socket.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection before answering")
            self.buffer += chunk


class Stream:
    """The ledger's state stream over a raw WebSocket (text frames, no extensions)."""

    def __init__(self, port: int):
        self.socket = socket.create_connection(("127.0.0.1", port))
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16))
        self.socket.sendall(b"GET /v1/spins/ledger/stream HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
                            b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + b"\r\n\r\n")
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += self.socket.recv(65536)
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head

    def _read(self, count: int) -> bytes:
        while len(self.buffer) < count:
            chunk = self.socket.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the stream")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def message(self) -> dict:
        while True:
            first, second = self._read(2)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack("!H", self._read(2))[0]
            elif length == 127:
                length = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(length)
            if first & 0x0F == 1:
                return json.loads(payload)

    def until(self, received: int) -> None:
        """Reads until the ledger's state counts `received` PINGs."""
        while True:
            message = self.message()
            if message.get("type") in ("state", "snapshot") and \
                    message["state"]["context"]["received"] >= received:
                return


def percentile(values: list[int], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] / 1000


def run(binary: str, fsync: str, hops: int, workdir: Path) -> tuple[list[int], list[int]]:
    server = Server(binary, fsync, workdir)
    try:
        connection, stream = Connection(server.port), Stream(server.port)
        stream.message()   # the snapshot
        acknowledged, sent = [], []
        for hop in range(50 + hops):
            t0 = time.perf_counter_ns()
            count = connection.ping()
            t1 = time.perf_counter_ns()
            stream.until(count)
            t2 = time.perf_counter_ns()
            if hop >= 50:
                acknowledged.append(t2 - t1)
                sent.append(t2 - t0)
        return acknowledged, sent
    finally:
        server.stop()


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 64
    builds = {"ours": sys.argv[1]}
    if len(sys.argv) > 2 and sys.argv[2] != "-":
        builds["baseline"] = sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    hops = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    results: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
    with tempfile.TemporaryDirectory(prefix="spin-gear-hop-") as directory:
        for round_number in range(rounds):
            for fsync in ("none", "batch"):
                order = list(builds.items())
                if round_number % 2:
                    order.reverse()
                for name, binary in order:
                    acknowledged, sent = run(binary, fsync, hops, Path(directory) / f"{name}-{fsync}-{round_number}")
                    previous = results.setdefault((name, fsync), ([], []))
                    previous[0].extend(acknowledged)
                    previous[1].extend(sent)
    print(f"Gear hop, {rounds} rounds of {hops} hops (µs): acknowledged → caught, sent → caught")
    print("| build | fsync | ack→caught p50 | p99 | sent→caught p50 | p99 |")
    print("|---|---|---|---|---|---|")
    for (name, fsync), (acknowledged, sent) in sorted(results.items(), key=lambda item: (item[0][1], item[0][0])):
        print(f"| {name} | {fsync} | {percentile(acknowledged, 0.5):.0f} | {percentile(acknowledged, 0.99):.0f} | "
              f"{percentile(sent, 0.5):.0f} | {percentile(sent, 0.99):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
