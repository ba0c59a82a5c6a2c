"""Planned moves in a cluster of `spin-server` nodes on one PostgreSQL refuse nothing:
nodes starting one after another (placement moves Spins to each newcomer), a node
stopped with SIGTERM (it hands its Spins over, then exits 0) and a rolling restart. A
request that arrives while its Spin is between two nodes waits for the move and is
then served by the new owner; the only answers are 202s."""
from __future__ import annotations

import asyncio
import json
import signal
import threading
import time

import pytest
import requests
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from test_cluster_nodes import LEASE_SECONDS, Cluster, database, partition_of  # noqa: F401 (the fixture)
from test_postgres import _have_postgres, rows

pytestmark = pytest.mark.skipif(not _have_postgres(), reason="PostgreSQL is not installed (Debian package postgresql)")


class Load:
    """Threads POSTing `increase` to the counter through a changing set of nodes. Every
    answer but a 202 is kept; a connection the node refused (it is not listening: it
    stopped, or not yet started) is counted apart, since no server answered it."""

    def __init__(self, spin: str = "counter", event: dict | None = None) -> None:
        self.spin = spin
        self.event = event or {"type": "increase"}
        self.accepted = 0
        # (node, status, code, text, when, Retry-After)
        self.answers: list[tuple] = []
        self.not_listening = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []

    def through(self, name: str, node, threads: int = 2) -> None:
        for _ in range(threads):
            thread = threading.Thread(target=self.run, args=(name, node), daemon=True)
            self.threads.append(thread)
            thread.start()

    def run(self, name: str, node) -> None:
        http = requests.Session()
        http.trust_env = False
        url = f"{node.base_url}/v1/spins/{self.spin}/events"
        while not self.stopping.is_set() and node.exit_code is None:
            try:
                response = http.post(url, json=self.event, timeout=30)
            except requests.ConnectionError as error:
                # Refused before anything was sent (the node closed its listener).
                if "Connection refused" in str(error) or node.process.poll() is not None:
                    with self.lock:
                        self.not_listening += 1
                    return
                with self.lock:
                    self.answers.append((name, 0, "connection", repr(error), time.monotonic(), None))
                continue
            except requests.RequestException as error:
                with self.lock:
                    self.answers.append((name, 0, "timeout", repr(error), time.monotonic(), None))
                continue
            with self.lock:
                if response.status_code == 202:
                    self.accepted += 1
                else:
                    code = response.json().get("error", {}).get("code", "") if response.content else ""
                    self.answers.append((name, response.status_code, code, response.text[:200], time.monotonic(),
                                         response.headers.get("Retry-After")))

    def count(self) -> int:
        with self.lock:
            return self.accepted

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=40)


class Watcher:
    """A WebSocket state stream of the counter through one node, in a thread of its own,
    resuming with `?since=<last sequence>&epoch=<its epoch>` whenever the connection
    ends; keeps every message and how many connections it took."""

    def __init__(self, node) -> None:
        self.url = node.base_url.replace("http://", "ws://") + "/v1/spins/counter/stream"
        self.messages: list[dict] = []
        self.connections = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self.run()), daemon=True)
        self.thread.start()

    async def run(self) -> None:
        while not self.stopping.is_set():
            url = self.url
            if self.messages:
                last = self.messages[-1]
                url += f"?since={last['sequence']}&epoch={last['epoch']}"
            try:
                async with connect(url, open_timeout=10) as ws:
                    self.connections += 1
                    while not self.stopping.is_set():
                        try:
                            message = json.loads(await asyncio.wait_for(ws.recv(), 0.5))
                        except asyncio.TimeoutError:
                            continue
                        if message.get("type") in ("snapshot", "state"):
                            self.messages.append(message)
            except (ConnectionClosed, OSError, asyncio.TimeoutError):
                await asyncio.sleep(0.05)

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)

    def check_continuous(self) -> None:
        """One snapshot first, then every sequence once, in order, under one epoch."""
        assert self.messages and self.messages[0]["type"] == "snapshot"
        assert [m["type"] for m in self.messages[1:]] == ["state"] * (len(self.messages) - 1), \
            [m for m in self.messages[1:] if m["type"] != "state"][:3]
        sequences = [m["sequence"] for m in self.messages]
        assert sequences == list(range(sequences[0], sequences[0] + len(sequences))), sequences[:20]
        assert len({m["epoch"] for m in self.messages}) == 1


def no_refusals(load: Load, cluster) -> None:
    """Asserts that every answer was a 202; names the nodes' logs when not."""
    logs = {name: str(node.log_path) for name, node in cluster.nodes.items()}
    assert load.answers == [], (load.answers[:5], logs)


def ready(node, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if node.get("/readyz").status_code == 200:
            return
        time.sleep(0.05)
    raise AssertionError(f"not ready: {node.get('/readyz').text}")


def join(cluster, load: Load, name: str) -> None:
    """Starts node `name` and, once it is ready, sends part of the load through it."""
    cluster.nodes[name] = cluster.start(name)
    ready(cluster.nodes[name])
    load.through(name, cluster.nodes[name])


def sequence(cluster, name: str) -> int:
    return cluster.nodes[name].spin("counter")["sequence"]


def test_nodes_starting_one_after_another_refuse_nothing(database, start_server):  # noqa: F811
    cluster = Cluster(start_server, database.fresh(), ["n1"], "join")
    ready(cluster.nodes["n1"])
    base = sequence(cluster, "n1")
    load = Load()
    try:
        load.through("n1", cluster.nodes["n1"])
        for name in ("n2", "n3"):
            time.sleep(1)
            join(cluster, load, name)
        # Placement settles on the three while the load runs through all of them.
        time.sleep(3)
    finally:
        load.stop()
    no_refusals(load, cluster)
    assert load.accepted > 50
    owners = cluster.settle(["n1", "n2", "n3"])
    # Every 202 is in the journal once: nothing lost, nothing twice.
    assert sequence(cluster, "n2") == base + load.accepted
    assert rows(cluster.url, "SELECT count(*) - count(DISTINCT sequence) FROM spin_journal WHERE spin = 'counter'") == "0"
    # The counter moved at least once if n2 or n3 owns it now.
    if owners["counter"] != "n1":
        assert int(rows(cluster.url, f"SELECT epoch FROM spin_partitions WHERE partition = {partition_of('counter')}")) >= 2


def test_a_node_stopped_with_sigterm_hands_its_spins_over_and_refuses_nothing(database, start_server):  # noqa: F811
    cluster = Cluster(start_server, database.fresh(), ["n1", "n2", "n3"], "term")
    owners = cluster.settle(["n1", "n2", "n3"])
    victim = owners["counter"]
    survivors = [name for name in ("n1", "n2", "n3") if name != victim]
    base = sequence(cluster, survivors[0])
    load = Load()
    # One stream through a node that stays, one through the owner that leaves: both
    # resume where they were, wherever they reconnect.
    watchers = [Watcher(cluster.nodes[survivors[0]]), Watcher(cluster.nodes[victim])]
    try:
        for name in ("n1", "n2", "n3"):
            load.through(name, cluster.nodes[name])
        time.sleep(1)
        watchers[1].url = cluster.nodes[survivors[1]].base_url.replace("http://", "ws://") + "/v1/spins/counter/stream"
        node = cluster.nodes[victim]
        began = time.monotonic()
        node.process.send_signal(signal.SIGTERM)
        code = node.process.wait(timeout=30)
        node.exit_code = code
        took = time.monotonic() - began
        assert code == 0, node.log_tail()
        # The others see it gone at once, not a heartbeat's age later.
        view = cluster.view(survivors[0])
        assert [n["live"] for n in view["nodes"] if n["node"] == victim] == [False], view
        assert cluster.owners(survivors[0])["counter"] in survivors
        moved_at = load.count()
        time.sleep(1)
        assert load.count() > moved_at + 10
    finally:
        load.stop()
        time.sleep(0.5)
        for watcher in watchers:
            watcher.stop()
    for watcher in watchers:
        watcher.check_continuous()
        assert watcher.connections >= 2
        assert watcher.messages[-1]["sequence"] == base + load.accepted
    assert took < 10, took
    no_refusals(load, cluster)
    assert sequence(cluster, survivors[0]) == base + load.accepted
    assert rows(cluster.url, "SELECT count(*) - count(DISTINCT sequence) FROM spin_journal WHERE spin = 'counter'") == "0"


def test_a_rolling_restart_refuses_nothing(database, start_server):  # noqa: F811
    cluster = Cluster(start_server, database.fresh(), ["n1", "n2", "n3"], "roll")
    cluster.settle(["n1", "n2", "n3"])
    base = sequence(cluster, "n1")
    load = Load()
    try:
        for name in ("n1", "n2", "n3"):
            load.through(name, cluster.nodes[name])
        for name in ("n1", "n2", "n3"):
            time.sleep(1)
            node = cluster.nodes[name]
            assert node.terminate() == 0, node.log_tail()
            join(cluster, load, name)
        time.sleep(1)
    finally:
        load.stop()
    no_refusals(load, cluster)
    cluster.settle(["n1", "n2", "n3"])
    assert sequence(cluster, "n1") == base + load.accepted
    assert rows(cluster.url, "SELECT count(*) - count(DISTINCT sequence) FROM spin_journal WHERE spin = 'counter'") == "0"


def test_a_killed_owner_makes_only_its_spins_unavailable_and_for_at_most_a_lease(database, start_server):  # noqa: F811
    cluster = Cluster(start_server, database.fresh(), ["n1", "n2", "n3"], "crash")
    owners = cluster.settle(["n1", "n2", "n3"])
    victim = owners["counter"]
    survivors = [name for name in ("n1", "n2", "n3") if name != victim]
    others = [spin for spin, owner in owners.items() if owner != victim and spin == "levels"]
    counter = Load()
    bystander = Load("levels", {"type": "increaseLeft"}) if others else None
    try:
        for name in survivors:
            counter.through(name, cluster.nodes[name])
            if bystander:
                bystander.through(name, cluster.nodes[name], threads=1)
        time.sleep(1)
        killed_at = time.monotonic()
        cluster.nodes[victim].kill()
        deadline = time.monotonic() + LEASE_SECONDS * 5
        before = counter.count()
        while time.monotonic() < deadline and counter.count() < before + 20:
            time.sleep(0.05)
        assert counter.count() >= before + 20, counter.answers[-3:]
        time.sleep(0.5)
    finally:
        counter.stop()
        if bystander:
            bystander.stop()
    # Only the dead node's Spins refuse, each refusal a 503 with Retry-After (or, for a
    # POST the dead owner had been sent, 502: it may have been applied), and only until
    # its lease ran out and the new owner recovered the Spin.
    for name, status, code, text, when, retry_after in counter.answers:
        assert (status, code) in {(503, "spin_unavailable"), (502, "proxy_outcome_unknown")}, text
        assert status == 502 or retry_after is not None
        assert when - killed_at <= LEASE_SECONDS + 1.5, (when - killed_at, text)
    if bystander:
        assert bystander.answers == [], bystander.answers[:3]
    window = max((when - killed_at for *_, when, _ in counter.answers), default=0)
    print(f"crash window: {window:.2f} s, {len(counter.answers)} refusals "
          f"({sum(a[1] == 502 for a in counter.answers)} outcome unknown), lease {LEASE_SECONDS} s")
    assert rows(cluster.url, "SELECT count(*) - count(DISTINCT sequence) FROM spin_journal WHERE spin = 'counter'") == "0"
