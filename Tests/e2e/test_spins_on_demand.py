"""Spins made at run time (docs/PROTOCOL.md, "Spins on demand"), with the default config's
kinds: `door` (the door machine, `door-*`, Gear `doors-{key}`, made by its first event),
`feature` and `router` (the auth-routing pair per user: `feature-42` and `router-42` on
Gear `auth-42`). Driven with Python requests, websockets and a raw SSE read; a kill -9
in the middle of the work must leave every Spin that was answered 201 whole, and every
one answered 200 to DELETE gone.
"""
from __future__ import annotations

import asyncio
import json
import socket
import time
from pathlib import Path

import pytest
import websockets

from spin_e2e import assert_error, metric_value

JSON = {"Content-Type": "application/json"}


def put(server, name: str, kind: str):
    return server.request("PUT", f"/v1/spins/{name}", data=json.dumps({"kind": kind}), headers=JSON)


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out")


def test_the_auth_routing_pair_runs_per_user(start_server):
    server = start_server()
    for user in ("42", "7"):
        made = put(server, f"feature-{user}", "feature")
        assert made.status_code == 201, made.text
        assert made.json() == {"name": f"feature-{user}", "kind": "feature", "sequence": 0, "status": "running"}
        assert put(server, f"router-{user}", "router").status_code == 201
    gears = {gear["name"]: sorted(gear["attached"]) for gear in server.get("/v1/gears").json()["gears"]}
    assert gears["auth-42"] == ["feature-42", "router-42"]
    assert gears["auth-7"] == ["feature-7", "router-7"]
    # User 42 logs out and loads: only router-42 hears feature-42's authorization issue.
    assert server.post_events("router-42", {"type": "logout"}).status_code == 202
    assert server.post_events("feature-42", {"type": "load"}).status_code == 202
    wait_for(lambda: server.spin("router-42")["state"]["route"] == "login")
    assert server.spin("feature-42")["state"]["status"] == "unauthorized"
    # User 7's session is its own: its feature loads.
    assert server.post_events("feature-7", {"type": "load"}).status_code == 202
    wait_for(lambda: server.spin("feature-7")["state"]["status"] == "loaded")
    assert server.spin("router-7")["state"]["route"] == "home"
    # The configured pair is untouched.
    assert server.spin("router")["state"]["route"] == "home"


def test_an_event_makes_a_door_and_bad_requests_make_nothing(start_server):
    server = start_server()
    posted = server.post_events("door-3", {"type": "OPEN"}, wait=True)
    assert posted.status_code == 200, posted.text
    assert posted.json()["state"]["value"] == "opened"
    assert_error(put(server, "door-3", "feature"), 409, "spin_exists", message_contains='of kind "door"')
    assert_error(put(server, "counter", "door"), 409, "spin_exists")
    assert_error(put(server, "door-4", "nope"), 404, "kind_not_found", message_contains="door, feature, router")
    assert_error(put(server, "window-1", "door"), 400, "bad_request", message_contains='"door-*"')
    assert_error(server.request("PUT", "/v1/spins/door-4", data="{", headers=JSON), 400, "malformed_json")
    assert_error(server.request("PUT", "/v1/spins/door-4", data='{"kind":"door"}'), 415, "unsupported_media_type")
    assert_error(server.request("PUT", "/v1/spins/door-4", data='{"kind":"door","x":1}', headers=JSON), 400, "bad_request")
    assert_error(server.request("DELETE", "/v1/spins/counter"), 409, "spin_exists")
    assert_error(server.request("DELETE", "/v1/spins/door-4"), 404, "spin_not_found")
    # An explicit kind's name is not made by an event.
    assert_error(server.post_events("feature-9", {"type": "load"}), 404, "spin_not_found")
    names = [spin["name"] for spin in server.get("/v1/spins").json()["spins"]]
    assert names == ["counter", "door-3", "feature", "levels", "router", "session"]


def test_delete_closes_websocket_4004_ends_sse_and_the_name_starts_again(start_server):
    server = start_server()
    assert put(server, "door-5", "door").status_code == 201
    assert server.post_events("door-5", {"type": "LOCK"}, wait=True).status_code == 200

    sse = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sse.sendall(b"GET /v1/spins/door-5/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
    head = b""
    while b"data:" not in head:
        head += sse.recv(4096)

    async def watch():
        async with websockets.connect(f"{server.ws_base}/v1/spins/door-5/stream") as ws:
            first = json.loads(await ws.recv())
            assert first["type"] == "snapshot" and first["sequence"] == 1
            deleted = await asyncio.get_running_loop().run_in_executor(
                None, lambda: server.request("DELETE", "/v1/spins/door-5"))
            assert deleted.status_code == 200
            assert deleted.json() == {"name": "door-5", "kind": "door", "sequence": 1, "status": "deleted"}
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    await asyncio.wait_for(ws.recv(), 10)
            assert closed.value.rcvd.code == 4004
            return first["epoch"]

    epoch = asyncio.run(watch())
    # The SSE response ends (chunked: the last chunk).
    rest = b""
    while not rest.endswith(b"0\r\n\r\n"):
        chunk = sse.recv(4096)
        assert chunk, "the SSE stream closed without its last chunk"
        rest += chunk
    sse.close()
    assert_error(server.get("/v1/spins/door-5"), 404, "spin_not_found")
    assert not (server.storage / "door-5.journal").exists()
    # Made again: sequence 0, a new epoch.
    assert put(server, "door-5", "door").status_code == 201

    async def fresh():
        async with websockets.connect(f"{server.ws_base}/v1/spins/door-5/stream") as ws:
            return json.loads(await ws.recv())

    snapshot = asyncio.run(fresh())
    assert snapshot["sequence"] == 0 and snapshot["epoch"] != epoch


def test_what_was_answered_survives_kill_9(start_server, tmp_path):
    storage = tmp_path / "storage"
    server = start_server(storage=storage)
    made, deleted = [], []
    for index in range(40):
        assert put(server, f"door-{index}", "door").status_code == 201
        made.append(f"door-{index}")
    for index in range(0, 40, 3):
        assert server.request("DELETE", f"/v1/spins/door-{index}").status_code == 200
        deleted.append(f"door-{index}")
    for index in range(1, 40, 3):
        assert server.post_events(f"door-{index}", {"type": "LOCK"}, wait=True).status_code == 200
    server.kill()
    again = start_server(storage=storage)
    listed = [spin["name"] for spin in again.listed("door-", limit=7)]
    assert sorted(listed) == sorted(set(made) - set(deleted))
    for index in range(1, 40, 3):
        spin = again.spin(f"door-{index}")
        assert spin["sequence"] == 1 and spin["state"]["value"] == "locked"


def test_an_idle_spin_sleeps_and_wakes_for_a_request_a_stream_event_or_a_gear_event(start_server):
    server = start_server(config_patch={"limits": {"idleSpinSeconds": 1}})
    assert put(server, "feature-5", "feature").status_code == 201
    assert put(server, "router-5", "router").status_code == 201

    def status(name):
        return next(spin for spin in server.get(f"/v1/spins?prefix={name}").json()["spins"] if spin["name"] == name)

    wait_for(lambda: status("feature-5")["status"] == "asleep" and status("router-5")["status"] == "asleep")
    assert status("router-5")["sequence"] == 2          # launching → checkingAuthorization → home

    async def scenario():
        async with websockets.connect(f"{server.ws_base}/v1/spins/router-5/stream") as ws:
            first = json.loads(await ws.recv())          # opening the stream woke router-5
            assert first["type"] == "snapshot" and first["state"]["route"] == "home"
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: wait_for(lambda: status("router-5")["status"] == "asleep"))
            # An event on the stream wakes it; the stream, open all along, gets the states.
            await ws.send(json.dumps({"type": "event", "id": "c1", "event": {"type": "logout"}}))
            routes = []
            while "login" not in routes:
                message = json.loads(await asyncio.wait_for(ws.recv(), 10))
                if message["type"] == "state":
                    routes.append(message["state"]["route"])
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: wait_for(lambda: status("router-5")["status"] == "asleep"
                                       and status("feature-5")["status"] == "asleep"))
            # feature-5 wakes for a POST; its authorization issue wakes router-5 through
            # Gear auth-5, which checks again: the stream sees it.
            assert server.post_events("feature-5", {"type": "load"}).status_code == 202
            checks = None
            while checks != 2:
                message = json.loads(await asyncio.wait_for(ws.recv(), 10))
                if message["type"] == "state":
                    checks = message["state"]["authorizationChecks"]

    asyncio.run(scenario())
    assert server.spin("feature-5")["state"]["status"] == "unauthorized"


def test_sleeping_spins_leave_memory_and_are_found_again_by_name(start_server, tmp_path):
    """A sleeping Spin made at run time is only on disk: listed, counted, made (200),
    woken, deleted and restarted without being kept in memory, and a Gear event still
    reaches one that sleeps on disk. The Swift auth pair, whose session service is a
    value in memory shared on their Gear, stays in memory."""
    storage = tmp_path / "storage"
    kinds = json.loads((Path(__file__).parents[2] / "Config" / "spin-server.json").read_text())["kinds"]
    kinds += [{"name": "mfeature", "machine": "machines/auth-feature.json", "names": "mfeature-*",
               "gears": {"authMachines": "mauth-{key}"}},
              {"name": "mrouter", "machine": "machines/auth-router.json", "names": "mrouter-*",
               "gears": {"authMachines": "mauth-{key}"}}]
    patch = {"limits": {"idleSpinSeconds": 1}, "kinds": kinds}
    server = start_server(storage=storage, config_patch=patch)

    def residency(instance):
        text = instance.metrics()
        return metric_value(text, "spin_spins_in_memory"), metric_value(text, "spin_spins_on_disk")

    base, on_disk = residency(server)
    assert on_disk == 0
    for index in range(120):
        assert put(server, f"door-{index:03}", "door").status_code == 201
    # Made asleep, and nothing keeps them in memory.
    assert residency(server) == (base, 120)
    listed = server.listed("door-", limit=25)
    assert all(spin["status"] == "asleep" and spin["kind"] == "door" for spin in listed)
    assert [spin["name"] for spin in listed] == [f"door-{index:03}" for index in range(120)]
    assert residency(server) == (base, 120)      # listing woke nobody

    # An event wakes one from disk; idle again, it goes back to disk.
    assert server.post_events("door-007", {"type": "LOCK"}, wait=True).status_code == 200
    assert residency(server) == (base + 1, 119)
    wait_for(lambda: residency(server) == (base, 120))
    again = put(server, "door-007", "door")
    assert again.status_code == 200 and again.json() == {"name": "door-007", "kind": "door", "sequence": 1, "status": "asleep"}
    assert_error(put(server, "door-007", "feature"), 409, "spin_exists")
    assert server.request("DELETE", "/v1/spins/door-008").status_code == 200
    assert server.request("GET", "/v1/spins/door-008").status_code == 404
    assert residency(server) == (base, 119)

    # The machine auth pair of user 9 sleeps on disk; the feature's authorization issue,
    # sent on Gear mauth-9, wakes the router from disk.
    assert put(server, "mfeature-9", "mfeature").status_code == 201
    assert put(server, "mrouter-9", "mrouter").status_code == 201
    wait_for(lambda: server.spin("mrouter-9")["state"]["value"] == "checkingAuthorization")
    assert server.post_events("mrouter-9", {"type": "authorized"}, wait=True).status_code == 200
    wait_for(lambda: residency(server) == (base, 121), timeout=15)
    assert server.post_events("mfeature-9", [{"type": "load"}, {"type": "unauthorizedResponse"}], wait=True).status_code == 200
    router = wait_for(lambda: (lambda spin: spin if spin["state"]["value"] == "checkingAuthorization" else None)(server.spin("mrouter-9")))
    assert router["state"]["context"]["authorizationChecks"] == 2

    # The Swift pair shares a session service in memory: kept there while they sleep.
    assert put(server, "feature-3", "feature").status_code == 201
    assert put(server, "router-3", "router").status_code == 201
    wait_for(lambda: residency(server) == (base + 2, 121), timeout=15)
    assert server.get("/v1/spins?prefix=router-3").json()["spins"][0]["status"] == "asleep"

    # A restart reads none of the resting Spins; they are found by name.
    assert server.terminate() == 0
    restarted = start_server(storage=storage, config_patch=patch)
    assert residency(restarted) == (base, 123)
    spin = restarted.spin("door-007")
    assert spin["sequence"] == 1 and spin["state"]["value"] == "locked"
    assert restarted.spin("mrouter-9")["state"]["context"]["authorizationChecks"] == 2
    assert restarted.request("GET", "/v1/spins/door-008").status_code == 404
