"""The auth-routing scenario (README, docs/OPERATIONS.md "The example session on a cluster") on a cluster of three nodes sharing one PostgreSQL
(Tests/postgres/pg.sh), with `feature` and `router` served by different nodes and every
request sent through a node that does not serve its Spin: the session lives in the
database (`spin_example_sessions`), so the scenario ends as on one node
(test_auth_routing.py)."""
from __future__ import annotations

import asyncio
import time

import pytest
from websockets.asyncio.client import connect

from spin_e2e import recv_json, recv_until, run_async
from test_auth_routing import route_is
from test_cluster_nodes import Cluster, names_splitting, post
from test_postgres import _have_postgres, database, rows  # noqa: F401 (database: the module's PostgreSQL)

pytestmark = pytest.mark.skipif(not _have_postgres(), reason="PostgreSQL is not installed (Debian package postgresql)")


def wait_for_session(url: str, valid: bool, timeout: float = 10) -> None:
    """Waits until the session row says `valid`. The router's feedback writes it just
    after the route changed, not before the event's 202: a request racing it could still
    see the session as it was."""
    want = "t" if valid else "f"
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline:
        seen = rows(url, "SELECT valid FROM spin_example_sessions WHERE name = 'auth'")
        if seen == want:
            return
        time.sleep(0.05)
    raise AssertionError(f"the session row is {seen!r}, not {want!r}")


def test_the_readme_scenario_through_other_nodes_than_the_owners(database, start_server):
    names = names_splitting(("feature", "router"))
    cluster = Cluster(start_server, database.fresh(), names, "auth")
    owners = cluster.settle(names)
    assert owners["feature"] != owners["router"]
    # Router events through the feature's node, feature events through the router's, the
    # Spins' streams through the third; Gear traffic is shown where `feature` propagates.
    to_router = cluster.nodes[owners["feature"]]
    to_feature = cluster.nodes[owners["router"]]
    watcher = cluster.nodes[[name for name in names if name not in (owners["feature"], owners["router"])][0]]
    gear_node = cluster.nodes[owners["feature"]]

    async def send(node, spin, event):
        response = await asyncio.to_thread(post, node, spin, event)
        assert response.status_code == 202, response.text

    async def scenario():
        open_ws = lambda node, path: connect(node.ws_base + path, open_timeout=5, close_timeout=5, proxy=None)
        async with open_ws(watcher, "/v1/spins/router/stream") as router, \
                open_ws(gear_node, "/v1/gears/auth/stream") as gear, \
                open_ws(watcher, "/v1/spins/feature/stream") as feature:
            snapshot = await recv_json(router)
            assert snapshot["type"] == "snapshot"
            if snapshot["state"]["route"] != "home":   # still launching: it checks at once
                snapshot, _ = await recv_until(router, route_is("home"))
            checks = snapshot["state"]["authorizationChecks"]
            assert checks >= 1
            assert (await recv_json(feature))["type"] == "snapshot"

            # Logging out ends the session: the router shows the login page.
            await send(to_router, "router", {"type": "logout"})
            message, _ = await recv_until(router, route_is("login"))
            assert message["event"] == {"type": "logout"}
            assert message["state"] == {"route": "login", "authorizationChecks": checks}
            await asyncio.to_thread(wait_for_session, cluster.url, False)

            # The feature, on another node, loads without a session: the backend refuses,
            # the feature goes unauthorized and says so on Gear auth; the router re-checks
            # (one more check, not two) and stays on login.
            await send(to_feature, "feature", {"type": "load"})
            _, feature_seen = await recv_until(feature, lambda m: m.get("state", {}).get("status") == "unauthorized")
            assert [m["state"]["status"] for m in feature_seen] == ["loading", "unauthorized"], feature_seen
            traffic = await recv_json(gear, 10)
            # Its place in the sender's outbox (the server routes Gears durably).
            assert isinstance(traffic.pop("position"), int)
            assert traffic == {"type": "gear", "gear": "auth", "from": "feature",
                               "event": {"type": "authorizationIssueHappened"}}
            checking, _ = await recv_until(router, route_is("checkingAuthorization"), timeout=15)
            assert checking["event"] == {"type": "checkAuthorization"}
            assert checking["state"] == {"route": "checkingAuthorization", "authorizationChecks": checks + 1}
            back, _ = await recv_until(router, route_is("login"))
            assert back["event"] == {"type": "unauthorized"}
            assert back["state"] == {"route": "login", "authorizationChecks": checks + 1}
            assert back["sequence"] == checking["sequence"] + 1

            # Logging in starts a session: home.
            await send(to_router, "router", {"type": "login"})
            home, _ = await recv_until(router, route_is("home"))
            assert home["event"] == {"type": "login"}
            assert home["state"] == {"route": "home", "authorizationChecks": checks + 1}
            await asyncio.to_thread(wait_for_session, cluster.url, True)

            # With a session the feature loads.
            await send(to_feature, "feature", {"type": "load"})
            loaded, _ = await recv_until(feature, lambda m: m.get("state", {}).get("status") == "loaded")
            assert loaded["event"] == {"type": "loaded", "items": 3}
            assert loaded["state"] == {"status": "loaded", "items": 3}

            # An unauthorized answer while the session is valid: the router re-checks and
            # goes home again.
            await send(to_feature, "feature", {"type": "unauthorizedResponse"})
            traffic = await recv_json(gear, 10)
            # Its place in the sender's outbox (the server routes Gears durably).
            assert isinstance(traffic.pop("position"), int)
            assert traffic == {"type": "gear", "gear": "auth", "from": "feature",
                               "event": {"type": "authorizationIssueHappened"}}
            checking, _ = await recv_until(router, route_is("checkingAuthorization", checks + 2), timeout=15)
            home, _ = await recv_until(router, route_is("home", checks + 2))
            assert home["event"] == {"type": "authorized"}
            assert home["sequence"] == checking["sequence"] + 1
            return checks

    checks = run_async(scenario(), timeout=60)
    # Each Gear event was delivered once (two checks more, not four), and every node
    # answers the same states.
    time.sleep(1)
    for name in names:
        assert cluster.nodes[name].spin("router")["state"] == {"route": "home", "authorizationChecks": checks + 2}
        assert cluster.nodes[name].spin("feature")["state"] == {"status": "unauthorized", "items": 0}
