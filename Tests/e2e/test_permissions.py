"""Per-Spin and per-Gear permissions (auth.tokens grants and auth.rules), in-band refresh
of a stream's credentials, and the audit trail (`sub` in the log, the journal and the
stream), with real clients: requests and websockets."""
from __future__ import annotations

import json

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from spin_e2e import assert_error, recv_json, recv_until, run_async

AUTH = {
    "auth": {
        "tokens": [
            {"token": "ops-secret", "scopes": ["admin"], "subject": "ops"},
            {"token": "dash-read", "subject": "dash", "spin": {"read": ["lev*"]}},
            {"token": "dash-write", "subject": "dash", "spin": {"write": ["levels"]}},
            {"token": "device-7", "subject": "device-7", "spin": {"write": ["counter"]}},
            {"token": "other", "subject": "mallory", "spin": {"read": ["*"]}},
            {"token": "anon-read", "scopes": ["read"]},
            {"token": "anon-write", "scopes": ["write"]},
        ],
        "rules": [{"subject": "device-*", "gear": {"read": ["auth"]}}],
    }
}
OPS = {"Authorization": "Bearer ops-secret"}


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def secured(start_server):
    return start_server(config_patch=AUTH)


def test_grants_allow_only_their_spins_and_refusals_name_spin_and_permission(secured):
    assert secured.get("/v1/spins/levels", headers=bearer("dash-read")).status_code == 200
    refused = secured.get("/v1/spins/counter", headers=bearer("dash-read"))
    assert_error(refused, 403, "forbidden")
    assert refused.json()["error"]["message"] == \
        'the credentials may not read Spin "counter": that needs the read permission on it'
    before = secured.get("/v1/spins/levels", headers=OPS).json()["sequence"]
    post = secured.post_events("levels", {"type": "set", "left": 1, "right": 1}, headers=bearer("dash-read"))
    assert_error(post, 403, "forbidden")
    assert "send events to Spin \"levels\"" in post.json()["error"]["message"]
    assert secured.get("/v1/spins/levels", headers=OPS).json()["sequence"] == before
    resume = secured.post("/v1/spins/counter/resume", headers=bearer("device-7"))
    assert_error(resume, 403, "forbidden")
    assert "needs the admin permission" in resume.json()["error"]["message"]


def test_listings_show_only_what_the_caller_may_read(secured):
    def names(path, token, key):
        response = secured.get(path, headers=bearer(token))
        assert response.status_code == 200, response.text
        return [entry["name"] for entry in response.json()[key]]

    assert names("/v1/spins", "dash-read", "spins") == ["levels"]
    assert names("/v1/spins", "device-7", "spins") == ["counter"]
    assert names("/v1/gears", "device-7", "gears") == ["auth"]      # through the rule for device-*
    assert names("/v1/gears", "dash-read", "gears") == []
    assert_error(secured.get("/metrics", headers=bearer("dash-read")), 403, "forbidden")
    assert secured.get("/metrics", headers=OPS).status_code == 200


def test_a_refresh_swaps_the_streams_permissions_in_band_for_the_same_subject_only(secured):
    event = {"type": "set", "left": 5, "right": 5}

    async def scenario():
        async with connect(secured.ws_base + "/v1/spins/levels/stream", additional_headers=bearer("dash-read"),
                           open_timeout=5, close_timeout=5, proxy=None) as ws:
            assert (await recv_json(ws))["type"] == "snapshot"
            await ws.send(json.dumps({"type": "event", "id": "e1", "event": event}))
            error, _ = await recv_until(ws, lambda m: m.get("type") == "error")
            assert error["error"]["code"] == "forbidden"
            # Another subject's token is refused, and the stream goes on as it was.
            await ws.send(json.dumps({"type": "refresh", "id": "r0", "token": "other"}))
            error, _ = await recv_until(ws, lambda m: m.get("id") == "r0")
            assert error["type"] == "error" and error["error"]["code"] == "forbidden", error
            await ws.send(json.dumps({"type": "refresh", "id": "r1", "token": "not-a-token"}))
            error, _ = await recv_until(ws, lambda m: m.get("id") == "r1")
            assert error["error"]["code"] == "unauthorized", error
            # The same subject's write token: acknowledged, and events go through.
            await ws.send(json.dumps({"type": "refresh", "id": "r2", "token": "dash-write"}))
            refreshed, _ = await recv_until(ws, lambda m: m.get("id") == "r2")
            assert refreshed == {"type": "refreshed", "id": "r2", "exp": None}
            await ws.send(json.dumps({"type": "event", "id": "e2", "event": event}))
            ack, states = await recv_until(ws, lambda m: m.get("type") == "ack")
            assert ack["id"] == "e2", ack
            applied = [m for m in states if m.get("type") == "state" and m.get("event") == event]
            assert applied and applied[0]["sub"] == "dash", states

    run_async(scenario())


def test_the_subject_of_each_write_is_logged_journaled_and_streamed_after_a_restart(start_server, tmp_path):
    storage = tmp_path / "audited"
    first = start_server(config_patch=AUTH, storage=storage, name="first")
    response = first.post_events("counter", {"type": "reset"}, headers=bearer("device-7"))
    assert response.status_code == 202, response.text
    sequence = response.json()["sequence"]
    assert_error(first.post_events("levels", {"type": "reset"}, headers=bearer("device-7")), 403, "forbidden")
    log = first.log()
    assert any('"sub":"device-7"' in line or "sub=device-7" in line for line in log.splitlines()
               if "POST /v1/spins/counter/events 202" in line), log[-2000:]
    assert any('"sub":"device-7"' in line or "sub=device-7" in line for line in log.splitlines()
               if "POST /v1/spins/levels/events 403" in line), log[-2000:]
    assert first.terminate() == 0

    second = start_server(config_patch=AUTH, storage=storage, name="second")

    async def scenario():
        async with connect(second.ws_base + f"/v1/spins/counter/stream?since={sequence - 1}", additional_headers=OPS,
                           open_timeout=5, close_timeout=5, proxy=None) as ws:
            message = await recv_json(ws)
            assert message["type"] == "state" and message["sequence"] == sequence, message
            assert message["event"] == {"type": "reset"} and message["sub"] == "device-7", message
            later = await recv_json(ws)
            assert "sub" not in later, later       # the counter's own feedback events have no sender

    run_async(scenario())


def test_credentials_without_a_subject_cannot_be_refreshed_into_others(secured):
    async def scenario():
        async with connect(secured.ws_base + "/v1/spins/levels/stream", additional_headers=bearer("anon-read"),
                           open_timeout=5, close_timeout=5, proxy=None) as ws:
            assert (await recv_json(ws))["type"] == "snapshot"
            await ws.send(json.dumps({"type": "refresh", "id": "r", "token": "anon-write"}))
            error, _ = await recv_until(ws, lambda m: m.get("id") == "r")
            assert error["type"] == "error" and error["error"]["code"] == "forbidden", error
            assert "without a subject" in error["error"]["message"]

    run_async(scenario())


def test_the_dashboard_may_be_framed_only_by_itself_and_the_allowed_origins(start_server):
    server = start_server(config_patch={"auth": {"allowedOrigins": ["https://console.example"]}})
    policy = server.get("/").headers["Content-Security-Policy"]
    assert "frame-ancestors 'self' https://console.example" in policy, policy
