"""A Spin's history (docs/PROTOCOL.md, "History"): `GET /v1/spins/{name}/history` pages
and `GET /v1/spins/{name}?at=N` give exactly the states streamed live at each sequence,
with the event, its sender and its time, before and after a restart; `storage.history`
says how far back; bad input is refused with a clear error and changes nothing."""
from __future__ import annotations

import asyncio
import json
import random
import time
from datetime import datetime, timezone

import jsonpatch
import pytest
import requests
from websockets.asyncio.client import connect

from spin_e2e import assert_error, recv_json, run_async
from test_machines import machine_server  # noqa: F401 (the fixture)

TOKEN = "alice-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
KEPT = {"storage": {"history": "all", "snapshotEvery": 100, "retainEvents": 50},
        "auth": {"tokens": [{"token": TOKEN, "scopes": ["read", "write", "admin"], "subject": "alice"}]}}
# A machine that moves only when told (the example counter counts by itself).
TALLY = {"id": "tally", "initial": "on", "context": {"n": 0},
         "states": {"on": {"on": {
             "INC": {"actions": [{"type": "assign", "set": {"n": {"add": 1}}}]},
             "DEC": {"actions": [{"type": "assign", "set": {"n": {"add": -1}}}]},
             "RESET": {"actions": [{"type": "assign", "set": {"n": 0}}]}}}}}
SPINS = [{"name": "tally", "machine": "machines/tally.json"}]


def tally_server(machine_server, config: dict, *, storage=None, name=None):
    return machine_server({"tally.json": TALLY}, SPINS, storage=storage, name=name, config=config)


def post(server, spin: str, events) -> int:
    response = server.post_events(spin, events, headers=AUTH)
    assert response.status_code in (200, 202), response.text
    return response.json()["sequence"]


def every_entry(server, spin: str, *, deltas: bool = False) -> list[dict]:
    """The whole retained history, page by page (1000 at a time)."""
    entries: list[dict] = []
    params = {"limit": 1000} | ({"delta": "json-patch"} if deltas else {})
    while True:
        response = server.get(f"/v1/spins/{spin}/history", params=params, headers=AUTH)
        assert response.status_code == 200, response.text
        page = response.json()
        entries += page["entries"]
        if page["next"] is None:
            return entries
        assert page["next"] == page["entries"][-1]["sequence"] + 1
        params["from"] = page["next"]


def test_history_and_at_give_the_states_streamed_live_before_and_after_a_restart(machine_server, tmp_path):
    storage = tmp_path / "storage"
    server = tally_server(machine_server, KEPT, storage=storage, name="first")
    began = time.time()
    streamed: dict[int, dict] = {}
    events_sent: list[dict] = []

    async def watch_while_posting():
        async with connect(f"{server.ws_base}/v1/spins/tally/stream?access_token={TOKEN}") as ws:
            snapshot = await recv_json(ws, 10)
            assert snapshot["type"] == "snapshot" and snapshot["sequence"] == 0
            rng = random.Random(38)
            last = 0
            for _ in range(120):
                batch = [{"type": rng.choice(["INC", "INC", "DEC", "RESET"])}
                         for _ in range(rng.choice([1, 1, 3, 17]))]
                events_sent.extend(batch)
                last = await asyncio.to_thread(post, server, "tally", batch)
            while not streamed or max(streamed) < last:
                message = await recv_json(ws, 10)
                if message["type"] == "state":
                    streamed[message["sequence"]] = message
            return last
    last = run_async(watch_while_posting(), timeout=120)
    ended = time.time()
    assert last == len(events_sent) and last > 500, last
    assert len(streamed) == last, "the stream skipped states (conflated): this test needs them all"

    def check(server):
        entries = every_entry(server, "tally")
        assert [entry["sequence"] for entry in entries] == list(range(1, last + 1))
        previous = None
        for entry in entries:
            live = streamed[entry["sequence"]]
            assert entry["state"] == live["state"] and entry["event"] == live["event"], entry
            assert entry["event"] == events_sent[entry["sequence"] - 1]
            assert entry["sub"] == "alice"
            at = datetime.fromisoformat(entry["at"].replace("Z", "+00:00"))
            assert at.tzinfo == timezone.utc and began - 1 <= at.timestamp() <= ended + 1, entry
            assert previous is None or at >= previous
            previous = at
        # Patches after the first entry of each page give the same states.
        state = None
        for entry in every_entry(server, "tally", deltas=True):
            state = jsonpatch.apply_patch(state, entry["patch"]) if "patch" in entry else entry["state"]
            assert state == streamed[entry["sequence"]]["state"], entry
        for sequence in random.Random(7).sample(range(1, last + 1), 60) + [1, 99, 100, 101, last]:
            response = server.get("/v1/spins/tally", params={"at": sequence}, headers=AUTH)
            assert response.status_code == 200, response.text
            assert response.json() == {"name": "tally", "sequence": sequence, "state": streamed[sequence]["state"]}
        assert server.get("/v1/spins/tally", params={"at": 0}, headers=AUTH).json()["state"] == \
            {"value": "on", "context": {"n": 0}}
        page = server.get("/v1/spins/tally/history", params={"from": last - 2}, headers=AUTH).json()
        assert [e["sequence"] for e in page["entries"]] == [last - 2, last - 1, last] and page["next"] is None
        assert server.get("/v1/spins/tally/history", params={"from": last + 5}, headers=AUTH).json() == \
            {"entries": [], "next": None}

    check(server)
    assert server.terminate() == 0
    # Kept beside the journal: the older history comes from there after a restart.
    assert (storage / "history.db").exists()
    again = tally_server(machine_server, KEPT, storage=storage, name="second")
    check(again)


def test_bad_input_is_refused_with_a_clear_error_and_changes_nothing(machine_server):
    server = tally_server(machine_server, KEPT)
    post(server, "tally", [{"type": "INC"}] * 5)
    before = server.spin("tally", headers=AUTH)
    refusals = [
        ("/v1/spins/tally", {"at": "6"}, 404, "sequence_not_found",
         "Spin \"tally\" is at sequence 5: there is no state at sequence 6 (yet)"),
        ("/v1/spins/tally", {"at": "-1"}, 400, "bad_request", "at must be a sequence, a whole number from 0, not \"-1\""),
        ("/v1/spins/tally", {"at": "abc"}, 400, "bad_request", "not \"abc\""),
        ("/v1/spins/tally", {"at": ""}, 400, "bad_request", "not \"\""),
        ("/v1/spins/tally/history", {"limit": "1001"}, 400, "bad_request", "limit must be a whole number from 1 to 1000"),
        ("/v1/spins/tally/history", {"limit": "0"}, 400, "bad_request", "limit must be"),
        ("/v1/spins/tally/history", {"from": "x"}, 400, "bad_request", "from must be a sequence"),
        ("/v1/spins/tally/history", {"delta": "merge"}, 400, "bad_request", "delta must be \"json-patch\""),
        ("/v1/spins/tally/history", {"since": "1"}, 400, "bad_request", "unknown query parameter \"since\""),
        ("/v1/spins/nope/history", {}, 404, "spin_not_found", "nope"),
    ]
    for path, params, status, code, message in refusals:
        assert_error(server.get(path, params=params, headers=AUTH), status, code, message_contains=message)
    # Reading needs read: no token, no history.
    assert_error(server.get("/v1/spins/tally/history"), 401, "unauthorized")
    assert server.spin("tally", headers=AUTH) == before
    assert len(every_entry(server, "tally")) == 5


def test_the_last_k_events_are_kept_by_default_and_older_ones_are_410(machine_server):
    server = tally_server(machine_server, {"storage": {"history": {"events": 20}}})
    for _ in range(4):
        assert server.post_events("tally", [{"type": "INC"}] * 25, wait=True).status_code == 200
    page = server.get("/v1/spins/tally/history", params={"limit": 1000}).json()
    # The state the journal would start from, and the 20 events after it.
    assert [e["sequence"] for e in page["entries"]] == list(range(80, 101)) and page["next"] is None
    assert [e["state"]["context"]["n"] for e in page["entries"]] == list(range(80, 101))
    assert "sub" not in page["entries"][0]
    for params, path in [({"from": 79}, "/v1/spins/tally/history"), ({"at": 10}, "/v1/spins/tally")]:
        assert_error(server.get(path, params=params), 410, "history_not_retained",
                     message_contains="its history is kept from sequence 80 on (storage.history)")
    assert server.get("/v1/spins/tally", params={"at": 80}).json()["state"]["context"] == {"n": 80}
    assert not (server.storage / "history.db").exists()


def test_a_made_spin_keeps_its_history_asleep_and_loses_it_when_deleted(start_server):
    server = start_server(config_patch=KEPT | {"limits": {"idleSpinSeconds": 1}})
    for _ in range(3):
        post(server, "door-7", [{"type": "OPEN"}, {"type": "CLOSE"}] * 60)
    deadline = time.time() + 15
    while server.get("/v1/spins?prefix=door-7", headers=AUTH).json()["spins"][0]["status"] != "asleep":
        assert time.time() < deadline, "door-7 did not fall asleep"
        time.sleep(0.2)
    # Reading its history wakes it; every entry is there, the older ones from segments.
    entries = every_entry(server, "door-7")
    assert [e["sequence"] for e in entries] == list(range(1, 361))
    assert [e["state"]["context"]["opens"] for e in entries[::2]] == list(range(1, 181))
    assert server.get("/v1/spins/door-7", params={"at": 150}, headers=AUTH).json()["state"]["value"] == "closed"
    assert server.request("DELETE", "/v1/spins/door-7", headers=AUTH).status_code == 200
    # Made again: a history of its own, nothing of the one deleted.
    assert server.request("PUT", "/v1/spins/door-7", json={"kind": "door"}, headers=AUTH).status_code == 201
    assert every_entry(server, "door-7") == []
    assert_error(server.get("/v1/spins/door-7", params={"at": 150}, headers=AUTH), 404, "sequence_not_found",
                 message_contains="there is no state at sequence 150")


def test_after_a_kill_the_history_is_whole_without_another_event(machine_server, tmp_path):
    storage = tmp_path / "storage"
    server = tally_server(machine_server, KEPT, storage=storage, name="killed")
    for _ in range(7):
        post(server, "tally", [{"type": "INC"}] * 50)
    server.kill()
    # kill -9: every event acknowledged is in the history after the start, with no other
    # event sent (a segment the kill kept from being written comes from the journal then).
    again = tally_server(machine_server, KEPT, storage=storage, name="restarted")
    deadline = time.time() + 10
    while True:
        try:
            entries = every_entry(again, "tally")
            assert [e["sequence"] for e in entries] == list(range(1, 351))
            break
        except AssertionError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    assert [e["state"]["context"]["n"] for e in entries] == list(range(1, 351))
