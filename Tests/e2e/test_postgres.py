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
import shutil
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


def test_a_second_server_on_the_same_database_fails_at_start_up(database, start_server, server_bin, tmp_path):
    url = database.fresh()
    start_server(env=postgres_env(url), name="owner")
    config = REPO / "Config" / "spin-server.json"
    result = subprocess.run([str(server_bin), "--config", str(config), "--port", "0", "--storage", str(tmp_path / "s"),
                             "--storage-backend", "postgres", "--database-url", url],
                            capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert result.returncode == 1, result
    assert "another spin-server uses this database" in result.stdout + result.stderr


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

    accepted = [0]
    refused: list[requests.Response] = []
    lock = threading.Lock()
    stop = threading.Event()

    def post() -> None:
        http = requests.Session()
        http.trust_env = False
        while not stop.is_set():
            try:
                response = http.post(f"{server.base_url}/v1/spins/counter/events", json={"type": "increase"}, timeout=10)
            except requests.RequestException:
                continue
            with lock:
                if response.status_code == 202:
                    accepted[0] += 1
                else:
                    refused.append(response)

    threads = [threading.Thread(target=post) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and accepted[0] < 200:
            time.sleep(0.01)
        database.stop()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not refused:
            time.sleep(0.01)
        assert refused, "no POST was refused while the database was down"
        assert server.get("/readyz").status_code == 503
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=15)
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
