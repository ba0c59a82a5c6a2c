"""Gear delivery exactly once, in order, and never before its cause is durable
(docs/OPERATIONS.md, "Gear delivery"), with a real server killed and stopped under load.

Two JSON machines written for it: `pinger` counts each `PING` and propagates
`{"type":"pinged","n":<count>}` on Gear `pings`; `ledger` catches them and checks that n
arrives as 1, 2, 3, ... (`received`, and `duplicates` and `gaps` when it does not). A
server is killed (SIGKILL) or stopped (SIGTERM) while clients POST PINGs, again and again
on the same storage; after each restart the ledger must never stand ahead of the pinger
(it caught nothing whose cause was lost), and at the end it must have caught every PING
the pinger holds, once each, in order. The same with Swift Spins on either side: the
example `feature` (a PING is `unauthorizedResponse`: each one's state propagates
`authorizationIssueHappened`) to the ledger and to the example `router` (each catch is
one more `authorizationChecks`).

`SPIN_GEAR_CYCLES` sets the number of kills or stops per test (3 here; the long form runs
20 or more: `SPIN_GEAR_CYCLES=25 python3 -m pytest Tests/e2e/test_gear_delivery.py`).
"""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import requests

from spin_e2e import SpinServer, metric_value

CYCLES = int(os.environ.get("SPIN_GEAR_CYCLES", "3"))

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "machines"
PINGER = json.loads((FIXTURES / "pinger.json").read_text())
LEDGER = json.loads((FIXTURES / "ledger.json").read_text())


# A ledger of a Swift sender's events: `authorizationIssueHappened` has no number, so the
# ledger counts them (`received`); duplicates and losses show against the sender's count.
COUNTING_LEDGER = {
    "id": "ledger", "initial": "on", "context": {"received": 0},
    "states": {"on": {"on": {"caught": {"actions": [{"type": "assign", "set": {"received": {"add": 1}}}]}}}},
    "gears": {"auth": {"catch": {"authorizationIssueHappened": "caught"}}},
}


def machine_server(server_bin, workdir, storage, machines: dict[str, dict], spins, gears, fsync) -> SpinServer:
    instance = SpinServer(server_bin, workdir, storage=storage,
                          config_patch={"spins": spins, "gears": gears, "storage": {"fsync": fsync}})
    folder = instance.config_path.parent / "machines"
    for file, document in machines.items():
        (folder / file).write_text(json.dumps(document, indent=2))
    return instance


class Load:
    """`clients` threads POSTing `event` to `spin` until stopped; counts the 202s."""

    def __init__(self, server: SpinServer, spin: str, event: dict, clients: int = 4):
        self.acknowledged = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        body = json.dumps(event)

        def post():
            session = requests.Session()
            session.trust_env = False
            while not self.stop.is_set():
                try:
                    response = session.post(f"{server.base_url}/v1/spins/{spin}/events", data=body, timeout=2,
                                            headers={"Content-Type": "application/json"})
                except requests.RequestException:
                    return
                if response.status_code == 202:
                    with self.lock:
                        self.acknowledged += 1

        self.threads = [threading.Thread(target=post, daemon=True) for _ in range(clients)]
        for thread in self.threads:
            thread.start()

    def end(self) -> int:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=10)
        return self.acknowledged


def context(server: SpinServer, spin: str) -> dict:
    return server.spin(spin)["state"]["context"]


def wait_for(condition, timeout: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} did not hold within {timeout} s")


def stop(server: SpinServer, how: str) -> None:
    if how == "kill":
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)
        server.exit_code = -9
    else:
        assert server.terminate() == 0, server.log_tail()


def run_cycles(make, how: str, sender: str, event: dict, sent, caught, also=None) -> dict:
    """Starts a server (`make(name)`), loads `sender` for a moment, stops it (`how`), and
    again, CYCLES times; after each restart what was caught (`caught(server)`) never
    exceeds what was sent (`sent(server)`), nor what was acknowledged falls behind. Then
    waits until every event was caught once and returns the last server's figures."""
    acknowledged = 0
    for cycle in range(CYCLES):
        server = make(f"cycle{cycle}").start()
        load = Load(server, sender, event)
        time.sleep(0.6 + 0.1 * (cycle % 4))
        stop(server, how)
        acknowledged += load.end()
        again = make(f"check{cycle}").start()
        count, received = sent(again), caught(again)
        # Nothing caught whose cause a crash took back, and nothing acknowledged lost.
        assert received <= count, (cycle, received, count, again.log_tail())
        assert count >= acknowledged, (cycle, count, acknowledged)
        if also:
            also(again)
        assert again.terminate() == 0, again.log_tail()
    final = make("final").start()
    try:
        count = sent(final)
        wait_for(lambda: caught(final) == count, what=f"every one of the {count} events caught")
        time.sleep(0.3)
        assert caught(final) == count
        figures = {"sent": count, "acknowledged": acknowledged, "final": final}
        if also:
            also(final)
        return figures
    except BaseException:
        final.kill()
        raise


@pytest.mark.parametrize("how,fsync", [("kill", "batch"), ("kill", "always"), ("term", "batch")])
def test_a_gear_event_is_caught_once_in_order_and_never_before_its_cause_is_durable(server_bin, tmp_path, how, fsync):
    storage = tmp_path / "storage"
    machines = {"pinger.json": PINGER, "ledger.json": LEDGER}
    spins = [{"name": "pinger", "machine": "machines/pinger.json"}, {"name": "ledger", "machine": "machines/ledger.json"}]

    def make(name):
        return machine_server(server_bin, tmp_path / name, storage, machines, spins, [{"name": "pings"}], fsync)

    def no_duplicates_or_gaps(server):
        figures = context(server, "ledger")
        assert figures["duplicates"] == 0 and figures["gaps"] == 0, figures
        assert figures["last"] <= context(server, "pinger")["count"], figures

    figures = run_cycles(make, how, "pinger", {"type": "PING"},
                         sent=lambda server: context(server, "pinger")["count"],
                         caught=lambda server: context(server, "ledger")["received"],
                         also=no_duplicates_or_gaps)
    final = figures["final"]
    try:
        assert figures["sent"] > 0
        # The Gear stream and the metrics agree: nothing pending, nothing lagging.
        gears = final.get("/v1/gears").json()["gears"]
        assert gears == [{"name": "pings", "attached": ["pinger", "ledger"], "pending": {"ledger": 0}}], gears
        metrics = final.metrics()
        assert metric_value(metrics, "spin_gear_pending", gear="pings", spin="ledger") == 0
    finally:
        assert final.terminate() == 0, final.log_tail()


def test_swift_spins_send_and_catch_gear_events_once_across_kills(server_bin, tmp_path):
    """`feature` (Swift) sends; a JSON ledger and `router` (Swift) catch."""
    storage = tmp_path / "storage"
    machines = {"ledger.json": COUNTING_LEDGER}
    spins = [{"name": "feature", "kind": "feature", "gear": "auth"},
             {"name": "router", "kind": "router", "gear": "auth"},
             {"name": "ledger", "machine": "machines/ledger.json"}]

    def make(name):
        return machine_server(server_bin, tmp_path / name, storage, machines, spins, [{"name": "auth"}], "batch")

    def router_caught(server):
        # The router checks once at launch, then once per caught event.
        return server.spin("router")["state"]["authorizationChecks"] - 1

    def router_agrees(server):
        assert router_caught(server) <= server.sequence("feature")

    figures = run_cycles(make, "kill", "feature", {"type": "unauthorizedResponse"},
                         sent=lambda server: server.sequence("feature"),
                         caught=lambda server: context(server, "ledger")["received"],
                         also=router_agrees)
    final = figures["final"]
    try:
        wait_for(lambda: router_caught(final) == figures["sent"], what="the router caught every event")
        assert router_caught(final) == figures["sent"]
    finally:
        assert final.terminate() == 0, final.log_tail()
