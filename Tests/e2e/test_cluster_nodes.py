"""Three `spin-server` nodes sharing one PostgreSQL database (Tests/postgres/pg.sh): each
Spin is served by one node at a time (a lease with a fencing epoch), any node answers
any request (requests and streams are relayed to the owner), Gear events cross nodes
through the database's outbox, and when an owner dies or is paused its Spins move to a
live node with no acknowledged event lost and none applied twice."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import threading
import time

import pytest
import requests
from websockets.asyncio.client import connect

from spin_e2e import REPO, recv_json, recv_until, run_async
from test_postgres import Database, _have_postgres, postgres_env, rows

pytestmark = pytest.mark.skipif(not _have_postgres(), reason="PostgreSQL is not installed (Debian package postgresql)")

LEASE_SECONDS = 2


@pytest.fixture(scope="module")
def database():
    instance = Database()
    instance.start()
    yield instance
    instance.remove()


# -- placement, as SCALING.md and docs/OPERATIONS.md document it ---------------------------------------------

def fnv1a64(data: bytes, value: int = 0xCBF29CE484222325) -> int:
    for byte in data:
        value ^= byte
        value = (value * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def fmix64(k: int) -> int:
    mask = 0xFFFFFFFFFFFFFFFF
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & mask
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & mask
    k ^= k >> 33
    return k


PARTITIONS = 64  # cluster.partitions' default


def partition_of(spin: str, partitions: int = PARTITIONS) -> int:
    return fmix64(fnv1a64(spin.encode())) % partitions


def owner_of(spin: str, nodes: list[str]) -> str:
    """The node owning the Spin's partition: rendezvous hashing of the partition's
    number in decimal over the node names."""
    key = str(partition_of(spin)).encode()

    def weight(node: str) -> int:
        return fmix64(fnv1a64(node.encode() + b"\x00" + key))
    return sorted(nodes, key=lambda node: (-weight(node), node))[0]


# -- a cluster ---------------------------------------------------------------------------

class Cluster:
    def __init__(self, start_server, url: str, names: list[str], prefix: str) -> None:
        self.url = url
        self.start_server = start_server
        self.prefix = prefix
        self.nodes = {name: self.start(name) for name in names}

    def start(self, name: str):
        env = postgres_env(self.url) | {"SPIN_NODE": name, "SPIN_CLUSTER_LEASE_SECONDS": str(LEASE_SECONDS)}
        return self.start_server(env=env, name=f"{self.prefix}-{name}")

    def live(self) -> list[str]:
        return [name for name, node in self.nodes.items() if node.exit_code is None]

    def view(self, name: str) -> dict:
        return self.nodes[name].get("/v1/cluster").json()

    def owners(self, name: str) -> dict[str, str]:
        return {spin: node["node"] for node in self.view(name)["nodes"] if node["live"] for spin in node["spins"]}

    def settle(self, expected_nodes: list[str], timeout: float = 30) -> dict[str, str]:
        """Waits until every live node sees `expected_nodes` live, every hosted Spin owned
        by the node placement gives it, and the Spins answering; returns the owners."""
        # The configured Spins (those `GET /v1/cluster` names the owner of).
        spins = sorted(entry["name"] for entry in json.loads((REPO / "Config" / "spin-server.json").read_text())["spins"])
        want = {spin: owner_of(spin, expected_nodes) for spin in spins}
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                seen = [self.owners(name) for name in expected_nodes]
                if all(owners == want for owners in seen) and \
                        all(self.nodes[name].get("/readyz").status_code == 200 for name in expected_nodes) and \
                        all(self.nodes[expected_nodes[0]].get(f"/v1/spins/{spin}").status_code == 200 for spin in spins):
                    return want
                last = seen
            except requests.RequestException as error:
                last = repr(error)
            time.sleep(0.2)
        raise AssertionError(f"the cluster did not settle on {want}: {last}")


def post(node, spin: str, event, **kwargs) -> requests.Response:
    return node.http.post(f"{node.base_url}/v1/spins/{spin}/events", json=event, timeout=15, **kwargs)


def test_three_nodes_share_the_spins_and_answer_for_each_other(database, start_server):
    cluster = Cluster(start_server, database.fresh(), ["n1", "n2", "n3"], "share")
    owners = cluster.settle(["n1", "n2", "n3"])
    # Placement spreads the Spins (every node's view lists each Spin once).
    view = cluster.view("n2")
    assert sorted(node["node"] for node in view["nodes"]) == ["n1", "n2", "n3"]
    assert all(node["live"] for node in view["nodes"])
    listed = sorted(spin for node in view["nodes"] for spin in node["spins"])
    assert listed == sorted(owners), view
    # Ownership is by partition: the 64 partitions are shared out, each held once, each
    # node listing the configured Spins of its own.
    held = sorted(partition for node in view["nodes"] for partition in node["partitions"])
    assert held == list(range(PARTITIONS)), view
    for node in view["nodes"]:
        assert all(partition_of(spin) in node["partitions"] for spin in node["spins"]), node

    base = cluster.nodes["n1"].spin("counter")["sequence"]
    for round_ in range(3):
        for name in ("n1", "n2", "n3"):
            response = post(cluster.nodes[name], "counter", {"type": "increase"})
            assert response.status_code == 202, (name, response.text)
    readings = {name: cluster.nodes[name].spin("counter") for name in ("n1", "n2", "n3")}
    assert {reading["sequence"] for reading in readings.values()} == {base + 9}, readings
    assert len({json.dumps(reading["state"], sort_keys=True) for reading in readings.values()}) == 1
    # History is read through any node too (relayed to the owner): the same entries.
    pages = {name: cluster.nodes[name].get("/v1/spins/counter/history", params={"from": base + 1}).json()
             for name in ("n1", "n2", "n3")}
    assert [entry["sequence"] for entry in pages["n2"]["entries"]] == list(range(base + 1, base + 10)), pages["n2"]
    assert pages["n1"] == pages["n2"] == pages["n3"]
    at = {name: cluster.nodes[name].get("/v1/spins/counter", params={"at": base + 4}).json() for name in ("n1", "n2", "n3")}
    assert at["n1"] == at["n2"] == at["n3"] == {"name": "counter", "sequence": base + 4,
                                                   "state": pages["n1"]["entries"][3]["state"]}
    # Replies come through the relay too.
    waited = post(cluster.nodes["n3"], "counter", {"type": "increase"}, params={"wait": "true"})
    assert waited.status_code == 200, waited.text
    assert waited.json()["sequence"] == base + 10
    # So is a restore, sent to a node that does not serve the Spin: recorded once, by the
    # owner, and read back the same through every node.
    other = next(name for name in ("n1", "n2", "n3") if name != owners["counter"])
    restored = cluster.nodes[other].post("/v1/spins/counter/restore", json={"at": base + 4})
    assert restored.status_code == 200, restored.text
    assert restored.json()["sequence"] == base + 11 and restored.json()["state"] == at["n1"]["state"]
    for name in ("n1", "n2", "n3"):
        entry = cluster.nodes[name].get("/v1/spins/counter/history", params={"from": base + 11}).json()["entries"][0]
        assert entry["event"] == {"type": "spin.restored", "at": base + 4} and entry["state"] == at["n1"]["state"]
    assert rows(cluster.url, f"SELECT node FROM spin_partitions WHERE partition = {partition_of('counter')}") == owners["counter"]
    # The list shows where each Spin runs.
    listed = {spin["name"]: spin for spin in cluster.nodes["n1"].get("/v1/spins").json()["spins"]}
    for spin, owner in owners.items():
        if owner == "n1":
            assert listed[spin]["status"] in ("running", "suspended")
        else:
            assert listed[spin] == {"name": spin, "status": "remote", "kind": listed[spin]["kind"], "node": owner}


def test_streams_work_through_a_node_that_does_not_own_the_spin(database, start_server):
    cluster = Cluster(start_server, database.fresh(), ["n1", "n2", "n3"], "stream")
    owners = cluster.settle(["n1", "n2", "n3"])
    owner = owners["counter"]
    reader, writer = [name for name in ("n1", "n2", "n3") if name != owner][:2]

    async def scenario():
        async with connect(cluster.nodes[reader].ws_base + "/v1/spins/counter/stream", open_timeout=5,
                           close_timeout=5, proxy=None) as stream:
            snapshot = await recv_json(stream)
            assert snapshot["type"] == "snapshot"
            for _ in range(3):
                response = await asyncio.to_thread(post, cluster.nodes[writer], "counter", {"type": "increase"})
                assert response.status_code == 202, response.text
            sequences = []
            while len(sequences) < 3:
                message = await recv_json(stream, 10)
                if message["type"] == "state":
                    sequences.append(message["sequence"])
            assert sequences == [snapshot["sequence"] + 1, snapshot["sequence"] + 2, snapshot["sequence"] + 3]
            # Events sent on the relayed stream are acknowledged by the owner.
            await stream.send(json.dumps({"type": "event", "id": "e1", "event": {"type": "increase"}}))
            ack, _ = await recv_until(stream, lambda m: m.get("type") == "ack")
            assert ack["id"] == "e1" and ack["sequence"] == snapshot["sequence"] + 4, ack

    run_async(scenario(), timeout=40)
    # Server-sent events through a non-owner, with curl.
    result = subprocess.run(["curl", "-sS", "-N", "--noproxy", "*", "--max-time", "3", "-H", "Accept: text/event-stream",
                             f"{cluster.nodes[reader].base_url}/v1/spins/counter/stream"],
                            capture_output=True, text=True, timeout=15)
    assert "event: snapshot" in result.stdout or '"type":"snapshot"' in result.stdout, result


def names_splitting(spins: tuple[str, str], count: int = 3) -> list[str]:
    """Node names for which placement puts the two Spins on different nodes."""
    for offset in range(200):
        names = [f"node{offset}-{index}" for index in range(count)]
        if owner_of(spins[0], names) != owner_of(spins[1], names):
            return names
    raise AssertionError("no split found")


def test_gear_events_cross_nodes_through_the_database(database, start_server):
    names = names_splitting(("feature", "router"))
    cluster = Cluster(start_server, database.fresh(), names, "gear")
    owners = cluster.settle(names)
    assert owners["feature"] != owners["router"]
    entry = cluster.nodes[[name for name in names if name not in (owners["feature"], owners["router"])][0]]

    def route_is(route: str):
        return lambda m: m.get("type") == "state" and m.get("state", {}).get("route") == route

    async def scenario():
        open_ws = lambda path: connect(entry.ws_base + path, open_timeout=5, close_timeout=5, proxy=None)
        async with open_ws("/v1/spins/router/stream") as router:
            snapshot = await recv_json(router)
            checks = snapshot["state"]["authorizationChecks"]
            assert snapshot["state"]["route"] == "home"
            # The feature (on one node) gets an unauthorized answer and says so on Gear
            # `auth`; the router (on another) checks again and goes home.
            response = await asyncio.to_thread(post, entry, "feature", {"type": "unauthorizedResponse"})
            assert response.status_code == 202, response.text
            checking, _ = await recv_until(router, route_is("checkingAuthorization"), timeout=15)
            assert checking["state"]["authorizationChecks"] == checks + 1
            home, _ = await recv_until(router, route_is("home"), timeout=15)
            assert home["sequence"] == checking["sequence"] + 1

    run_async(scenario(), timeout=40)
    # Delivered once: one more check, not two.
    time.sleep(1)
    assert entry.spin("router")["state"]["authorizationChecks"] == \
        cluster.nodes[owners["router"]].spin("router")["state"]["authorizationChecks"]
    assert rows(cluster.url, "SELECT count(*) FROM spin_gear_outbox WHERE gear = 'auth'") != "0"


class Posters:
    """Threads POSTing `increase` to the counter through the given nodes until stopped;
    counts 202s, and the answers that leave the outcome open (the relay lost the owner
    mid-request), apart from clear refusals."""

    def __init__(self, nodes, per_node: int = 2) -> None:
        self.accepted = 0
        self.unknown = 0
        self.refused: list[tuple[int, str]] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(node,)) for node in nodes for _ in range(per_node)]
        for thread in self.threads:
            thread.start()

    def run(self, node) -> None:
        http = requests.Session()
        http.trust_env = False
        url = f"{node.base_url}/v1/spins/counter/events"
        while not self.stopping.is_set():
            try:
                response = http.post(url, json={"type": "increase"}, timeout=15)
            except requests.RequestException:
                with self.lock:
                    self.unknown += 1
                time.sleep(0.05)
                continue
            with self.lock:
                if response.status_code == 202:
                    self.accepted += 1
                elif response.status_code == 502:
                    self.unknown += 1
                else:
                    code = response.json().get("error", {}).get("code", "") if response.content else ""
                    self.refused.append((response.status_code, code))
                    time.sleep(0.05)

    def wait_for(self, condition, timeout: float = 30) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if condition():
                    return True
            time.sleep(0.01)
        return False

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=20)


@pytest.mark.parametrize("round_", [1, 2])
def test_a_killed_owner_loses_no_acknowledged_event_and_its_spins_move(database, start_server, round_):
    cluster = Cluster(start_server, database.fresh(), ["n1", "n2", "n3"], f"kill{round_}")
    owners = cluster.settle(["n1", "n2", "n3"])
    victim = owners["counter"]
    survivors = [name for name in ("n1", "n2", "n3") if name != victim]
    base = cluster.nodes[survivors[0]].spin("counter")["sequence"]
    posters = Posters([cluster.nodes[name] for name in survivors])
    try:
        assert posters.wait_for(lambda: posters.accepted >= 100), posters.refused[-5:]
        cluster.nodes[victim].kill()
        killed_at = posters.accepted
        # The counter moves to a survivor within the lease plus a tick and recovery.
        assert posters.wait_for(lambda: posters.accepted >= killed_at + 100, timeout=LEASE_SECONDS * 10), \
            (posters.accepted, posters.refused[-5:])
    finally:
        posters.stop()
    for status, code in posters.refused:
        assert (status, code) in {(503, "spin_unavailable"), (503, "storage_unavailable")}, posters.refused[:5]
    readings = [cluster.nodes[name].spin("counter") for name in survivors]
    assert readings[0]["sequence"] == readings[1]["sequence"]
    applied = readings[0]["sequence"] - base
    # Every 202 is there; nothing was applied that nobody may have been told about.
    assert posters.accepted <= applied <= posters.accepted + posters.unknown, (applied, posters.accepted, posters.unknown)
    assert readings[0]["state"]["value"] == cluster.nodes[survivors[0]].spin("counter")["state"]["value"]
    # Each node's view is as fresh as its last tick (a third of the lease).
    deadline = time.monotonic() + LEASE_SECONDS * 3
    while time.monotonic() < deadline and cluster.owners(survivors[0]).get("counter") not in survivors:
        time.sleep(0.2)
    assert cluster.owners(survivors[0]).get("counter") in survivors
    epochs = int(rows(cluster.url, f"SELECT epoch FROM spin_partitions WHERE partition = {partition_of('counter')}"))
    assert epochs >= 2
    assert rows(cluster.url, "SELECT count(*) - count(DISTINCT sequence) FROM spin_journal WHERE spin = 'counter'") == "0"


def test_a_paused_owner_is_fenced_out_and_stops_serving_when_it_wakes(database, start_server):
    cluster = Cluster(start_server, database.fresh(), ["n1", "n2", "n3"], "pause")
    owners = cluster.settle(["n1", "n2", "n3"])
    victim = owners["counter"]
    survivors = [name for name in ("n1", "n2", "n3") if name != victim]
    paused = cluster.nodes[victim]
    base = cluster.nodes[survivors[0]].spin("counter")
    paused.process.send_signal(signal.SIGSTOP)
    try:
        # Another node takes the counter once the paused owner's lease runs out.
        deadline = time.monotonic() + LEASE_SECONDS * 10
        while time.monotonic() < deadline:
            if cluster.owners(survivors[0]).get("counter") in survivors:
                break
            time.sleep(0.2)
        accepted = 0
        refused = []
        deadline = time.monotonic() + LEASE_SECONDS * 5
        while accepted < 10 and time.monotonic() < deadline:
            response = post(cluster.nodes[survivors[1]], "counter", {"type": "increase"})
            if response.status_code == 202:
                accepted += 1
            else:
                # Each node's view is a tick old at most: until then, 503 spin_unavailable.
                assert response.status_code == 503 and response.json()["error"]["code"] == "spin_unavailable", response.text
                refused.append(response)
                time.sleep(0.1)
        assert accepted == 10, refused[-1].text if refused else accepted
        # A POST reaches the paused process directly; it is read when it wakes.
        answer: list[requests.Response | Exception] = []

        def direct() -> None:
            try:
                answer.append(post(paused, "counter", {"type": "increase"}))
            except requests.RequestException as error:
                answer.append(error)

        thread = threading.Thread(target=direct)
        thread.start()
        time.sleep(0.3)
    finally:
        paused.process.send_signal(signal.SIGCONT)
    thread.join(timeout=30)
    if isinstance(answer[0], requests.Response) and answer[0].status_code == 202:
        accepted += 1   # it went to the new owner (relayed) or was refused by the fence
    # The woken node stops serving what it lost.
    deadline = time.monotonic() + LEASE_SECONDS * 5
    while time.monotonic() < deadline and "counter" in [s for n in paused.get("/v1/cluster").json()["nodes"]
                                                        if n["node"] == victim for s in n["spins"]]:
        time.sleep(0.2)
    final = cluster.nodes[survivors[0]].spin("counter")
    assert final["sequence"] == base["sequence"] + accepted, (final, base, accepted, answer)
    assert paused.spin("counter")["sequence"] == final["sequence"]   # relayed to the owner now
    assert rows(cluster.url, "SELECT count(*) - count(DISTINCT sequence) FROM spin_journal WHERE spin = 'counter'") == "0"


def test_the_database_going_away_and_back(database, start_server):
    cluster = Cluster(start_server, database.fresh(), ["n1", "n2", "n3"], "outage")
    cluster.settle(["n1", "n2", "n3"])
    entry = cluster.nodes["n2"]
    base = entry.spin("counter")["sequence"]
    accepted = sum(post(entry, "counter", {"type": "increase"}).status_code == 202 for _ in range(5))
    assert accepted == 5
    database.stop()
    try:
        response = post(entry, "counter", {"type": "increase"})
        assert response.status_code in (503, 502), response.text
    finally:
        database.start()
    # Back: the nodes reconnect, renew or retake their leases, and serve again.
    cluster.settle(["n1", "n2", "n3"], timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        response = post(entry, "counter", {"type": "increase"})
        if response.status_code == 202:
            accepted += 1
            break
        time.sleep(0.3)
    assert response.status_code == 202, response.text
    assert entry.spin("counter")["sequence"] == base + accepted


def test_a_node_with_another_partition_count_is_refused_while_the_cluster_runs(database, start_server, server_bin,
                                                                                tmp_path):
    # The partition count decides who owns every Spin: every node must use the same one.
    url = database.fresh()
    start_server(env=postgres_env(url) | {"SPIN_NODE": "n1", "SPIN_CLUSTER_LEASE_SECONDS": str(LEASE_SECONDS)},
                 name="counted")
    config = REPO / "Config" / "spin-server.json"
    result = subprocess.run([str(server_bin), "--config", str(config), "--port", "0", "--storage", str(tmp_path / "s"),
                             "--storage-backend", "postgres", "--database-url", url, "--node", "n2"],
                            capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL, cwd=tmp_path,
                            env=os.environ | {"SPIN_CLUSTER_PARTITIONS": "32"})
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "cluster.partitions is 32 here, but the cluster's database records 64 and another node is alive" in output, output
