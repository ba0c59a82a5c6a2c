"""Machine files that change under stored Spins (docs/MACHINES.md, "Versions and
migrations"): a new `"version"` with `"migrations"` moves each Spin once, journaled as
its own transition, its history before it replayed through the version it was applied
under; a state no migration maps leaves that Spin alone unrecoverable; `--check-upgrade`
says what a restart would do, changing nothing."""
from __future__ import annotations

import json
import subprocess

from websockets.asyncio.client import connect

from spin_e2e import recv_json, run_async
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
    assert "migrated from version 1 to 2 of its definition at sequence 8" in second.log()
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
    assert "migrated from version 1" not in third.log()
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
