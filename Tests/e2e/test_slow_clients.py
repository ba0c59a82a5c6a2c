"""Slow clients with a real attack tool: slowhttptest (Debian package, installed by
Tests/setup.sh) in slow-headers (slowloris), slow-body (R-U-Dead-Yet) and slow-read
modes against a server with a 2 s header timeout, while a probe (a fresh connection,
GET /healthz) keeps being answered within a second. Each run lasts at most ~15 s."""
from __future__ import annotations

import csv
import shutil
import subprocess
import threading
import time

import pytest
import requests

from spin_e2e import LOOPBACK

# The attack connections slowhttptest opens per mode, and where they go.
MODES = {
    # Headers that never end: cut at the header timeout (2 s after accept).
    "headers": (["-H", "-c", "300", "-r", "100", "-i", "1", "-x", "24"], "/healthz"),
    # A body trickled at ~20 B/s: cut by the body-rate rule (240 B/s after a 5 s grace).
    "body": (["-B", "-c", "200", "-r", "100", "-i", "1", "-s", "8192", "-x", "10", "-t", "POST",
              "-f", "application/json"], "/v1/spins/levels/events"),
    # Responses read through a 1-64 byte window, 16 bytes a second: they stay pending in
    # the kernel and the connection's bounded output queue; nobody else waits for them.
    "read": (["-X", "-c", "200", "-r", "100", "-k", "10", "-n", "1", "-w", "1", "-y", "64", "-z", "16"],
             "/openapi.json"),
}


class Probe(threading.Thread):
    """GET /healthz on a fresh connection every 0.2 s until stopped."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.url = f"http://{LOOPBACK}:{port}/healthz"
        self.stopped = threading.Event()
        self.latencies: list[float] = []
        self.failures: list[str] = []

    def run(self):
        while not self.stopped.is_set():
            started = time.monotonic()
            try:
                response = requests.get(self.url, timeout=2, headers={"Connection": "close"},
                                        proxies={"http": None, "https": None})
                if response.status_code != 200:
                    self.failures.append(f"status {response.status_code}")
            except requests.RequestException as error:
                self.failures.append(repr(error))
            self.latencies.append(time.monotonic() - started)
            self.stopped.wait(0.2)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", list(MODES))
def test_slowhttptest_does_not_starve_other_clients(start_server, tmp_path, mode):
    binary = shutil.which("slowhttptest")
    assert binary, "slowhttptest is not installed: run bash Tests/setup.sh (Debian package slowhttptest)"
    server = start_server(name=f"slow-{mode}", config_patch={"limits": {"headerTimeoutSeconds": 2}})
    arguments, path = MODES[mode]
    report = tmp_path / "report"
    probe = Probe(server.port)
    probe.start()
    try:
        result = subprocess.run([binary, *arguments, "-l", "12", "-p", "2", "-v", "1", "-g", "-o", str(report),
                                 "-u", f"http://{LOOPBACK}:{server.port}{path}"],
                                capture_output=True, text=True, timeout=25)
    finally:
        probe.stopped.set()
        probe.join(timeout=5)
    rows = list(csv.DictReader(open(f"{report}.csv")))
    assert rows, result.stdout[-2000:] + result.stderr[-2000:]
    peak = max(int(row["Connected"]) for row in rows)
    last = rows[-1]
    print(f"slowhttptest {mode}: peak {peak} attack connections, at the end {last['Connected']} open, "
          f"{last['Closed']} closed by the server after {last['Seconds']} s; probe {len(probe.latencies)} "
          f"requests, slowest {max(probe.latencies):.3f} s")
    assert peak >= 100, f"the attack never got going: {rows}"
    assert not probe.failures, probe.failures[:5]
    assert len(probe.latencies) >= 10
    assert max(probe.latencies) < 1.0, max(probe.latencies)
    if mode in ("headers", "body"):
        # The server cut every slow connection well before the tool's 12 s (it stops
        # when none is left; its last report row may predate the last few closes).
        assert "No open connections left" in result.stdout, result.stdout[-2000:]
        assert int(last["Seconds"]) <= 10, rows
    assert server.get("/healthz").status_code == 200
