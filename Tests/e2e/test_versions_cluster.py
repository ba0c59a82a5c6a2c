"""A rolling upgrade of the door kind's machine file on a cluster of three `spin-server`
nodes on one PostgreSQL (docs/MACHINES.md, "Versions and migrations"): one node at a
time is stopped and started on version 2, and an upgraded node goes away for a while in
the middle. A partition an upgraded node held goes only to upgraded nodes while one runs,
so no door is ever served by a node whose file is older than what it was recorded under;
no request is refused; every door ends on version 2, migrated once. `--check-upgrade` runs beside the cluster, as a node of its
own name."""
from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest
import requests

from test_cluster_moves import Load, join, no_refusals
from test_cluster_nodes import LEASE_SECONDS, Cluster, database  # noqa: F401 (the fixture)
from test_postgres import _have_postgres
from test_versions import door_v2

pytestmark = pytest.mark.skipif(not _have_postgres(), reason="PostgreSQL is not installed (Debian package postgresql)")

NODES = ["n1", "n2", "n3"]
DOORS = 60


class Readers:
    """Reads every door through every live node in turn, until stopped: each answer that
    is not a running (or done) door, and the version each door was last seen at."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.bad: list[tuple] = []
        self.versions: dict[str, list[int]] = {}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        http = requests.Session()
        http.trust_env = False
        while not self.stopping.is_set():
            for index in range(DOORS):
                for name, node in list(self.cluster.nodes.items()):
                    if node.exit_code is not None or node.process is None or node.process.poll() is not None:
                        continue
                    try:
                        response = http.get(f"{node.base_url}/v1/spins/door-{index}", timeout=30)
                    except requests.RequestException:
                        continue   # the node is stopping
                    door = response.json() if response.status_code == 200 else None
                    if door is None or door["status"] not in ("running", "asleep"):
                        self.bad.append((name, index, response.status_code, response.text[:300]))
                        continue
                    seen = self.versions.setdefault(f"door-{index}", [])
                    if not seen or seen[-1] != door["version"]:
                        seen.append(door["version"])

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=60)


def test_a_rolling_upgrade_moves_every_door_to_version_2_and_refuses_nothing(database, start_server, server_bin):
    cluster = Cluster(start_server, database.fresh(), NODES, "upgrade")
    cluster.settle(NODES)
    http = requests.Session()
    http.trust_env = False
    for index in range(DOORS):
        node = cluster.nodes[NODES[index % 3]]
        events = [[{"type": "LOCK"}], [{"type": "OPEN"}, {"type": "CLOSE"}], [{"type": "CLOSE"}]][index % 3]
        for event in events:
            response = http.post(f"{node.base_url}/v1/spins/door-{index}/events?wait=true", json=event, timeout=30)
            assert response.status_code == 200, response.text

    # What version 2 would do, checked beside the running cluster: nothing changes.
    checker = cluster.nodes["n1"]
    (checker.config_path.parent / "machines" / "door-v2.json").write_text(json.dumps(door_v2()))
    config = json.loads(checker.config_path.read_text())
    for kind in config["kinds"]:
        if kind["name"] == "door":
            kind["machine"] = "machines/door-v2.json"
    check_path = checker.config_path.parent / "check.json"
    check_path.write_text(json.dumps(config))
    command = [str(server_bin), "--config", str(check_path), "--node", "check", "--check-upgrade"]
    checked = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=checker.workdir, env=checker.env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"kind.door, version 2: {DOORS} Spin(s) checked; {DOORS // 3} at version 2; {2 * DOORS // 3} migrate from version 1" \
        in checked.stdout, checked.stdout

    loads = [Load(spin=f"door-{index}", event={"type": "OPEN"}) for index in (1, 4, 7)]
    readers = Readers(cluster)
    try:
        for load in loads:
            for name in NODES:
                load.through(name, cluster.nodes[name], threads=1)
        def restart(name: str, upgrade: bool, pause: float = 0) -> None:
            time.sleep(1)
            node = cluster.nodes[name]
            assert node.terminate() == 0, node.log_tail()
            if upgrade:
                (node.workdir / "Config" / "machines" / "door.json").write_text(json.dumps(door_v2(), indent=2))
            time.sleep(pause)
            cluster.nodes[name] = cluster.start(name)
            for load in loads:
                load.through(name, cluster.nodes[name], threads=1)

        restart("n3", upgrade=True)
        restart("n2", upgrade=True)
        # n3 goes away for a while before n1 is upgraded: the partitions it held (doors it
        # migrated among them) go to n2 alone, never to n1, which still runs version 1.
        restart("n3", upgrade=False, pause=2 * LEASE_SECONDS)
        restart("n1", upgrade=True)
        time.sleep(2)
    finally:
        readers.stop()
        for load in loads:
            load.stop()
    assert not readers.bad, readers.bad[:5]
    logs = {name: node.log() for name, node in cluster.nodes.items()}
    assert not [name for name, log in logs.items() if "UNRECOVERABLE" in log], "a node served a door it cannot run"
    for load in loads:
        no_refusals(load, cluster)
        assert load.accepted > 10
    # A door is never seen back on version 1 once seen on version 2.
    assert all(seen in ([1], [2], [1, 2]) for seen in readers.versions.values()), readers.versions

    cluster.settle(NODES)
    view = cluster.view("n2")
    assert all(node.get("definitions") == {"kind.door": 2, "spin.session": 1} for node in view["nodes"] if node["live"]), json.dumps(view)
    for index in range(DOORS):
        door = cluster.nodes["n1"].spin(f"door-{index}")
        assert door["status"] == "running" and door["version"] == 2, door
        if index % 3 == 0:
            assert door["state"]["value"] == "locked", door
        elif index in (1, 4, 7):
            assert door["state"]["value"] in ("ajar", "shut"), door
        elif index % 3 == 1:
            assert door["state"] == {"value": "shut", "context": {"opens": 1, "code": "1234", "alarms": 0}}, door
        else:
            assert door["state"]["value"] == "shut" and door["sequence"] == 0, door
