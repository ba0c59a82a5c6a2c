"""JWT identities on streams and routes, with tokens minted by PyJWT: the `spin` and
`gear` claims as permissions, `sub` in the audit trail, a stream closed with 4001 when
its token expires, kept open by an in-band refresh, and SSE ending at expiry."""
from __future__ import annotations

import asyncio
import json
import time

import jwt
import pytest
import requests
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from spin_e2e import HTTP_TIMEOUT, assert_error, recv_json, recv_until, run_async

SECRET = "a-test-secret-that-is-long-enough-for-hs256!"


def mint(sub: str = "alice", lifetime: float = 60, **claims) -> str:
    now = time.time()
    payload = {"sub": sub, "iat": int(now), "exp": now + lifetime, **claims}
    return jwt.encode(payload, SECRET, algorithm="HS256")


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def secured(start_server):
    return start_server(config_patch={"auth": {
        "jwt": {"keys": [{"alg": "HS256", "secret": SECRET}], "leewaySeconds": 0},
        "rules": [{"subject": "device-*", "gear": {"read": ["auth"]}}],
    }})


def test_claims_are_permissions_and_refusals_name_the_spin(secured):
    token = mint(spin={"read": ["counter"], "write": ["lev*"]})
    assert secured.get("/v1/spins/counter", headers=bearer(token)).status_code == 200
    assert [s["name"] for s in secured.get("/v1/spins", headers=bearer(token)).json()["spins"]] == ["counter", "levels"]
    refused = secured.post_events("counter", {"type": "reset"}, headers=bearer(token))
    assert_error(refused, 403, "forbidden")
    assert 'Spin "counter"' in refused.json()["error"]["message"]
    assert secured.post_events("levels", {"type": "set", "left": 1, "right": 1}, headers=bearer(token)).status_code == 202
    # A global scope claim, and the rules of the subject.
    assert secured.get("/metrics", headers=bearer(mint(scope="read"))).status_code == 200
    assert_error(secured.get("/metrics", headers=bearer(token)), 403, "forbidden")
    device = mint(sub="device-9")
    assert [g["name"] for g in secured.get("/v1/gears", headers=bearer(device)).json()["gears"]] == ["auth"]
    # A claim of the wrong shape is a malformed token, not an ignored claim.
    assert_error(secured.get("/v1/spins", headers=bearer(mint(spin={"read": "counter"}))), 401, "unauthorized")


def test_a_websocket_closes_4001_when_its_token_expires(secured):
    token = mint(lifetime=2, spin={"read": ["counter"]})

    async def scenario():
        async with connect(secured.ws_base + "/v1/spins/counter/stream", additional_headers=bearer(token),
                           open_timeout=5, close_timeout=5, proxy=None) as ws:
            assert (await recv_json(ws))["type"] == "snapshot"
            started = time.monotonic()
            with pytest.raises(ConnectionClosed) as closed:
                for _ in range(1000):
                    await recv_json(ws, timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4001, closed.value
            assert closed.value.rcvd.reason == "token expired"
            assert time.monotonic() - started < 5

    run_async(scenario())


def test_a_refresh_keeps_the_stream_open_past_the_first_expiry_and_changes_its_permissions(secured):
    first = mint(lifetime=2, spin={"read": ["levels"]})
    event = {"type": "set", "left": 7, "right": 7}

    async def scenario():
        async with connect(secured.ws_base + "/v1/spins/levels/stream", additional_headers=bearer(first),
                           open_timeout=5, close_timeout=5, proxy=None) as ws:
            assert (await recv_json(ws))["type"] == "snapshot"
            # Another subject's token does not take the stream over.
            await ws.send(json.dumps({"type": "refresh", "id": "x", "token": mint(sub="mallory", spin={"read": ["*"]})}))
            error, _ = await recv_until(ws, lambda m: m.get("id") == "x")
            assert error["type"] == "error" and error["error"]["code"] == "forbidden", error
            renewed = mint(lifetime=60, spin={"write": ["levels"]})
            await ws.send(json.dumps({"type": "refresh", "id": "r", "token": renewed}))
            refreshed, _ = await recv_until(ws, lambda m: m.get("id") == "r")
            assert refreshed["type"] == "refreshed" and abs(refreshed["exp"] - (time.time() + 60)) < 5, refreshed
            await asyncio.sleep(3)   # past the first token's expiry
            await ws.send(json.dumps({"type": "event", "id": "e", "event": event}))
            ack, seen = await recv_until(ws, lambda m: m.get("type") == "ack")
            assert ack["id"] == "e", ack
            state = next(m for m in seen if m.get("type") == "state" and m.get("event") == event)
            assert state["sub"] == "alice"

    run_async(scenario())


def test_an_sse_stream_ends_when_its_token_expires(secured):
    token = mint(lifetime=2, spin={"read": ["counter"]})
    started = time.monotonic()
    with requests.get(secured.base_url + "/v1/spins/counter/stream", headers={**bearer(token), "Accept": "text/event-stream"},
                      stream=True, timeout=(HTTP_TIMEOUT, 10)) as response:
        assert response.status_code == 200
        body = b"".join(response.iter_content(chunk_size=None))
    assert b'"type":"snapshot"' in body
    assert time.monotonic() - started < 6


@pytest.mark.parametrize("claim", ["exp", "nbf"])
def test_a_date_beyond_the_year_9999_is_a_malformed_token_not_a_crash(secured, claim):
    token = jwt.encode({"sub": "alice", "exp": time.time() + 60, claim: 1e16}, SECRET, algorithm="HS256")
    refused = secured.get("/v1/spins", headers=bearer(token))
    assert_error(refused, 401, "unauthorized")
    assert "before the year 10000" in refused.json()["error"]["message"]
    assert secured.get("/healthz").status_code == 200
