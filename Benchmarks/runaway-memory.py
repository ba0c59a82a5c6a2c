#!/usr/bin/env python3
"""The runaway guard's cost, measured on a real server: time to suspend and VmRSS.

    swift build -c release --product spin-server
    python3 Benchmarks/runaway-memory.py .build/release/spin-server [cycles]

Starts the server on a free port with the shipped config and a temporary storage
directory, sets `levels` two billion apart (a runaway), and reports how long it takes to
be suspended, the sequence it stopped at, VmRSS before, at the peak and once suspended;
then resumes it without a correction `cycles` times (default 10) and reports VmRSS after
each suspension; finally resumes it with a correcting `set`. Not a test: numbers only.
"""
import json
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    binary = sys.argv[1]
    cycles = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    work = Path(tempfile.mkdtemp(prefix="runaway-memory-"))
    server = subprocess.Popen([binary, "--port", str(port), "--storage", str(work / "storage"),
                               "--config", str(REPO / "Config" / "spin-server.json"), "--log-level", "warning"],
                              stdout=open(work / "server.log", "wb"), stderr=subprocess.STDOUT)

    def request(method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data else {}
        try:
            with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}{path}", data, headers,
                                                               method=method), timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def rss_kib():
        return int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{server.pid}/status").read_text()).group(1))

    def levels():
        return json.loads(request("GET", "/v1/spins/levels")[1])

    try:
        for _ in range(100):
            try:
                if request("GET", "/readyz")[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        time.sleep(1)
        before = peak = rss_kib()
        start = time.monotonic()
        request("POST", "/v1/spins/levels/events", {"type": "set", "left": -1_000_000_000, "right": 1_000_000_000})
        while (spin := levels())["status"] != "suspended":
            peak = max(peak, rss_kib())
        elapsed = time.monotonic() - start
        time.sleep(1)
        print(f"suspended {elapsed:.2f} s after the POST, at sequence {spin['sequence']}")
        print(f"VmRSS: before {before // 1024} MB, peak {peak // 1024} MB, suspended {rss_kib() // 1024} MB")
        for cycle in range(1, cycles + 1):
            request("POST", "/v1/spins/levels/resume")
            while levels()["status"] != "suspended":
                time.sleep(0.01)
            time.sleep(0.5)
            print(f"resumed without a correction {cycle}x: VmRSS {rss_kib() // 1024} MB")
        print("resume with a set:", request("POST", "/v1/spins/levels/resume", {"type": "set", "left": 0, "right": 0}))
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
