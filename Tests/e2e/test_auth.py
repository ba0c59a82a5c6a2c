"""Bearer tokens with scopes (SPIN_TOKENS="token:scope,..."): read < write < admin;
/healthz, /readyz, /openapi.json stay open."""
from __future__ import annotations

import json

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from spin_e2e import assert_error, recv_json, recv_until, run_async

READ = {"Authorization": "Bearer r"}
WRITE = {"Authorization": "Bearer w"}
EVENT = {"type": "set", "left": 42, "right": 42}


@pytest.fixture(scope="module")
def secured(module_server):
    return module_server(env={"SPIN_TOKENS": "r:read,w:write"}, name="secured")


def test_routes_need_a_token(secured):
    for path in ["/v1/spins", "/v1/spins/levels", "/v1/gears", "/metrics"]:
        response = secured.get(path)
        assert_error(response, 401, "unauthorized")
        assert response.headers.get("WWW-Authenticate", "").startswith("Bearer"), response.headers
    assert_error(secured.post_events("levels", EVENT), 401, "unauthorized")
    assert_error(secured.get("/v1/spins", headers={"Authorization": "Bearer nope"}), 401, "unauthorized")
    assert_error(secured.get("/v1/spins", headers={"Authorization": "Basic cjpy"}), 401, "unauthorized")
    assert_error(secured.get("/v1/spins", headers={"Authorization": "Bearer rr"}), 401, "unauthorized")


def test_open_routes_need_no_token(secured):
    assert secured.get("/healthz").json() == {"status": "ok"}
    assert secured.get("/readyz").status_code == 200
    assert secured.get("/openapi.json").status_code == 200


def test_read_token_reads_but_cannot_post(secured):
    baseline = secured.settled_sequences(headers=READ)
    assert secured.get("/v1/spins/levels", headers=READ).status_code == 200
    assert secured.get("/metrics", headers=READ).status_code == 200
    assert_error(secured.post_events("levels", EVENT, headers=READ), 403, "forbidden")
    assert secured.settled_sequences(headers=READ) == baseline


def test_write_token_posts(secured):
    start = secured.settled_sequences(headers=WRITE)["levels"]
    response = secured.post_events("levels", EVENT, headers=WRITE)
    assert response.status_code == 202, response.text
    assert response.json() == {"accepted": 1, "sequence": start + 1}


def test_stream_with_a_bad_token_is_refused_before_upgrade(secured):
    async def scenario():
        for headers in ({}, {"Authorization": "Bearer nope"}):
            with pytest.raises(InvalidStatus) as refused:
                async with connect(secured.ws_base + "/v1/spins/levels/stream", additional_headers=headers,
                                   open_timeout=5, proxy=None):
                    pass
            assert refused.value.response.status_code == 401
            assert json.loads(refused.value.response.body)["error"]["code"] == "unauthorized"

    run_async(scenario())


def test_stream_with_read_token_streams_but_cannot_send_events(secured):
    baseline = secured.settled_sequences(headers=READ)

    async def scenario():
        async with connect(secured.ws_base + "/v1/spins/levels/stream", additional_headers=READ,
                           open_timeout=5, close_timeout=5, proxy=None) as ws:
            assert (await recv_json(ws))["type"] == "snapshot"
            await ws.send(json.dumps({"type": "event", "id": "r1", "event": EVENT}))
            error, _ = await recv_until(ws, lambda m: m.get("type") == "error")
            assert error["id"] == "r1" and error["error"]["code"] == "forbidden", error

    run_async(scenario())
    assert secured.settled_sequences(headers=READ) == baseline


def test_stream_with_write_token_sends_events(secured):
    start = secured.settled_sequences(headers=WRITE)["levels"]

    async def scenario():
        async with connect(secured.ws_base + "/v1/spins/levels/stream", additional_headers=WRITE,
                           open_timeout=5, close_timeout=5, proxy=None) as ws:
            await recv_json(ws)
            await ws.send(json.dumps({"type": "event", "id": "w1", "event": EVENT}))
            ack, _ = await recv_until(ws, lambda m: m.get("type") == "ack")
            assert ack == {"type": "ack", "id": "w1", "sequence": start + 1}

    run_async(scenario())


def test_stream_takes_the_token_as_access_token_query(secured):
    async def scenario():
        async with connect(secured.ws_base + "/v1/spins/levels/stream?access_token=r",
                           open_timeout=5, close_timeout=5, proxy=None) as ws:
            assert (await recv_json(ws))["type"] == "snapshot"
        with pytest.raises(InvalidStatus) as refused:
            async with connect(secured.ws_base + "/v1/spins/levels/stream?access_token=nope",
                               open_timeout=5, proxy=None):
                pass
        assert refused.value.response.status_code == 401

    run_async(scenario())


def test_access_token_query_is_not_accepted_on_other_routes(secured):
    assert_error(secured.get("/v1/spins?access_token=r"), 401, "unauthorized")
    assert_error(secured.post("/v1/spins/levels/events?access_token=w", data=json.dumps(EVENT),
                              headers={"Content-Type": "application/json"}), 401, "unauthorized")
