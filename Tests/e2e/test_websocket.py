"""The state stream through the `websockets` library (asyncio client): snapshot first,
one state message per event, client events with acks and errors, permessage-deflate,
ping/pong."""
from __future__ import annotations

import asyncio
import itertools
import json

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from spin_e2e import recv_json, recv_until, run_async

_unique = itertools.count(200_000)


def level_event(value: int | None = None) -> dict:
    value = next(_unique) if value is None else value
    return {"type": "set", "left": value, "right": value}


def ws_connect(server, path: str, **kwargs):
    kwargs.setdefault("open_timeout", 5)
    kwargs.setdefault("close_timeout", 5)
    kwargs.setdefault("proxy", None)
    return connect(server.ws_base + path, **kwargs)


def test_stream_sends_a_snapshot_first(server):
    sequences = server.settled_sequences()
    state = server.spin("levels")["state"]

    async def scenario():
        async with ws_connect(server, "/v1/spins/levels/stream") as ws:
            first = await recv_json(ws)
            epoch = first.pop("epoch")
            assert isinstance(epoch, str) and epoch
            assert first == {"type": "snapshot", "sequence": sequences["levels"], "state": state}

    run_async(scenario())


def test_posted_events_arrive_as_one_state_message_each(server):
    start = server.settled_sequences()["levels"]
    events = [level_event() for _ in range(5)]

    async def scenario():
        async with ws_connect(server, "/v1/spins/levels/stream") as ws:
            snapshot = await recv_json(ws)
            assert snapshot["type"] == "snapshot" and snapshot["sequence"] == start
            acknowledged = []
            for event in events:
                response = await asyncio.to_thread(server.post_events, "levels", event)
                assert response.status_code == 202, response.text
                acknowledged.append(response.json()["sequence"])
            received = [await recv_json(ws) for _ in events]
            assert [m["type"] for m in received] == ["state"] * 5, received
            assert [m["event"] for m in received] == events
            assert [m["sequence"] for m in received] == acknowledged == list(range(start + 1, start + 6))
            assert [m["state"] for m in received] == [{"left": e["left"], "right": e["right"]} for e in events]

    run_async(scenario())


def test_client_event_is_acknowledged_with_its_sequence(server):
    start = server.settled_sequences()["levels"]
    event = level_event()

    async def scenario():
        async with ws_connect(server, "/v1/spins/levels/stream") as ws:
            await recv_json(ws)
            await ws.send(json.dumps({"type": "event", "id": "c1", "event": event}))
            ack, seen = await recv_until(ws, lambda m: m.get("type") == "ack")
            assert ack == {"type": "ack", "id": "c1", "sequence": start + 1}
            if not any(m.get("type") == "state" for m in seen):
                await recv_until(ws, lambda m: m.get("type") == "state")
            await ws.send(json.dumps({"type": "event", "id": 7, "event": [level_event(), level_event()]}))
            ack, _ = await recv_until(ws, lambda m: m.get("type") == "ack")
            assert ack == {"type": "ack", "id": 7, "sequence": start + 3}

    run_async(scenario())
    assert server.sequence("levels") == start + 3


@pytest.mark.parametrize("message,expected_id,code", [
    ({"type": "event", "id": "bad1", "event": {"type": "jump"}}, "bad1", "invalid_event"),
    ({"type": "event", "id": "bad2", "event": {"type": "set", "left": 1}}, "bad2", "invalid_event"),
    ({"type": "dance", "id": "bad3"}, "bad3", None),
    ({"type": "event", "id": "bad4"}, "bad4", None),
    ("this is not json", None, "malformed_json"),
    ('{"type":"event","id":"dup","event":{"type":"set","left":1,"right":2,"left":3}}', "dup", "malformed_json"),
])
def test_bad_client_message_gets_an_error_and_the_stream_stays_open(server, message, expected_id, code):
    baseline = server.settled_sequences()

    async def scenario():
        async with ws_connect(server, "/v1/spins/levels/stream") as ws:
            await recv_json(ws)
            await ws.send(message if isinstance(message, str) else json.dumps(message))
            error = await recv_json(ws)
            assert error["type"] == "error", error
            assert error["id"] == expected_id, error
            assert isinstance(error["error"]["code"], str) and error["error"]["message"], error
            if code:
                assert error["error"]["code"] == code, error
            # Still open: a good event is acknowledged afterwards.
            await ws.send(json.dumps({"type": "event", "id": "after", "event": level_event()}))
            ack, _ = await recv_until(ws, lambda m: m.get("type") == "ack")
            assert ack["id"] == "after" and ack["sequence"] == baseline["levels"] + 1

    run_async(scenario())


def test_invalid_client_event_changes_nothing(server):
    baseline = server.settled_sequences()

    async def scenario():
        async with ws_connect(server, "/v1/spins/levels/stream") as ws:
            await recv_json(ws)
            await ws.send(json.dumps({"type": "event", "id": "x", "event": [level_event(), {"type": "set"}]}))
            error = await recv_json(ws)
            assert error["type"] == "error" and error["error"]["code"] == "invalid_event", error
            assert "[1]" in error["error"]["message"], error

    run_async(scenario())
    assert server.settled_sequences() == baseline


def test_permessage_deflate_is_negotiated_when_offered(server):
    async def scenario():
        async with ws_connect(server, "/v1/spins/levels/stream") as ws:
            header = ws.response.headers.get("Sec-WebSocket-Extensions", "")
            assert "permessage-deflate" in header, ws.response.headers
            assert [ext.name for ext in ws.protocol.extensions] == ["permessage-deflate"]
            assert (await recv_json(ws))["type"] == "snapshot"
        async with ws_connect(server, "/v1/spins/levels/stream", compression=None) as ws:
            assert "Sec-WebSocket-Extensions" not in ws.response.headers, ws.response.headers
            assert ws.protocol.extensions == []
            assert (await recv_json(ws))["type"] == "snapshot"

    run_async(scenario())


def test_compressed_and_plain_streams_receive_the_same_messages(server):
    server.settled_sequences()
    events = [level_event() for _ in range(20)]

    async def scenario():
        async with ws_connect(server, "/v1/spins/levels/stream") as compressed, \
                ws_connect(server, "/v1/spins/levels/stream", compression=None) as plain:
            assert compressed.protocol.extensions and not plain.protocol.extensions
            first = [await recv_json(compressed), await recv_json(plain)]
            assert first[0] == first[1] and first[0]["type"] == "snapshot"
            response = await asyncio.to_thread(server.post_events, "levels", events)
            assert response.status_code == 202
            a = [await recv_json(compressed) for _ in events]
            b = [await recv_json(plain) for _ in events]
            assert a == b
            assert [m["event"] for m in a] == events
            # Compressed and uncompressed client messages are both understood.
            await compressed.send(json.dumps({"type": "event", "id": "z", "event": level_event()}))
            await plain.send(json.dumps({"type": "event", "id": "p", "event": level_event()}))
            ack_z, _ = await recv_until(compressed, lambda m: m.get("type") == "ack")
            ack_p, _ = await recv_until(plain, lambda m: m.get("type") == "ack")
            assert ack_z["id"] == "z" and ack_p["id"] == "p"

    run_async(scenario())


def test_ping_is_answered_with_pong(server):
    async def scenario():
        async with ws_connect(server, "/v1/spins/counter/stream", ping_interval=None) as ws:
            await recv_json(ws)
            for payload in (b"", b"hello", bytes(range(100))):
                pong = await ws.ping(payload)
                latency = await asyncio.wait_for(pong, 5)
                assert latency >= 0

    run_async(scenario())


def test_stream_of_unknown_spin_is_refused_with_404(server):
    async def scenario():
        with pytest.raises(InvalidStatus) as refused:
            async with ws_connect(server, "/v1/spins/nope/stream"):
                pass
        assert refused.value.response.status_code == 404
        assert json.loads(refused.value.response.body)["error"]["code"] == "spin_not_found"
        with pytest.raises(InvalidStatus) as refused:
            async with ws_connect(server, "/v1/gears/nope/stream"):
                pass
        assert refused.value.response.status_code == 404

    run_async(scenario())


def test_many_streams_all_receive_each_event(server):
    start = server.settled_sequences()["levels"]
    event = level_event()

    async def scenario():
        streams = [await ws_connect(server, "/v1/spins/levels/stream") for _ in range(20)]
        try:
            epochs = set()
            for ws in streams:
                snapshot = await recv_json(ws)
                assert snapshot["sequence"] == start
                epochs.add(snapshot["epoch"])
            assert len(epochs) == 1
            assert (await asyncio.to_thread(server.post_events, "levels", event)).status_code == 202
            for ws in streams:
                assert await recv_json(ws) == {"type": "state", "sequence": start + 1, "epoch": next(iter(epochs)),
                                               "event": event,
                                               "state": {"left": event["left"], "right": event["right"]}}
        finally:
            await asyncio.gather(*(ws.close() for ws in streams), return_exceptions=True)

    run_async(scenario())


def test_cross_origin_browser_stream_is_refused(server):
    async def scenario():
        with pytest.raises(InvalidStatus) as refused:
            async with ws_connect(server, "/v1/spins/levels/stream", origin="https://evil.example"):
                pass
        assert refused.value.response.status_code == 403

    run_async(scenario())


def test_same_origin_browser_stream_is_accepted(server):
    async def scenario():
        async with ws_connect(server, "/v1/spins/levels/stream", origin=f"http://127.0.0.1:{server.port}") as ws:
            assert (await recv_json(ws))["type"] == "snapshot"

    run_async(scenario())
