"""The PostgreSQL storage backend (`storage.backend: postgres`) against a real server
from Debian's `postgresql` package, started for this module by Tests/postgres/pg.sh on a
loopback port (as the `postgres` user when the tests run as root).

Every acknowledged event must survive restarts of the server and of the database;
nothing answered with an error may have been applied; a lost database answers 503
`storage_unavailable` and `/readyz` 503, and the server recovers by itself when the
database is back.
"""
from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests

from spin_e2e import REPO, assert_error
from test_durability import collect, counter_at_ten

PG = REPO / "Tests" / "postgres" / "pg.sh"


def _have_postgres() -> bool:
    return any(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")) and shutil.which("psql") is not None


pytestmark = pytest.mark.skipif(not _have_postgres(), reason="PostgreSQL is not installed (Debian package postgresql)")


class Database:
    """A throwaway PostgreSQL server (pg.sh) that tests may stop and start again."""

    def __init__(self) -> None:
        # Under /tmp, not pytest's tmp_path: the postgres user must be able to enter it.
        self.directory = Path(tempfile.mkdtemp(prefix="spin-pg-", dir="/tmp"))
        self.url = ""

    def start(self) -> None:
        self.url = subprocess.run([str(PG), "start", str(self.directory)], check=True, capture_output=True,
                                  text=True, timeout=120).stdout.strip()

    def stop(self) -> None:
        subprocess.run([str(PG), "stop", str(self.directory)], check=True, timeout=60)

    def remove(self) -> None:
        subprocess.run([str(PG), "remove", str(self.directory)], timeout=60)

    def fresh(self) -> str:
        """A new database on this server; its URL."""
        name = f"spin_e2e_{uuid.uuid4().hex[:8]}"
        subprocess.run(["psql", "-q", self.url, "-c", f"CREATE DATABASE {name}"], check=True, timeout=30,
                       capture_output=True)
        return self.url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(scope="module")
def database():
    instance = Database()
    instance.start()
    yield instance
    instance.remove()


def postgres_env(url: str) -> dict[str, str]:
    return {"SPIN_STORAGE_BACKEND": "postgres", "SPIN_DATABASE_URL": url}


class Posters:
    """Threads POSTing `increase` to the counter until stopped, counting 202s and
    keeping every other answer; a failed connection ends a thread's loop only when
    `stop_on_error`."""

    def __init__(self, server, count: int = 4, stop_on_error: bool = False) -> None:
        self.url = f"{server.base_url}/v1/spins/counter/events"
        self.accepted = 0
        self.refused: list[requests.Response] = []
        self.stop_on_error = stop_on_error
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.post) for _ in range(count)]
        for thread in self.threads:
            thread.start()

    def post(self) -> None:
        http = requests.Session()
        http.trust_env = False
        while not self.stopping.is_set():
            try:
                response = http.post(self.url, json={"type": "increase"}, timeout=10)
            except requests.RequestException:
                if self.stop_on_error:
                    return
                continue
            with self.lock:
                if response.status_code == 202:
                    self.accepted += 1
                else:
                    self.refused.append(response)

    def wait_for(self, condition, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not condition():
            time.sleep(0.01)

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=15)


def test_state_and_sequence_survive_a_restart_and_a_stream_resumes(database, start_server):
    url = database.fresh()
    first = start_server(env=postgres_env(url), name="first")
    assert "storage postgres" in first.log() or "PostgreSQL" in first.log()
    base = counter_at_ten(first)
    assert first.post_events("counter", [{"type": "increase"}] * 3).status_code == 202
    for _ in range(4):
        assert first.post_events("counter", {"type": "increase"}).status_code == 202
    before = first.spin("counter")
    assert before["sequence"] == base["sequence"] + 7
    snapshot = asyncio.run(collect(f"{first.ws_base}/v1/spins/counter/stream", 1))[0]
    assert first.terminate() == 0

    second = start_server(env=postgres_env(url), name="second")
    after = second.spin("counter")
    assert (after["sequence"], after["state"]) == (before["sequence"], before["state"])
    since = snapshot["sequence"] - 3
    messages = asyncio.run(collect(
        f"{second.ws_base}/v1/spins/counter/stream?since={since}&epoch={snapshot['epoch']}", 3))
    assert [(m["type"], m["sequence"], m["epoch"]) for m in messages] == [
        ("state", since + 1, snapshot["epoch"]), ("state", since + 2, snapshot["epoch"]),
        ("state", since + 3, snapshot["epoch"])]
    # Nothing was written to the storage directory: the database holds it all.
    assert not any(second.storage.iterdir())


def test_a_second_server_as_the_same_node_fails_at_start_up(database, start_server, server_bin, tmp_path):
    # Servers on one database form a cluster; two processes may not be one node (both
    # take the host name as their node name here).
    url = database.fresh()
    start_server(env=postgres_env(url), name="owner")
    config = REPO / "Config" / "spin-server.json"
    result = subprocess.run([str(server_bin), "--config", str(config), "--port", "0", "--storage", str(tmp_path / "s"),
                             "--storage-backend", "postgres", "--database-url", url],
                            capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert result.returncode == 1, result
    assert f'another spin-server runs as node "{socket.gethostname()}" on this database' in result.stdout + result.stderr


def test_postgres_without_a_url_is_a_config_error_naming_the_key(server_bin, tmp_path):
    config = REPO / "Config" / "spin-server.json"
    result = subprocess.run([str(server_bin), "--config", str(config), "--check-config", "--storage-backend", "postgres"],
                            capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert result.returncode == 64, result
    assert "storage.url" in result.stderr + result.stdout
    result = subprocess.run([str(server_bin), "--config", str(config), "--check-config", "--storage-backend", "mysql"],
                            capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert result.returncode == 64 and "use file or postgres" in result.stderr + result.stdout, result


def test_a_lost_database_is_never_acknowledged_and_the_server_recovers_when_it_returns(database, start_server):
    url = database.fresh()
    server = start_server(env=postgres_env(url), name="outage")
    base = counter_at_ten(server)

    posters = Posters(server)
    try:
        posters.wait_for(lambda: posters.accepted >= 200)
        database.stop()
        posters.wait_for(lambda: bool(posters.refused))
        assert posters.refused, "no POST was refused while the database was down"
        assert server.get("/readyz").status_code == 503
    finally:
        posters.stop()
    accepted, refused = [posters.accepted], posters.refused
    for response in refused:
        assert_error(response, 503, "storage_unavailable")
    # Nothing answered 503 was applied, and every 202 is in the state.
    spin = server.spin("counter")
    assert spin["sequence"] == base["sequence"] + accepted[0], (base, spin, accepted[0])
    assert spin["state"]["value"] == base["state"]["value"] + accepted[0]
    assert_error(server.post_events("counter", {"type": "increase"}), 503, "storage_unavailable")

    database.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and server.get("/readyz").status_code != 200:
        time.sleep(0.2)
    assert server.get("/readyz").status_code == 200, server.log_tail()
    response = server.post_events("counter", {"type": "increase"})
    assert response.status_code == 202, response.text
    assert response.json()["sequence"] == spin["sequence"] + 1
    assert "works again" in server.log()
    assert server.terminate() == 0

    again = start_server(env=postgres_env(url), name="after-outage")
    final = again.spin("counter")
    assert final["sequence"] == spin["sequence"] + 1
    assert final["state"]["value"] == spin["state"]["value"] + 1


def rows(url: str, sql: str) -> str:
    return subprocess.run(["psql", "-qtA", url, "-c", sql], check=True, capture_output=True, text=True,
                          timeout=30).stdout.strip()


@pytest.mark.parametrize("fsync", ["always", "none"])
def test_every_fsync_policy_keeps_what_it_acknowledged_across_a_clean_restart(database, start_server, fsync):
    url = database.fresh()
    patch = {"storage": {"fsync": fsync}}
    first = start_server(env=postgres_env(url), name=f"first-{fsync}", config_patch=patch)
    base = counter_at_ten(first)
    for _ in range(5):
        assert first.post_events("counter", {"type": "increase"}).status_code == 202
    assert first.terminate() == 0
    second = start_server(env=postgres_env(url), name=f"second-{fsync}", config_patch=patch)
    assert second.spin("counter")["sequence"] == base["sequence"] + 5
    assert rows(url, "SELECT clean FROM spin_nodes") == "f"  # running again


def test_compaction_trims_the_journal_table_and_keeps_the_retained_events(database, start_server):
    url = database.fresh()
    patch = {"storage": {"retainEvents": 20}}
    first = start_server(env=postgres_env(url), name="compacting", config_patch=patch)
    base = counter_at_ten(first)
    for _ in range(12):
        assert first.post_events("counter", [{"type": "increase"}] * 100).status_code == 202
    expected = first.spin("counter")
    assert expected["sequence"] == base["sequence"] + 1200
    assert rows(url, "SELECT count(*) FROM spin_snapshots WHERE spin = 'counter'") == "1"
    kept = int(rows(url, "SELECT count(*) FROM spin_journal WHERE spin = 'counter'"))
    assert 20 <= kept <= 20 + 1000, kept
    snapshot = asyncio.run(collect(f"{first.ws_base}/v1/spins/counter/stream", 1))[0]
    assert first.terminate() == 0

    second = start_server(env=postgres_env(url), name="compacted", config_patch=patch)
    after = second.spin("counter")
    assert (after["sequence"], after["state"]) == (expected["sequence"], expected["state"])
    since = snapshot["sequence"] - 20
    messages = asyncio.run(collect(
        f"{second.ws_base}/v1/spins/counter/stream?since={since}&epoch={snapshot['epoch']}", 20))
    assert [m["sequence"] for m in messages] == list(range(since + 1, since + 21))
    assert all(m["type"] == "state" for m in messages)


def test_history_is_kept_in_segments_and_read_back_after_a_restart(database, start_server):
    url = database.fresh()
    patch = {"storage": {"retainEvents": 20, "history": "all", "snapshotEvery": 100}}
    first = start_server(env=postgres_env(url), name="history", config_patch=patch)
    base = counter_at_ten(first)["sequence"]
    for _ in range(12):
        assert first.post_events("counter", [{"type": "increase"}] * 100).status_code == 202
    assert first.terminate() == 0
    # Segments of 100 events, every one of them, beside a journal compacted to its last ones.
    assert base + 1200 == 1210
    assert rows(url, "SELECT count(*), min(first), max(last) FROM spin_history WHERE spin = 'counter'") == "12|1|1200"
    second = start_server(env=postgres_env(url), name="history-again", config_patch=patch)
    entries, start = [], 1
    while True:
        page = second.get("/v1/spins/counter/history", params={"from": start, "limit": 1000}).json()
        entries += page["entries"]
        if page["next"] is None:
            break
        start = page["next"]
    assert [entry["sequence"] for entry in entries] == list(range(1, base + 1201))
    assert [entry["state"]["value"] for entry in entries] == list(range(1, base + 1201))
    assert second.get("/v1/spins/counter", params={"at": 555}).json()["state"] == {"value": 555}
    # A restore: recorded with its state, a new epoch stored, both read back after a restart.
    epoch = rows(url, "SELECT epoch FROM spin_epochs WHERE spin = 'counter'")
    restored = second.post("/v1/spins/counter/restore", json={"at": 555})
    assert restored.status_code == 200, restored.text
    assert restored.json()["sequence"] == base + 1201 and restored.json()["state"] == {"value": 555}
    new_epoch = rows(url, "SELECT epoch FROM spin_epochs WHERE spin = 'counter'")
    assert new_epoch and new_epoch != epoch
    assert second.terminate() == 0
    third = start_server(env=postgres_env(url), name="history-restored", config_patch=patch)
    assert third.spin("counter")["sequence"] == base + 1201 and third.spin("counter")["state"] == {"value": 555}
    entry = third.get("/v1/spins/counter/history", params={"from": base + 1201}).json()["entries"][0]
    assert entry["event"] == {"type": "spin.restored", "at": 555} and entry["state"] == {"value": 555}
    with third.get("/v1/spins/counter/stream", headers={"Accept": "text/event-stream"}, stream=True) as stream:
        first_line = next(line for line in stream.iter_lines(decode_unicode=True) if line.startswith("data: "))
    assert json.loads(first_line[len("data: "):])["epoch"] == new_epoch


def test_a_killed_server_loses_no_acknowledged_event(database, start_server):
    url = database.fresh()
    server = start_server(env=postgres_env(url), name="killed")
    base = counter_at_ten(server)
    posters = Posters(server, stop_on_error=True)
    posters.wait_for(lambda: posters.accepted >= 300)
    server.kill()
    posters.stop()
    accepted = [posters.accepted]
    assert accepted[0] >= 300 and not posters.refused

    again = start_server(env=postgres_env(url), name="after-kill")
    spin = again.spin("counter")
    # Every 202 is there; a request cut off by the kill may have been applied unanswered.
    assert spin["sequence"] >= base["sequence"] + accepted[0], (base, spin, accepted[0])
    assert spin["sequence"] <= base["sequence"] + accepted[0] + 4
    assert spin["state"]["value"] == base["state"]["value"] + spin["sequence"] - base["sequence"]
