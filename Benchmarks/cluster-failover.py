#!/usr/bin/env python3
"""Failover time of a three-node cluster on PostgreSQL, measured end to end.

    Benchmarks/cluster-failover.py [--lease-seconds 10] [--events 5000] [--rounds 3]

Starts a throwaway PostgreSQL (Tests/postgres/pg.sh) and three spin-server nodes
(SPIN_SERVER_BIN, default .build/release/spin-server, else .build/debug), POSTs
`--events` events to the counter so that its journal has something to replay, then, in
each round: POSTs through a node that does not own the counter in a loop, SIGKILLs the
owner, and reports how long POSTs got no 202 (the gap a client sees), and how long the
new owner took to recover the counter (from its log). The killed node is started again
before the next round. Prints one line per round and the median.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PG = ROOT / "Tests" / "postgres" / "pg.sh"


def free_port() -> int:
    with socket.socket() as s:  # noqa: the port is bound again by the server
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(method: str, url: str, body: bytes | None = None, timeout: float = 5) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


class Node:
    def __init__(self, binary: Path, name: str, url: str, lease: int, workdir: Path) -> None:
        self.name, self.port, self.workdir = name, free_port(), workdir / name
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log = self.workdir / "server.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPIN_")}
        env.update({"SPIN_STORAGE_BACKEND": "postgres", "SPIN_DATABASE_URL": url, "SPIN_NODE": name,
                    "SPIN_CLUSTER_LEASE_SECONDS": str(lease), "SPIN_LOG_LEVEL": "info"})
        self.command = [str(binary), "--config", str(ROOT / "Config" / "spin-server.json"), "--host", "127.0.0.1",
                        "--port", str(self.port), "--storage", str(self.workdir / "storage")]
        self.env = env
        self.process: subprocess.Popen | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(self.command, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, cwd=ROOT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and request("GET", self.base + "/readyz")[0] != 200:
            time.sleep(0.1)

    def stop(self, sig=signal.SIGTERM) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=30)


def owners(node: Node) -> dict[str, str]:
    status, body = request("GET", node.base + "/v1/cluster")
    if status != 200:
        return {}
    view = json.loads(body)
    return {spin: n["node"] for n in view["nodes"] if n["live"] for spin in n["spins"]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lease-seconds", type=int, default=10)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    binary = Path(os.environ.get("SPIN_SERVER_BIN", ROOT / ".build" / "release" / "spin-server"))
    if not binary.exists():
        binary = ROOT / ".build" / "debug" / "spin-server"
    work = Path(tempfile.mkdtemp(prefix="spin-failover-"))
    pg_dir = Path(tempfile.mkdtemp(prefix="spin-failover-pg-", dir="/tmp"))
    url = subprocess.run([str(PG), "start", str(pg_dir)], check=True, capture_output=True, text=True).stdout.strip()
    nodes = {name: Node(binary, name, url, args.lease_seconds, work) for name in ("n1", "n2", "n3")}
    gaps, recoveries = [], []
    try:
        for node in nodes.values():
            node.start()
        any_node = nodes["n1"]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(set(owners(any_node).values())) < 3:
            time.sleep(0.2)
        posted = 0
        while posted < args.events:
            batch = json.dumps([{"type": "increase"}] * min(500, args.events - posted)).encode()
            status, body = request("POST", any_node.base + "/v1/spins/counter/events", batch)
            if status == 202:
                posted += min(500, args.events - posted)
        for round_ in range(1, args.rounds + 1):
            view = owners(any_node)
            owner = view["counter"]
            entry = next(node for name, node in nodes.items() if name != owner)
            while request("POST", entry.base + "/v1/spins/counter/events", b'{"type":"increase"}')[0] != 202:
                time.sleep(0.05)
            killed_at = time.monotonic()
            nodes[owner].stop(signal.SIGKILL)
            while True:
                status, _ = request("POST", entry.base + "/v1/spins/counter/events", b'{"type":"increase"}', timeout=10)
                if status == 202:
                    break
                time.sleep(0.02)
            gap = time.monotonic() - killed_at
            new_owner = owners(entry).get("counter", "?")
            recovered = "?"
            if new_owner in nodes:
                found = re.findall(r"recovered counter at sequence (\d+) in (\d+) ms", nodes[new_owner].log.read_text(errors="replace"))
                if found:
                    recovered = f"{found[-1][1]} ms at sequence {found[-1][0]}"
                    recoveries.append(int(found[-1][1]))
            sequence = json.loads(request("GET", entry.base + "/v1/spins/counter")[1] or b"{}").get("sequence")
            gaps.append(gap)
            print(f"round {round_}: killed {owner}, counter served again by {new_owner} after {gap:.2f} s "
                  f"(lease {args.lease_seconds} s; recovery {recovered}; now at sequence {sequence})", flush=True)
            nodes[owner] = Node(binary, owner, url, args.lease_seconds, work)
            nodes[owner].start()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and len(set(owners(entry).values())) < 3:
                time.sleep(0.2)
        print(f"median gap {statistics.median(gaps):.2f} s over {len(gaps)} rounds "
              f"(lease {args.lease_seconds} s, a tick every {args.lease_seconds / 3:.2f} s); median recovery "
              f"{statistics.median(recoveries) if recoveries else float('nan'):.0f} ms")
    finally:
        for node in nodes.values():
            try:
                node.stop()
            except Exception:
                pass
        subprocess.run([str(PG), "remove", str(pg_dir)], capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
