"""Machine files that change under stored Spins (docs/MACHINES.md, "Versions and
migrations"): a new `"version"` with `"migrations"` moves each Spin once, journaled as
its own transition, its history before it replayed through the version it was applied
under; a state no migration maps leaves that Spin alone unrecoverable; `--check-upgrade`
says what a restart would do, changing nothing."""
from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from websockets.asyncio.client import connect

from spin_e2e import REPO, SpinServer, assert_error, recv_json, run_async
from test_machines import machine_server, send  # noqa: F401 (the fixture)

LIGHT = {"id": "light", "initial": "green", "context": {"cycles": 0},
         "states": {"green": {"on": {"NEXT": "yellow"}}, "yellow": {"on": {"NEXT": "red"}},
                    "red": {"on": {"NEXT": {"target": "green",
                                            "actions": [{"type": "assign", "set": {"cycles": {"add": 1}}}]}}}}}


def light_v2() -> dict:
    """`green` renamed `go`, a context key added, `cycles` renamed `rounds`; `red` now
    counts by 10, so a replay through this version instead of version 1 shows."""
    v2 = json.loads(json.dumps(LIGHT).replace('"green"', '"go"').replace('"cycles"', '"rounds"'))
    v2["version"] = 2
    v2["context"]["honks"] = 0
    v2["states"]["red"]["on"]["NEXT"]["actions"][0]["set"]["rounds"] = {"add": 10}
    v2["migrations"] = {"1": {"states": {"green": "go"}, "context": {"rename": {"cycles": "rounds"}}}}
    return v2


SPINS = [{"name": name, "machine": "machines/light.json"} for name in ("a", "b", "c")]


def test_a_new_version_migrates_each_spin_once_and_history_only_grows(machine_server, tmp_path):
    storage = tmp_path / "storage"
    first = machine_server({"light.json": LIGHT}, SPINS, storage=storage, name="v1")
    assert send(first, "a", *([{"type": "NEXT"}] * 7))["state"] == {"value": "yellow", "context": {"cycles": 2}}
    assert send(first, "b", {"type": "NEXT"}, {"type": "NEXT"})["state"]["value"] == "red"
    epoch = (storage / "a.epoch").read_text()
    assert first.terminate() == 0

    second = machine_server({"light.json": light_v2()}, SPINS, storage=storage, name="v2")
    a = second.spin("a")
    # Replayed through version 1 (cycles 2, not 20), then migrated at the next sequence.
    assert a["sequence"] == 8, a
    assert a["state"] == {"value": "yellow", "context": {"rounds": 2, "honks": 0}}, a
    assert second.spin("b")["state"] == {"value": "red", "context": {"rounds": 0, "honks": 0}}
    # The same history under the same epoch, grown by the migration: a stream resumed
    # before it gets event 7 as version 1 made it, then the migration.
    assert (storage / "a.epoch").read_text() == epoch

    async def resume():
        async with connect(f"{second.ws_base}/v1/spins/a/stream?since=6&epoch={epoch}") as ws:
            messages = []
            while not messages or messages[-1].get("sequence", 0) < 8:
                messages.append(await recv_json(ws, 10))
            return messages
    messages = run_async(resume())
    by_sequence = {m["sequence"]: m for m in messages if m.get("type") == "state"}
    assert by_sequence[7]["state"] == {"value": "yellow", "context": {"cycles": 2}}, messages
    assert by_sequence[8]["event"] == {"type": "spin.migrated", "from": 1, "to": 2}, messages
    assert by_sequence[8]["state"] == {"value": "yellow", "context": {"rounds": 2, "honks": 0}}, messages
    # Version 2's reducer from here on.
    assert send(second, "a", {"type": "NEXT"}, {"type": "NEXT"})["state"]["context"]["rounds"] == 12
    assert second.terminate() == 0

    # Restarted on version 2: nothing more to migrate, the migration replayed, not repeated.
    third = machine_server({"light.json": light_v2()}, SPINS, storage=storage, name="v2-again")
    assert third.spin("a")["sequence"] == 10
    assert third.spin("a")["state"]["context"] == {"rounds": 12, "honks": 0}
    assert third.terminate() == 0


def test_a_state_no_migration_maps_leaves_only_that_spin_unrecoverable(machine_server, tmp_path):
    storage = tmp_path / "storage"
    first = machine_server({"light.json": LIGHT}, SPINS, storage=storage, name="v1")
    send(first, "a", {"type": "NEXT"})
    assert send(first, "b", *([{"type": "NEXT"}] * 3))["state"]["value"] == "green"
    assert first.terminate() == 0
    v2 = light_v2()
    v2["migrations"]["1"]["states"] = {}         # green is gone and nothing maps it: b is in it
    second = machine_server({"light.json": v2}, SPINS, storage=storage, name="v2")
    b = second.spin("b")
    assert b["status"] == "unrecoverable", b
    error = b["unrecoverable"]["error"]
    assert '"green"' in error and "version 1" in error and "version 2" in error and '"migrations"' in error, error
    # A Spin with nothing recorded starts in version 2; the one in yellow moved; both run.
    assert second.spin("c")["state"]["value"] == "go"
    assert send(second, "a", {"type": "NEXT"})["state"]["value"] == "red"
    assert second.terminate() == 0


def test_a_newer_recorded_version_is_never_run_by_an_older_file(machine_server, tmp_path):
    storage = tmp_path / "storage"
    newer = machine_server({"light.json": light_v2()}, SPINS, storage=storage, name="v2")
    send(newer, "a", {"type": "NEXT"})
    assert newer.terminate() == 0
    older = machine_server({"light.json": LIGHT}, SPINS, storage=storage, name="v1")
    a = older.spin("a")
    assert a["status"] == "unrecoverable", a
    assert "version 2" in a["unrecoverable"]["error"] and "newer" in a["unrecoverable"]["error"], a
    assert "storage holds version 2" in older.log()
    assert older.terminate() == 0


def test_a_migration_naming_a_state_the_stored_version_lacks_stops_start_up(machine_server, tmp_path):
    storage = tmp_path / "storage"
    first = machine_server({"light.json": LIGHT}, SPINS, storage=storage, name="v1")
    assert first.terminate() == 0
    v2 = light_v2()
    v2["migrations"]["1"]["states"] = {"gren": "go"}
    refused = machine_server({"light.json": v2}, SPINS, storage=storage, name="v2", run=False)
    result = subprocess.run(refused.command(), capture_output=True, text=True, timeout=30, cwd=refused.workdir,
                            env=refused.env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'version 1 has no state "gren" (did you mean "green"?)' in result.stderr, result.stderr
    assert "migrations.1.states.gren" in result.stderr, result.stderr


# -- A machine kind: the default config's doors, made at run time ----------------------

DOOR = json.loads((REPO / "Config" / "machines" / "door.json").read_text())
DOORS = int(os.environ.get("SPIN_E2E_UPGRADE_DOORS", "10000"))


def door_v2() -> dict:
    """`closed` is `shut`; the timer state `opened` is gone (its Spins shut), `ajar` takes
    its place without a timer; a context key `alarms`."""
    v2 = json.loads(json.dumps(DOOR).replace('"closed"', '"shut"'))
    v2["version"] = 2
    v2["context"]["alarms"] = 0
    v2["states"]["ajar"] = v2["states"].pop("opened")
    del v2["states"]["ajar"]["after"]
    v2["states"]["shut"]["on"]["OPEN"]["target"] = "ajar"
    v2["migrations"] = {"1": {"states": {"closed": "shut", "opened": "shut"}}}
    return v2


def door_v3() -> dict:
    """`locked` is gone, and no migration maps it."""
    v3 = door_v2()
    v3["version"] = 3
    del v3["states"]["locked"]
    del v3["states"]["shut"]["on"]["LOCK"]
    v3["migrations"]["2"] = {}
    return v3


@pytest.fixture
def servers():
    """The servers a test starts itself (`door_server`), killed at its end if still running
    (a failed assertion leaves none behind)."""
    started: list[SpinServer] = []
    yield started
    for server in started:
        if server.process is not None and server.process.poll() is None:
            server.kill()


def door_server(servers, server_bin, workdir, storage, port, machine: dict | None = None, **kwargs) -> SpinServer:
    server = SpinServer(server_bin, workdir, storage=storage, port=port, **kwargs)
    servers.append(server)
    if machine is not None:
        (workdir / "Config" / "machines" / "door.json").write_text(json.dumps(machine, indent=2))
    return server


def check_upgrade(server: SpinServer, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(server.command() + ["--check-upgrade", *extra], capture_output=True, text=True,
                          timeout=300, cwd=server.workdir, env=server.env)


def post_all(server: SpinServer, work: list[tuple[str, list[dict]]], threads: int = 4) -> None:
    """POSTs each door's events in order (`?wait=true`), the doors spread over `threads`."""
    def run(part):
        session = requests.Session()
        session.trust_env = False
        for name, events in part:
            for event in events:
                response = session.post(f"{server.base_url}/v1/spins/{name}/events?wait=true", json=event, timeout=30)
                assert response.status_code == 200, (name, response.status_code, response.text)
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(run, [work[index::threads] for index in range(threads)]))


class Posting:
    """Clients POSTing OPEN and CLOSE to the first doors through a restart: every answer,
    with when it came."""

    def __init__(self, server: SpinServer, doors: int = 8):
        self.answers: list[tuple[float, int]] = []
        self.stop = threading.Event()
        self.url = server.base_url

        def post(index: int):
            session = requests.Session()
            session.trust_env = False
            events = [{"type": "OPEN"}, {"type": "CLOSE"}]
            count = 0
            while not self.stop.is_set():
                count += 1
                try:
                    response = session.post(f"{self.url}/v1/spins/door-{index * 4 + 1}/events",
                                            json=events[count % 2], timeout=5)
                    self.answers.append((time.monotonic(), response.status_code))
                except requests.RequestException:
                    time.sleep(0.01)   # down: the restart window
        self.threads = [threading.Thread(target=post, args=(index,), daemon=True) for index in range(doors)]
        for thread in self.threads:
            thread.start()

    def end(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=10)


@pytest.mark.timeout(300)  # 10,000 doors made, checked, restarted on three versions: about 40 s here
def test_a_door_kind_upgrades_over_its_stored_spins_with_clients_posting_through_the_restart(servers, server_bin, tmp_path):
    """10,000 doors made under version 1 (a quarter locked, a quarter closed once opened, the
    rest made by an event that changed nothing, 200 of them opened just before the stop);
    `--check-upgrade` says what version 2 would do, changing nothing; the restart onto it
    while clients post: nothing but 2xx outside the window in which no server listens;
    every door woken is on version 2, its migration journaled once; version 3 drops
    `locked` with no migration: only the locked doors are unrecoverable."""
    storage, workdir = tmp_path / "storage", tmp_path / "server"
    first = door_server(servers, server_bin, workdir, storage, None).start()
    port = first.port
    plan = {0: [{"type": "LOCK"}], 1: [{"type": "OPEN"}, {"type": "CLOSE"}], 2: [], 3: [{"type": "UNLOCK", "code": "0"}]}
    post_all(first, [(f"door-{index}", plan[index % 4] or [{"type": "CLOSE"}]) for index in range(DOORS)])
    # The doors of the third quarter open last, so that some are still open at the stop.
    post_all(first, [(f"door-{index}", [{"type": "OPEN"}]) for index in range(2, DOORS, 4)][-200:], threads=8)
    opened = [index for index in range(max(0, DOORS - 800), DOORS)
              if index % 4 == 2 and first.spin(f"door-{index}")["state"]["value"] == "opened"]
    assert first.terminate() == 0

    v2 = door_server(servers, server_bin, workdir, storage, port, door_v2())
    before = sorted(path.name for path in storage.rglob("*"))
    checked = check_upgrade(v2)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    late = min(200, DOORS // 4)
    recorded = DOORS // 2 + late   # the locked, the opened-and-closed and the late-opened ones
    line = next(line for line in checked.stdout.splitlines() if line.startswith("kind.door"))
    assert line.startswith(f"kind.door, version 2: {DOORS} Spin(s) checked; {DOORS - recorded} at version 2; "
                           f"{recorded} migrate from version 1; to "), line
    assert f'"shut" {recorded - DOORS // 4}' in line and f'"locked" {DOORS // 4}' in line, line
    assert line.endswith("0 would be unrecoverable"), line
    assert "upgrade check OK" in checked.stdout
    sampled = check_upgrade(v2, "--sample", "100")
    assert sampled.returncode == 0 and f"100 Spin(s) checked (a sample of {DOORS})" in sampled.stdout, sampled.stdout
    assert sorted(path.name for path in storage.rglob("*")) == before, "the check wrote nothing"

    # Version 1 again, then the restart onto version 2, clients posting all through it.
    old = door_server(servers, server_bin, workdir, storage, port, DOOR).start()
    posting = Posting(old)
    time.sleep(0.5)
    stopping = time.monotonic()
    assert old.terminate() == 0
    v2 = door_server(servers, server_bin, workdir, storage, port, door_v2()).start()
    serving = time.monotonic()
    time.sleep(1.0)
    posting.end()
    outside = [status for at, status in posting.answers if (at < stopping or at > serving) and not 200 <= status < 300]
    assert not outside, outside[:10]
    assert sum(1 for at, _ in posting.answers if at > serving) > 10, "the clients went on against version 2"

    for index in list(range(0, 64)) + list(range(DOORS - 64, DOORS)):
        door = v2.spin(f"door-{index}")
        assert door["status"] != "unrecoverable", door
        state = door["state"]
        if index % 4 == 0:
            assert state == {"value": "locked", "context": {"opens": 0, "code": "1234", "alarms": 0}}, (index, door)
        elif index % 4 == 3 or (index % 4 == 2 and index < DOORS - 4 * late):
            assert state["value"] == "shut" and door["sequence"] == 0, (index, door)
        elif index % 4 == 2 or index > 32:
            assert state["value"] in ("shut", "ajar") and state["context"]["alarms"] == 0, (index, door)
    # The doors open at the stop: their timer state is gone, they are shut.
    for index in opened:
        assert v2.spin(f"door-{index}")["state"]["value"] == "shut", index
    sequences = {index: v2.spin(f"door-{index}")["sequence"] for index in range(0, 200, 4)}
    assert v2.terminate() == 0

    # Again on version 2: nothing migrates twice.
    again = door_server(servers, server_bin, workdir, storage, port).start()
    assert {index: again.spin(f"door-{index}")["sequence"] for index in sequences} == sequences
    assert again.terminate() == 0

    # Version 3 drops `locked`: the check names the locked doors; only they are unrecoverable.
    v3 = door_server(servers, server_bin, workdir, storage, port, door_v3())
    refused = check_upgrade(v3)
    assert refused.returncode == 65, refused.stdout + refused.stderr
    assert f"{DOORS // 4} would be unrecoverable" in refused.stdout, refused.stdout
    assert 'its state "locked" (version 2) is not a state of version 3' in refused.stdout, refused.stdout
    v3.start()
    locked = v3.spin("door-0")
    assert locked["status"] == "unrecoverable" and '"locked"' in locked["unrecoverable"]["error"], locked
    assert_error(v3.post_events("door-0", {"type": "UNLOCK", "code": "1234"}), 503, "spin_unrecoverable")
    assert "its definition as configured cannot run its history" in v3.log()
    assert v3.post_events("door-1", {"type": "OPEN"}, wait=True).json()["state"]["value"] == "ajar"
    assert v3.terminate() == 0


def test_a_sleeping_door_the_new_version_cannot_take_is_unrecoverable_as_it_wakes(servers, server_bin, tmp_path):
    """Doors asleep when the server stops are not read at the next start: a locked one is
    found unrecoverable by the version that drops `locked` when a request wakes it, says
    so to every request after, and the other doors wake and run."""
    storage, workdir = tmp_path / "storage", tmp_path / "server"
    first = door_server(servers, server_bin, workdir, storage, None, config_patch={"limits": {"idleSpinSeconds": 1}}).start()
    port = first.port
    for index, event in enumerate([{"type": "LOCK"}, {"type": "OPEN"}]):
        assert first.post_events(f"door-{index}", event, wait=True).status_code == 200
    listed = lambda: {spin["name"]: spin["status"] for spin in first.get("/v1/spins?prefix=door-").json()["spins"]}
    deadline = time.monotonic() + 30
    while set(listed().values()) != {"asleep"} and time.monotonic() < deadline:
        time.sleep(0.2)
    assert set(listed().values()) == {"asleep"}, listed()
    assert first.terminate() == 0

    v3 = door_server(servers, server_bin, workdir, storage, port, door_v3()).start()
    for _ in range(2):
        assert_error(v3.post_events("door-0", {"type": "UNLOCK", "code": "1234"}), 503, "spin_unrecoverable")
    door = v3.spin("door-0")
    assert door["status"] == "unrecoverable", door
    assert 'its state "locked" (version 1) is not a state of version 3' in door["unrecoverable"]["error"], door
    assert "its definition as configured cannot run its history" in v3.log()
    # door-1 opened, then shut by its timer under version 1: it wakes on version 3.
    awake = v3.spin("door-1")
    assert awake["status"] == "running" and awake["version"] == 3 and awake["state"]["value"] == "shut", awake
    assert v3.post_events("door-1", {"type": "OPEN"}, wait=True).json()["state"]["value"] == "ajar"
    assert v3.terminate() == 0
