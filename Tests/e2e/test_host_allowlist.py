"""The Host allow-list (docs/OPERATIONS.md "Keys", `listen.allowedHosts`): without tokens,
only the listen address, loopback names and listed names are served; any other Host
(a page that rebound its own name to 127.0.0.1) gets 421 on every route."""
from __future__ import annotations

import json
import re

import pytest

from spin_e2e import REPO, assert_error, parse_response_head, raw_exchange


def get_with_host(server, path: str, host: str, **kwargs):
    return server.get(path, headers={"Host": host, **kwargs.pop("headers", {})}, **kwargs)


@pytest.mark.parametrize("path", ["/", "/healthz", "/v1/spins", "/v1/spins/levels", "/metrics", "/openapi.json"])
def test_foreign_host_gets_421_on_every_route(server, path):
    response = get_with_host(server, path, f"rebound.example:{server.port}")
    assert_error(response, 421, "misdirected_request", message_contains=f'"rebound.example:{server.port}"')


def test_foreign_host_cannot_post_events_or_open_streams(server):
    before = server.sequence("levels")
    response = server.post("/v1/spins/levels/events", data=json.dumps({"type": "increaseLeft"}),
                           headers={"Host": "rebound.example", "Content-Type": "application/json"})
    assert_error(response, 421, "misdirected_request")
    assert server.sequence("levels") == before
    for path in ["/v1/spins/levels/stream", "/v1/gears/auth/stream"]:
        data, _ = raw_exchange(server.port, (
            f"GET {path} HTTP/1.1\r\nHost: rebound.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n").encode(), timeout=2)
        _, status, _, _ = parse_response_head(data)
        assert status == 421, data[:300]
    response = get_with_host(server, "/v1/spins/levels/stream", "rebound.example",
                             headers={"Accept": "text/event-stream"}, stream=True, timeout=5)
    assert response.status_code == 421
    response.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST", "[::1]", "app.localhost"])
def test_loopback_names_are_served_on_any_port(server, host):
    for suffix in ["", f":{server.port}", ":1"]:
        assert get_with_host(server, "/healthz", host + suffix).status_code == 200


def test_allowed_hosts_from_the_environment_are_served(start_server):
    server = start_server(name="allowed", env={"SPIN_ALLOWED_HOSTS": "spin.test, other.test"})
    assert get_with_host(server, "/v1/spins", f"spin.test:{server.port}").status_code == 200
    assert get_with_host(server, "/v1/spins", "OTHER.test").status_code == 200
    assert_error(get_with_host(server, "/v1/spins", "third.test"), 421, "misdirected_request")


def test_with_tokens_there_is_no_host_check(start_server):
    server = start_server(name="tokens", env={"SPIN_TOKENS": "tok:read"})
    response = get_with_host(server, "/v1/spins", "rebound.example", headers={"Authorization": "Bearer tok"})
    assert response.status_code == 200, response.text


def test_dockerfile_health_probe_host_is_served_on_all_interfaces(start_server):
    """The image listens on 0.0.0.0 without tokens: its HEALTHCHECK must still get 200."""
    dockerfile = (REPO / "Dockerfile").read_text()
    healthcheck = dockerfile[dockerfile.index("HEALTHCHECK"):]
    match = re.search(r"Host: ([^\\\s]+)", healthcheck)
    assert match, "the HEALTHCHECK sends no Host header"
    server = start_server(name="docker", args=["--host", "0.0.0.0"])
    assert "listening on http://0.0.0.0:" in server.log()
    data, _ = raw_exchange(server.port, f"GET /healthz HTTP/1.1\r\nHost: {match.group(1)}\r\nConnection: close\r\n\r\n".encode())
    assert data.startswith(b"HTTP/1.1 200"), data[:300]
    # The machine's own address is not a loopback name: on all interfaces it must be listed.
    assert_error(get_with_host(server, "/healthz", "192.0.2.10:8080"), 421, "misdirected_request")
