"""Spins made at run time on a cluster: three real nodes on one PostgreSQL, the default
config's kinds (`door-*` on Gear `doors-{key}`, the auth-routing pair `feature-*` and
`router-*` on `auth-{key}`). Made, read, fed, listed and deleted through any node; each
lives on the node that holds its partition, and moves with it, its state kept, when that
node stops or dies."""
from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from test_cluster_nodes import LEASE_SECONDS, PARTITIONS, Cluster, database, partition_of  # noqa: F401 (the fixture)
from test_postgres import _have_postgres, rows

pytestmark = pytest.mark.skipif(not _have_postgres(), reason="PostgreSQL is not installed (Debian package postgresql)")

NODES = ["n1", "n2", "n3"]


# A Spin of a kind with `{key}` Gears (`door-*`, `feature-*`, `router-*`) is placed by its
# key (SCALING.md): `partition_of("7")` is door-7's partition.


def holder(cluster: Cluster, partition: int, via: str) -> str:
    """The node whose lease of `partition` the view of node `via` shows."""
    for node in cluster.view(via)["nodes"]:
        if node["live"] and partition in node["partitions"]:
            return node["node"]
    raise AssertionError(f"no live node holds partition {partition}: {cluster.view(via)}")


def put(node, name: str, kind: str = "door") -> requests.Response:
    return node.http.put(f"{node.base_url}/v1/spins/{name}", json={"kind": kind}, timeout=30)


def locked_doors(cluster: Cluster, count: int) -> dict[str, str]:
    """Makes `door-0` … through the nodes in turn, locks each through the next node, and
    returns each one's owner (the holder of its partition)."""
    names = [f"door-{index}" for index in range(count)]
    for index, name in enumerate(names):
        assert put(cluster.nodes[NODES[index % 3]], name).status_code == 201
        assert cluster.nodes[NODES[(index + 1) % 3]].post_events(name, {"type": "LOCK"}).status_code == 202
    return {name: holder(cluster, partition_of(name.split("-")[1]), "n1") for name in names}


def test_spins_made_through_any_node_live_on_their_partitions_owner(database, start_server):
    cluster = Cluster(start_server, database.fresh(), NODES, "made")
    cluster.settle(NODES)
    names = [f"door-{index}" for index in range(60)]
    entries = [cluster.nodes[NODES[index % 3]] for index in range(len(names))]
    with ThreadPoolExecutor(8) as pool:
        made = list(pool.map(put, entries, names))
    assert [response.status_code for response in made] == [201] * len(names), [r.text for r in made if r.status_code != 201][:3]
    # Made again with the same kind through another node: 200; with another kind: 409.
    again = put(cluster.nodes["n2"], "door-7")
    assert again.status_code == 200 and again.json()["kind"] == "door", again.text
    other = put(cluster.nodes["n3"], "door-7", kind="feature")
    assert other.status_code == 409 and other.json()["error"]["code"] == "spin_exists", other.text
    # Their rows are in the database, each with its epoch; no node wrote a lease per Spin.
    assert rows(cluster.url, "SELECT count(*) FROM spin_made WHERE name LIKE 'door-%'") == str(len(names))
    assert int(rows(cluster.url, "SELECT count(*) FROM spin_partitions")) <= PARTITIONS

    # Events through a node other than the owner reach the Spin on its owner.
    for index, name in enumerate(names[:12]):
        owner = holder(cluster, partition_of(str(index)), "n1")
        entry = cluster.nodes[next(node for node in NODES if node != owner)]
        response = entry.post_events(name, {"type": "LOCK"})
        assert response.status_code == 202, (name, response.text)
    for index, name in enumerate(names[:12]):
        reading = cluster.nodes[NODES[index % 3]].spin(name)
        assert reading["state"]["value"] == "locked" and reading["sequence"] == 1, reading
    # The listing pages over the database: every Spin, from any node, waking none.
    listed = [spin["name"] for spin in cluster.nodes["n3"].listed(prefix="door-", limit=25)]
    assert listed == sorted(names, key=lambda name: name.encode()), listed[:5]

    # Deleted through any node: gone everywhere, history and all; the name can be made again.
    deleted = cluster.nodes["n2"].http.delete(f"{cluster.nodes['n2'].base_url}/v1/spins/door-3", timeout=30)
    assert deleted.status_code == 200, deleted.text
    for name in NODES:
        assert cluster.nodes[name].get("/v1/spins/door-3").status_code == 404
    assert rows(cluster.url, "SELECT count(*) FROM spin_journal WHERE spin = 'door-3'") == "0"
    remade = put(cluster.nodes["n1"], "door-3")
    assert remade.status_code == 201 and remade.json()["sequence"] == 0, remade.text
    assert cluster.nodes["n3"].spin("door-3")["state"]["value"] == "closed"

    # The Spins on one Gear share a partition: feature-5 and router-5 (Gear auth-5) are
    # made on one node, whichever node is asked.
    assert put(cluster.nodes["n1"], "feature-5", kind="feature").status_code == 201
    assert put(cluster.nodes["n2"], "router-5", kind="router").status_code == 201
    owner = holder(cluster, partition_of("5"), "n3")
    assert rows(cluster.url, "SELECT count(*) FROM spin_made WHERE name IN ('feature-5', 'router-5')") == "2"
    assert cluster.nodes["n3"].spin("router-5")["state"]["route"] in ("checkingAuthorization", "home")
    # The router checks the session at once (a feedback) and the feature gets it on Gear
    # auth-5: both on the partition's node, answering through the others.
    entry = cluster.nodes[next(node for node in NODES if node != owner)]
    assert entry.post_events("feature-5", {"type": "load"}).status_code == 202
    deadline = time.monotonic() + 10
    while entry.spin("feature-5")["state"]["status"] != "loaded":
        assert time.monotonic() < deadline, entry.spin("feature-5")
        time.sleep(0.1)


def test_made_spins_move_with_their_partition_when_a_node_stops_or_dies(database, start_server):
    cluster = Cluster(start_server, database.fresh(), NODES, "made-moves")
    cluster.settle(NODES)
    owners = locked_doors(cluster, 30)
    names = list(owners)

    # SIGTERM: the node hands its partitions over; its Spins answer from the others.
    leaving = owners["door-0"]
    assert cluster.nodes[leaving].terminate() == 0
    survivors = [name for name in NODES if name != leaving]
    cluster.settle(survivors)
    for name in names:
        reading = cluster.nodes[survivors[0]].spin(name)
        assert reading["state"]["value"] == "locked" and reading["sequence"] == 1, (name, reading)
    moved = [name for name in names if owners[name] == leaving]
    assert moved
    for name in moved:
        response = cluster.nodes[survivors[1]].post_events(name, {"type": "UNLOCK", "code": "1234"})
        assert response.status_code == 202, response.text

    # SIGKILL: after the lease, the other node serves them, every acknowledged event kept.
    victim = holder(cluster, partition_of(moved[0].split("-")[1]), survivors[0])
    cluster.nodes[victim].kill()
    last = next(name for name in survivors if name != victim)
    deadline = time.monotonic() + LEASE_SECONDS * 8
    while True:
        response = cluster.nodes[last].get(f"/v1/spins/{moved[0]}")
        if response.status_code == 200:
            break
        assert time.monotonic() < deadline, (response.status_code, response.text)
        time.sleep(0.2)
    for name in names:
        reading = cluster.nodes[last].spin(name)
        expected = ("closed", 2) if name in moved else ("locked", 1)
        assert (reading["state"]["value"], reading["sequence"]) == expected, (name, reading)


def test_a_paused_owners_made_spins_go_on_elsewhere_and_it_commits_nothing_when_it_wakes(database, start_server):
    """The owner of a made Spin is stopped (SIGSTOP) past its lease: another node takes the
    partition and the Spin goes on there from what is durable. When the paused node goes
    on, it has lost the lease: it answers nothing from its memory (its first read shows the
    new owner's state), lets the Spin go without committing anything under the old epoch
    (the lease loop does not wait for that), and every node answers with the new owner's
    state. Then the partition comes back to it (placement), and the Spin goes
    on there again from that state."""
    cluster = Cluster(start_server, database.fresh(), NODES, "made-paused")
    cluster.settle(NODES)
    owners = locked_doors(cluster, 12)
    names = list(owners)
    victim = owners["door-0"]
    paused = cluster.nodes[victim]
    moved = [name for name in names if owners[name] == victim]
    others = [name for name in NODES if name != victim]
    paused.process.send_signal(signal.SIGSTOP)
    try:
        # Another node takes the partitions once the lease and the heartbeat run out.
        deadline = time.monotonic() + LEASE_SECONDS * 10
        partitions = {partition_of(name.split("-")[1]) for name in moved}
        while True:
            try:
                if all(holder(cluster, partition, others[0]) in others for partition in partitions):
                    break
            except AssertionError:
                pass  # between the lease's end and the takeover: nobody holds it
            assert time.monotonic() < deadline, cluster.view(others[0])
            time.sleep(0.2)
        # The Spins go on there from their durable state.
        for index, name in enumerate(moved):
            response = cluster.nodes[others[index % 2]].post_events(name, {"type": "UNLOCK", "code": "1234"})
            assert response.status_code == 202, response.text
    finally:
        paused.process.send_signal(signal.SIGCONT)
    # Its first read, at once: not the state it had in memory when it was paused (its
    # lease ran out by its own clock), but the new owner's.
    first = paused.get(f"/v1/spins/{moved[0]}")
    assert first.status_code == 200, first.text
    assert (first.json()["state"]["value"], first.json()["sequence"]) == ("closed", 2), first.text
    # Every node, the woken one included, answers with the new owner's state.
    for name in names:
        expected = ("closed", 2) if name in moved else ("locked", 1)
        for node in NODES:
            deadline = time.monotonic() + LEASE_SECONDS * 10
            while True:
                response = cluster.nodes[node].get(f"/v1/spins/{name}")
                if response.status_code == 200:
                    reading = response.json()
                    if (reading["state"]["value"], reading["sequence"]) == expected:
                        break
                assert time.monotonic() < deadline, (node, name, response.status_code, response.text)
                time.sleep(0.2)
    # Nothing was committed twice under two epochs.
    assert rows(cluster.url, "SELECT count(*) FROM (SELECT spin, sequence FROM spin_journal "
                             "GROUP BY spin, sequence HAVING count(*) > 1) AS twice") == "0"
    # The partitions come back to the woken node, and the Spins go on there.
    cluster.settle(NODES)
    for name in moved:
        response = cluster.nodes[others[0]].post_events(name, {"type": "OPEN"})
        assert response.status_code == 202, response.text
        # Opened, and closed again by its 300 ms timer or not yet: either way, after it.
        assert cluster.nodes[victim].spin(name)["sequence"] >= 3
