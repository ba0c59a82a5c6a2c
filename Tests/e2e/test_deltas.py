"""State deltas (`?delta=json-patch`, docs/PROTOCOL.md "The stream protocol") checked by an independent RFC 6902
implementation, Python's `jsonpatch`: applying every patch to the snapshot reproduces every
state a stream without deltas shows, over WebSocket and SSE, through a reconnect that
resumes with `since` (and SSE's `Last-Event-ID`). The Spin is a JSON machine whose context
holds a list of 1000 items: events replace one item's neighbour field, insert and remove
items in the middle of the list, and change a value beside it."""
from __future__ import annotations

import asyncio
import json

import jsonpatch
import pytest
from websockets.asyncio.client import connect

from spin_e2e import RawWebSocket, SpinServer, assert_error, recv_json, run_async

ITEMS = 1000


def catalog_machine(items: int) -> dict:
    """A machine whose state is a large list: `SET_ITEMS` replaces it (the client sends the
    list with an item inserted, removed or changed), `SELECT` changes one value beside it."""
    return {
        "id": "catalog",
        "initial": "open",
        "context": {"items": [{"id": i, "name": f"item {i}", "stock": i % 7} for i in range(items)],
                    "selected": None, "edits": 0},
        "states": {"open": {"on": {
            "SET_ITEMS": {"actions": [{"type": "assign", "set": {"items": {"from": "event.items"},
                                                                  "edits": {"add": 1}}}]},
            "SELECT": {"actions": [{"type": "assign", "set": {"selected": {"from": "event.item"}}}]},
        }}},
    }


def catalog_server(server_bin, workdir, limits: dict | None = None) -> SpinServer:
    instance = SpinServer(server_bin, workdir, config_patch={
        "spins": [{"name": "catalog", "machine": "machines/catalog.json"}], "gears": [], "limits": limits or {}})
    (instance.config_path.parent / "machines" / "catalog.json").write_text(json.dumps(catalog_machine(ITEMS)))
    return instance.start()


@pytest.fixture
def catalog(server_bin, tmp_path):
    instance = catalog_server(server_bin, tmp_path / "server")
    yield instance
    assert instance.terminate() == 0, instance.log_tail()


def edits(state: dict, count: int, seed: int) -> list[dict]:
    """`count` events, each changing the list a little from the one before."""
    items = [dict(item) for item in state["context"]["items"]]
    events = []
    for n in range(count):
        kind = (n + seed) % 4
        middle = len(items) // 2 + n
        if kind == 0:
            items.insert(middle, {"id": 10_000 + n + seed * 100, "name": f"new {n}", "stock": 1})
            events.append({"type": "SET_ITEMS", "items": [dict(i) for i in items]})
        elif kind == 1:
            del items[middle - 3]
            events.append({"type": "SET_ITEMS", "items": [dict(i) for i in items]})
        elif kind == 2:
            items[middle]["name"] = f"renamed {n} ~/ \"quoted\""
            events.append({"type": "SET_ITEMS", "items": [dict(i) for i in items]})
        else:
            events.append({"type": "SELECT", "item": {"id": n, "tags": ["a", "b"][: n % 3]}})
    return events


def post_all(server: SpinServer, events: list[dict]) -> int:
    sequence = 0
    for event in events:
        response = server.post_events("catalog", event, wait=True)
        assert response.status_code == 200, response.text
        sequence = response.json()["sequence"]
    return sequence


class Replica:
    """A client's copy of the state, built from a delta stream's messages with `jsonpatch`."""

    def __init__(self):
        self.state = None
        self.sequence = None
        self.states: dict[int, object] = {}
        self.patches = 0
        self.wholes = 0
        self.patch_bytes = 0
        self.state_bytes = 0

    def take(self, text: str) -> dict:
        message = json.loads(text)
        if message["type"] not in ("snapshot", "state"):
            return message
        assert "epoch" in message and "sequence" in message
        if message["type"] == "snapshot":
            assert "patch" not in message
            self.state = message["state"]
        else:
            assert "event" in message
            assert ("state" in message) != ("patch" in message), f"exactly one of state and patch: {text[:300]}"
            if "patch" in message:
                assert message["sequence"] == self.sequence + 1, "a patch only follows the state before it"
                self.state = jsonpatch.apply_patch(self.state, message["patch"])
                self.patches += 1
                self.patch_bytes += len(json.dumps(message["patch"]))
            else:
                self.state = message["state"]
                self.wholes += 1
                self.state_bytes += len(text.encode())
        self.sequence = message["sequence"]
        self.states[self.sequence] = json.loads(json.dumps(self.state))
        return message


async def follow(server: SpinServer, query: str, replica: Replica, until: int, timeout: float = 30) -> str:
    """Reads a WebSocket state stream into `replica` until `until`; returns its epoch."""
    epoch = ""
    async with connect(f"{server.ws_base}/v1/spins/catalog/stream{query}", max_size=None) as ws:
        while replica.sequence is None or replica.sequence < until:
            message = replica.take(await asyncio.wait_for(ws.recv(), timeout))
            epoch = message.get("epoch", epoch)
    return epoch


def truth(server: SpinServer, initial: object, until: int) -> dict[int, object]:
    """Every state up to `until`: `initial` at 0, then those of a stream without deltas
    resumed after 0."""
    states: dict[int, object] = {0: initial}

    async def read():
        async with connect(f"{server.ws_base}/v1/spins/catalog/stream?since=0", max_size=None) as ws:
            while not states or max(states) < until:
                message = await recv_json(ws, 30)
                assert "patch" not in message, "no patch without ?delta"
                if message["type"] in ("snapshot", "state"):
                    states[message["sequence"]] = message["state"]
    run_async(read())
    return states


def test_websocket_patches_rebuild_every_state_through_a_reconnect_and_a_resume(catalog):
    initial = catalog.spin("catalog")["state"]
    first = edits(initial, 12, seed=0)
    replica = Replica()

    async def scenario():
        # A stream from the snapshot; the events are sent while it reads.
        async with connect(f"{catalog.ws_base}/v1/spins/catalog/stream?delta=json-patch", max_size=None) as ws:
            snapshot = replica.take(await asyncio.wait_for(ws.recv(), 10))
            assert snapshot["type"] == "snapshot" and snapshot["sequence"] == 0
            sequence = await asyncio.to_thread(post_all, catalog, first)
            while replica.sequence < sequence:
                message = replica.take(await asyncio.wait_for(ws.recv(), 10))
            return message["epoch"], sequence

    epoch, sequence = run_async(scenario())
    assert replica.patches == len(first), "each state after the snapshot came as a patch"
    # Disconnected: more events, then a resume after the last sequence seen.
    later = edits(replica.state, 9, seed=1)
    last = post_all(catalog, later)
    wholes_before = replica.wholes
    run_async(follow(catalog, f"?delta=json-patch&since={sequence}&epoch={epoch}", replica, last))
    assert replica.wholes == wholes_before + 1, "a resumed history starts with one whole state, then patches"
    # A new connection without since: a snapshot, then patches.
    more = edits(replica.state, 3, seed=2)

    async def fresh():
        fresh_replica = Replica()
        async with connect(f"{catalog.ws_base}/v1/spins/catalog/stream?delta=json-patch", max_size=None) as ws:
            assert fresh_replica.take(await asyncio.wait_for(ws.recv(), 10))["type"] == "snapshot"
            target = await asyncio.to_thread(post_all, catalog, more)
            while fresh_replica.sequence < target:
                fresh_replica.take(await asyncio.wait_for(ws.recv(), 10))
        return fresh_replica, target

    fresh_replica, final = run_async(fresh())
    expected = truth(catalog, initial, final)
    for source in (replica, fresh_replica):
        for seq, state in source.states.items():
            assert state == expected[seq], f"state {seq} differs from the stream without deltas"
    assert set(range(0, last + 1)) <= set(replica.states), "no sequence skipped"
    assert expected[final] == catalog.spin("catalog")["state"]
    # Small patches on a large list: a patch is a sliver of the state (the messages here also
    # carry their SET_ITEMS event, a whole list: the benchmark's events are small).
    assert replica.patch_bytes / replica.patches < 0.05 * len(json.dumps(expected[final]))


def test_sse_patches_rebuild_every_state_and_resume_with_last_event_id(catalog):
    initial = catalog.spin("catalog")["state"]
    events = edits(initial, 8, seed=3)
    replica = Replica()
    ids: list[int] = []

    def read_sse(headers: dict, until: int):
        with catalog.http.get(f"{catalog.base_url}/v1/spins/catalog/stream?delta=json-patch",
                          headers={"Accept": "text/event-stream", **headers}, stream=True, timeout=30) as response:
            assert response.status_code == 200
            event_id = None
            for line in response.iter_lines(decode_unicode=True):
                if line.startswith("id: "):
                    event_id = int(line[4:])
                elif line.startswith("data: "):
                    message = replica.take(line[6:])
                    if message["type"] == "state":
                        assert event_id == message["sequence"], "id: is the sequence"
                        ids.append(event_id)
                    if replica.sequence >= until:
                        return

    first = post_all(catalog, events[:4])
    read_sse({}, first)
    last = post_all(catalog, events[4:])
    wholes_before = replica.wholes
    read_sse({"Last-Event-ID": str(first)}, last)
    assert replica.wholes == wholes_before + 1
    assert ids == list(range(first + 1, last + 1))
    expected = truth(catalog, initial, last)
    for seq, state in replica.states.items():
        assert state == expected[seq]


def test_a_full_state_instead_of_a_patch_larger_than_the_state(catalog):
    # The whole list replaced by a short one: the patch would outgrow the state.
    replica = Replica()

    async def scenario():
        async with connect(f"{catalog.ws_base}/v1/spins/catalog/stream?delta=json-patch", max_size=None) as ws:
            replica.take(await asyncio.wait_for(ws.recv(), 10))
            target = await asyncio.to_thread(post_all, catalog, [{"type": "SET_ITEMS", "items": [{"id": 1}]}])
            while replica.sequence < target:
                replica.take(await asyncio.wait_for(ws.recv(), 10))

    run_async(scenario())
    assert replica.wholes == 1 and replica.patches == 0
    assert replica.state["context"]["items"] == [{"id": 1}]


def test_a_conflated_delta_stream_gets_a_snapshot_then_patches_from_it(server_bin, tmp_path):
    # A client that does not read while about 7 MB of state messages (their SET_ITEMS events
    # carry the list) pile up: the server conflates its queue (4 messages here) into one
    # snapshot.
    catalog = catalog_server(server_bin, tmp_path / "server", {"streamQueue": 4})
    stuck = RawWebSocket(catalog.port, "/v1/spins/catalog/stream?delta=json-patch", receive_buffer=4096)
    assert stuck.status == 101
    events = edits(catalog.spin("catalog")["state"], 160, seed=5)
    last = post_all(catalog, events[:150])
    replica = Replica()
    snapshots = []
    while replica.sequence is None or replica.sequence < last:
        kind, payload = stuck.recv_message(timeout=10)
        assert kind == "text", kind
        message = replica.take(payload.decode())
        if message["type"] == "snapshot":
            snapshots.append(message["sequence"])
    assert len(snapshots) >= 2, f"no conflation: snapshots at {snapshots}"
    # Read up: patches go on from the conflated snapshot.
    patches_before = replica.patches
    final = post_all(catalog, events[150:])
    while replica.sequence < final:
        kind, payload = stuck.recv_message(timeout=10)
        replica.take(payload.decode())
    stuck.close()
    assert replica.patches > patches_before
    assert replica.state == catalog.spin("catalog")["state"]
    assert catalog.terminate() == 0, catalog.log_tail()


@pytest.mark.parametrize("value", ["gzip", "", "JSON-PATCH"])
def test_an_unknown_delta_format_is_refused_400_naming_the_accepted_value(catalog, value):
    response = catalog.get(f"/v1/spins/catalog/stream?delta={value}", headers={"Accept": "text/event-stream"})
    assert_error(response, 400, "bad_request", message_contains="json-patch")
