"""Restore and fork (docs/PROTOCOL.md, "History"): `POST /v1/spins/{name}/restore` moves a
Spin back to a state of its history as a new event, which streams see as a snapshot of a
new epoch and a restart keeps; `POST /v1/spins/{name}/fork` makes a new Spin of the same
kind in that state, with its own history. Bad input is refused and changes nothing."""
from __future__ import annotations

import jsonpatch
import requests
from websockets.asyncio.client import connect

from spin_e2e import assert_error, recv_json, run_async
from test_history import AUTH, KEPT, TOKEN, every_entry, post, tally_server
from test_machines import machine_server  # noqa: F401 (the fixture)

READER = {"Authorization": "Bearer reader-token"}
WITH_READER = KEPT | {"auth": {"tokens": KEPT["auth"]["tokens"] + [
    {"token": "reader-token", "scopes": ["read", "write"], "subject": "bob"}]}}


def restore(server, spin: str, body, headers=AUTH) -> requests.Response:
    return server.post(f"/v1/spins/{spin}/restore", json=body, headers=headers)


def n(state: dict) -> int:
    return state["context"]["n"]


def test_a_restore_is_a_new_event_streams_get_a_new_epoch_and_a_restart_keeps_it(machine_server, tmp_path):
    storage = tmp_path / "storage"
    server = tally_server(machine_server, KEPT, storage=storage, name="first")
    for _ in range(5):
        post(server, "tally", [{"type": "INC"}] * 50)

    async def restore_while_streaming():
        url = f"{server.ws_base}/v1/spins/tally/stream?access_token={TOKEN}"
        async with connect(url) as whole, connect(url + "&delta=json-patch") as patched:
            first = await recv_json(whole, 10)
            assert first["type"] == "snapshot" and first["sequence"] == 250
            await recv_json(patched, 10)
            # 30 is older than the 50 transitions kept in memory: from history.db.
            response = restore(server, "tally", {"at": 30})
            assert response.status_code == 200, response.text
            assert response.json() == {"name": "tally", "sequence": 251, "at": 30,
                                       "state": {"value": "on", "context": {"n": 30}}}
            for ws in (whole, patched):
                snapshot = await recv_json(ws, 10)
                assert snapshot["type"] == "snapshot" and snapshot["sequence"] == 251, snapshot
                assert snapshot["epoch"] != first["epoch"] and n(snapshot["state"]) == 30
            post(server, "tally", {"type": "INC"})
            after = await recv_json(whole, 10)
            assert after["type"] == "state" and after["sequence"] == 252 and n(after["state"]) == 31
            assert after["epoch"] == snapshot["epoch"]
            patch = await recv_json(patched, 10)
            assert patch["sequence"] == 252 and patch["epoch"] == snapshot["epoch"]
            # A patch (when smaller than the state) is from the state restored.
            state = jsonpatch.apply_patch(snapshot["state"], patch["patch"]) if "patch" in patch else patch["state"]
            assert n(state) == 31
            return first["epoch"], snapshot["epoch"]
    old_epoch, new_epoch = run_async(restore_while_streaming(), timeout=30)

    def check(server):
        entries = every_entry(server, "tally")
        assert [e["sequence"] for e in entries] == list(range(1, 253))
        # History only grows: every event before the restore is still there.
        assert [n(e["state"]) for e in entries] == list(range(1, 251)) + [30, 31]
        assert entries[250]["event"] == {"type": "spin.restored", "at": 30} and entries[250]["sub"] == "alice"
        assert n(server.get("/v1/spins/tally", params={"at": 251}, headers=AUTH).json()["state"]) == 30
        assert n(server.get("/v1/spins/tally", params={"at": 250}, headers=AUTH).json()["state"]) == 250

        async def resume():
            base = f"{server.ws_base}/v1/spins/tally/stream?access_token={TOKEN}"
            # From before the restore: a snapshot, even naming the old epoch.
            async with connect(f"{base}&since=240&epoch={old_epoch}") as ws:
                message = await recv_json(ws, 10)
                assert message["type"] == "snapshot" and message["sequence"] == 252 and message["epoch"] == new_epoch
            # From the restore on, in its epoch: the states after it, no snapshot.
            async with connect(f"{base}&since=251&epoch={new_epoch}") as ws:
                message = await recv_json(ws, 10)
                assert message["type"] == "state" and message["sequence"] == 252, message
        run_async(resume(), timeout=30)

    check(server)
    assert server.terminate() == 0
    again = tally_server(machine_server, KEPT, storage=storage, name="second")
    assert again.spin("tally", headers=AUTH)["state"] == {"value": "on", "context": {"n": 31}}
    check(again)
    # Restored to the very start: the state before any event.
    response = restore(again, "tally", {"at": 0})
    assert response.status_code == 200 and response.json()["sequence"] == 253 and n(response.json()["state"]) == 0


def test_restore_refuses_bad_input_and_changes_nothing(machine_server):
    server = tally_server(machine_server, WITH_READER | {"storage": {"history": {"events": 20}}})
    for _ in range(4):
        post(server, "tally", [{"type": "INC"}] * 25)
    before = server.spin("tally", headers=AUTH)
    refusals = [
        ({"at": 101}, AUTH, 404, "sequence_not_found", "there is no state at sequence 101"),
        ({"at": 10}, AUTH, 410, "history_not_retained", "its history is kept from sequence 80 on"),
        ({"at": -1}, AUTH, 400, "bad_request", "\"at\" must be a sequence, a whole number from 0, not -1"),
        ({"at": "3"}, AUTH, 400, "bad_request", "\"at\" must be a sequence"),
        ({}, AUTH, 400, "bad_request", "the body must name the sequence"),
        ({"at": 90, "to": 3}, AUTH, 400, "bad_request", "unknown member \"to\""),
        ({"at": 90}, READER, 403, "forbidden", None),
        ({"at": 90}, {}, 401, "unauthorized", None),
    ]
    for body, headers, status, code, message in refusals:
        assert_error(restore(server, "tally", body, headers), status, code, message_contains=message)
    assert_error(server.post("/v1/spins/tally/restore", data='{"at": 9', headers=AUTH | {"Content-Type": "application/json"}),
                 400, "malformed_json")
    assert_error(server.post("/v1/spins/tally/restore", data='{"at": 90}', headers=AUTH | {"Content-Type": "text/plain"}),
                 415, "unsupported_media_type")
    assert_error(restore(server, "nope", {"at": 1}), 404, "spin_not_found")
    assert server.spin("tally", headers=AUTH) == before
    assert [e["sequence"] for e in every_entry(server, "tally")][-1] == 100


def test_a_fork_is_a_new_spin_of_the_kind_in_that_state_with_its_own_history(start_server, tmp_path):
    storage = tmp_path / "storage"
    server = start_server(config_patch=WITH_READER, storage=storage, name="first")
    post(server, "door-1", [{"type": "OPEN"}, {"type": "CLOSE"}, {"type": "OPEN"}, {"type": "CLOSE"}, {"type": "LOCK"}])
    source = server.spin("door-1", headers=AUTH)
    response = server.post("/v1/spins/door-1/fork", json={"at": 2, "name": "door-9"}, headers=AUTH)
    assert response.status_code == 201, response.text
    assert response.json() == {"name": "door-9", "kind": "door", "sequence": 1, "from": "door-1", "at": 2}
    closed_once = {"value": "closed", "context": {"code": "1234", "opens": 1}}
    assert server.spin("door-9", headers=AUTH)["state"] == closed_once
    entries = every_entry(server, "door-9")
    assert [(e["sequence"], e["event"], e["sub"]) for e in entries] == \
        [(1, {"type": "spin.forked", "from": "door-1", "at": 2}, "alice")]
    # The source is untouched; the fork goes its own way.
    assert server.spin("door-1", headers=AUTH) == source
    post(server, "door-9", {"type": "LOCK"})
    assert server.spin("door-9", headers=AUTH)["state"]["value"] == "locked"

    refusals = [
        ({"at": 2, "name": "door-9"}, AUTH, "door-1", 409, "spin_exists", "Spin \"door-9\" exists already"),
        ({"at": 2, "name": "counter"}, AUTH, "door-1", 409, "spin_exists", None),
        ({"at": 99, "name": "door-8"}, AUTH, "door-1", 404, "sequence_not_found", None),
        ({"at": 2, "name": "door 8"}, AUTH, "door-1", 400, "bad_request", "is not a valid Spin name"),
        ({"at": 2, "name": "window-8"}, AUTH, "door-1", 409, "state_not_restorable",
         "\"window-8\" is not one of kind \"door\"'s names (\"door-*\")"),
        ({"at": 2}, AUTH, "door-1", 400, "bad_request", "the body must name the new Spin"),
        ({"at": 2, "name": "door-8"}, READER, "door-1", 403, "forbidden", None),
        # A configured Spin whose kind the config's kinds do not make at run time.
        ({"at": 0, "name": "counter-2"}, AUTH, "counter", 409, "state_not_restorable",
         "its kind \"counter\" is not one this server makes at run time"),
    ]
    for body, headers, spin, status, code, message in refusals:
        response = server.post(f"/v1/spins/{spin}/fork", json=body, headers=headers)
        assert_error(response, status, code, message_contains=message)
    for name in ["door-8", "counter-2", "window-8"]:
        assert server.get(f"/v1/spins/{name}", headers=AUTH).status_code == 404

    assert server.terminate() == 0
    again = start_server(config_patch=WITH_READER, storage=storage, name="second")
    forked = again.spin("door-9", headers=AUTH)
    assert forked["sequence"] == 2 and forked["state"]["value"] == "locked"
    assert again.get("/v1/spins/door-9", params={"at": 1}, headers=AUTH).json()["state"] == closed_once


def test_an_answered_restore_survives_kill_9(machine_server, tmp_path):
    storage = tmp_path / "storage"
    server = tally_server(machine_server, KEPT, storage=storage, name="killed")
    post(server, "tally", [{"type": "INC"}] * 40)
    answer = restore(server, "tally", {"at": 7})
    assert answer.status_code == 200, answer.text
    post(server, "tally", [{"type": "INC"}] * 2)
    server.kill()
    # Answered means durable: after kill -9 the restore, and the events after it, are there.
    again = tally_server(machine_server, KEPT, storage=storage, name="restarted")
    assert again.spin("tally", headers=AUTH)["state"] == {"value": "on", "context": {"n": 9}}
    entries = every_entry(again, "tally")
    assert [n(e["state"]) for e in entries] == list(range(1, 41)) + [7, 8, 9]
    assert entries[40]["event"] == {"type": "spin.restored", "at": 7}
