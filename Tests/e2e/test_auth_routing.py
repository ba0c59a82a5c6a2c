"""The auth-routing mediator example over the network: Spins `feature` and `router`
share Gear `auth` (docs/PROTOCOL.md, Hosting and Gear routing)."""
from __future__ import annotations

import asyncio

from websockets.asyncio.client import connect

from spin_e2e import recv_json, recv_until, run_async


def route_is(route: str, checks: int | None = None):
    def predicate(message):
        state = message.get("state", {})
        return message.get("type") == "state" and state.get("route") == route and \
            (checks is None or state.get("authorizationChecks") == checks)
    return predicate


def test_auth_issue_in_feature_makes_router_recheck(start_server):
    # A server of its own: the scenario depends on the session service's state.
    server = start_server(name="auth-routing")
    server.settled_sequences()
    assert server.spin("router")["state"] == {"route": "home", "authorizationChecks": 1}

    async def post(spin, event, status=202):
        response = await asyncio.to_thread(server.post_events, spin, event)
        assert response.status_code == status, response.text
        return response.json()

    async def scenario():
        open_ws = lambda path: connect(server.ws_base + path, open_timeout=5, close_timeout=5, proxy=None)
        async with open_ws("/v1/spins/router/stream") as router, open_ws("/v1/gears/auth/stream") as gear, \
                open_ws("/v1/spins/feature/stream") as feature:
            snapshot = await recv_json(router)
            assert snapshot["type"] == "snapshot"
            assert snapshot["state"] == {"route": "home", "authorizationChecks": 1}
            assert (await recv_json(feature))["type"] == "snapshot"

            # Logging out ends the session: the router shows the login page.
            await post("router", {"type": "logout"})
            message, _ = await recv_until(router, route_is("login"))
            assert message["event"] == {"type": "logout"}
            assert message["state"] == {"route": "login", "authorizationChecks": 1}

            # The feature loads without a session: the backend refuses, the feature goes
            # unauthorized and says so on Gear auth; the router re-checks and stays on login.
            await post("feature", {"type": "load"})
            _, feature_seen = await recv_until(feature, lambda m: m.get("state", {}).get("status") == "unauthorized")
            assert [m["state"]["status"] for m in feature_seen] == ["loading", "unauthorized"], feature_seen
            traffic = await recv_json(gear, 10)
            # Its place in the sender's outbox (the server routes Gears durably).
            assert isinstance(traffic.pop("position"), int)
            assert traffic == {"type": "gear", "gear": "auth", "from": "feature",
                               "event": {"type": "authorizationIssueHappened"}}
            checking, _ = await recv_until(router, route_is("checkingAuthorization"))
            assert checking["event"] == {"type": "checkAuthorization"}
            assert checking["state"] == {"route": "checkingAuthorization", "authorizationChecks": 2}
            back, _ = await recv_until(router, route_is("login"))
            assert back["state"] == {"route": "login", "authorizationChecks": 2}
            assert back["sequence"] == checking["sequence"] + 1

            # Logging in starts a session: home.
            await post("router", {"type": "login"})
            home, _ = await recv_until(router, route_is("home"))
            assert home["event"] == {"type": "login"}
            assert home["state"] == {"route": "home", "authorizationChecks": 2}

            # With a session the feature loads.
            await post("feature", {"type": "load"})
            loaded, _ = await recv_until(feature, lambda m: m.get("state", {}).get("status") == "loaded")
            assert loaded["event"]["type"] == "loaded" and loaded["state"]["items"] == loaded["event"]["items"]

            # An unauthorized answer while the session is valid: the router re-checks and
            # goes home again.
            await post("feature", {"type": "unauthorizedResponse"})
            traffic = await recv_json(gear, 10)
            # Its place in the sender's outbox (the server routes Gears durably).
            assert isinstance(traffic.pop("position"), int)
            assert traffic == {"type": "gear", "gear": "auth", "from": "feature",
                               "event": {"type": "authorizationIssueHappened"}}
            checking, _ = await recv_until(router, route_is("checkingAuthorization", 3))
            home, _ = await recv_until(router, route_is("home", 3))
            assert home["event"] == {"type": "authorized"}
            assert home["sequence"] == checking["sequence"] + 1

    run_async(scenario(), timeout=50)
    settled = server.settled_sequences()
    assert server.spin("router") == {"name": "router", "sequence": settled["router"], "status": "running",
                                     "state": {"route": "home", "authorizationChecks": 3},
                                     "schema": "/v1/spins/router/schema"}
