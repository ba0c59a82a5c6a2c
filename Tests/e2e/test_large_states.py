"""Nothing acknowledged that cannot be served (docs/OPERATIONS.md, `limits.maxStateBytes`):
a state over the limit is refused before anyone hears of it (413 `state_too_large`,
nothing applied, the Spin goes on), and whatever the server does accept it serves whole —
a response or a stream message larger than what a connection may have pending is written
as the socket drains, to curl, requests, a WebSocket client, and pipelined behind it."""
from __future__ import annotations

import asyncio
import json
import socket
import subprocess

from websockets.asyncio.client import connect

from spin_e2e import LOOPBACK, SpinServer, assert_error, run_async

BLOB = {
    "id": "blob", "initial": "on", "context": {},
    "states": {"on": {"on": {
        key: {"actions": [{"type": "assign", "set": {key.lower(): {"from": "event.v"}}}]} for key in "ABCDE"
    }}},
}


def blob_server(server_bin, workdir, limits: dict | None = None) -> SpinServer:
    instance = SpinServer(server_bin, workdir, config_patch={
        "spins": [{"name": "blob", "machine": "machines/blob.json"}], "gears": [], "limits": limits or {}})
    (instance.config_path.parent / "machines" / "blob.json").write_text(json.dumps(BLOB))
    return instance.start()


def post(server: SpinServer, key: str, size: int):
    return server.post_events("blob", {"type": key, "v": "x" * size})


def test_an_event_whose_state_is_over_max_state_bytes_is_refused_and_the_spin_goes_on(server_bin, tmp_path):
    server = blob_server(server_bin, tmp_path / "limit")
    try:
        assert post(server, "A", 900_000).status_code == 202
        before = server.spin("blob")
        refused = post(server, "B", 900_000)
        assert_error(refused, 413, "state_too_large", message_contains="limits.maxStateBytes (1048576)")
        assert "1800" in refused.json()["error"]["message"], "it names the size the state would have had"
        after = server.spin("blob")
        assert after["sequence"] == before["sequence"] and after["state"] == before["state"]
        assert after["status"] == "running"
        # The Spin goes on at once, and a restart finds nothing of the refused event.
        response = post(server, "C", 10)
        assert response.status_code == 202 and response.json()["sequence"] == before["sequence"] + 1
        assert server.terminate() == 0
        again = SpinServer(server_bin, tmp_path / "limit", storage=server.storage).start()
        try:
            state = again.spin("blob")["state"]["context"]
            assert sorted(state) == ["a", "c"] and len(state["a"]) == 900_000
        finally:
            assert again.terminate() == 0
    finally:
        server.kill()


def test_a_state_larger_than_the_pending_output_limit_is_served_whole(server_bin, tmp_path):
    """Five 1 MB events under an 8 MiB limit: a 5 MB state, over the 4 MiB a connection
    may have pending, to curl (GET), a WebSocket (snapshot and state message), and a
    pipelined request behind the large answer."""
    server = blob_server(server_bin, tmp_path / "large", limits={"maxStateBytes": 8 << 20})
    try:
        for key in "ABCDE":
            response = post(server, key, 1_000_000)
            assert response.status_code == 202, response.text
        result = subprocess.run(["curl", "-s", "--noproxy", "*", "--max-time", "30", "-o", "-", "-w", "%{http_code}",
                                 f"{server.base_url}/v1/spins/blob"], capture_output=True, timeout=40)
        body, status = result.stdout[:-3], result.stdout[-3:]
        assert status == b"200", result
        document = json.loads(body)
        assert [len(document["state"]["context"][key]) for key in "abcde"] == [1_000_000] * 5

        # Two requests in one write: the second answer follows the whole first one.
        with socket.create_connection((LOOPBACK, server.port), timeout=30) as raw:
            raw.sendall(b"GET /v1/spins/blob HTTP/1.1\r\nHost: localhost\r\n\r\n"
                        b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            received = b""
            while True:
                chunk = raw.recv(1 << 20)
                if not chunk:
                    break
                received += chunk
        first, _, rest = received.partition(b"\r\n\r\n")
        length = int(next(line.split(b":")[1] for line in first.split(b"\r\n") if line.lower().startswith(b"content-length")))
        assert json.loads(rest[:length])["sequence"] == 5
        assert rest[length:].startswith(b"HTTP/1.1 200 OK") and rest[length:].endswith(b'{"status":"ok"}')

        async def stream():
            async with connect(f"{server.ws_base}/v1/spins/blob/stream", max_size=None, open_timeout=10,
                               proxy=None) as ws:
                snapshot = json.loads(await asyncio.wait_for(ws.recv(), 30))
                assert snapshot["type"] == "snapshot" and snapshot["sequence"] == 5
                assert len(snapshot["state"]["context"]["e"]) == 1_000_000
                assert post(server, "A", 1_000_001).status_code == 202
                message = json.loads(await asyncio.wait_for(ws.recv(), 30))
                assert message["type"] == "state" and message["sequence"] == 6
                assert len(message["state"]["context"]["a"]) == 1_000_001

        run_async(stream())
        assert "outputLimitExceeded" not in server.log()
    finally:
        assert server.terminate() == 0, server.log_tail()
