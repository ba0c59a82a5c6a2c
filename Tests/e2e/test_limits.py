"""Configured limits (Config/spin-server.json `limits`, docs/OPERATIONS.md "Keys"): a full inbox
answers 429 with Retry-After, connections over the limit wait until a slot frees, idle streams
are pinged, and the log can be JSON."""
from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time

import requests

from spin_e2e import LOOPBACK, RawWebSocket, assert_error, metric_value


def test_batch_larger_than_the_inbox_is_refused_and_changes_nothing(start_server):
    server = start_server(name="inbox", config_patch={"limits": {"inbox": 4}})
    baseline = server.settled_sequences()
    response = server.post_events("levels", [{"type": "set", "left": 3, "right": 3}] * 10)
    # It can never fit: a 413 that names the limit, not a 429 to retry forever.
    assert_error(response, 413, "batch_too_large", message_contains="inbox")
    assert server.settled_sequences() == baseline
    response = server.post_events("levels", [{"type": "set", "left": 3, "right": 3}] * 4)
    assert response.status_code == 202, response.text
    assert response.json() == {"accepted": 4, "sequence": baseline["levels"] + 4}


def test_full_inbox_answers_429_with_retry_after_and_applies_nothing(start_server):
    """Concurrent batches that fill a tiny inbox: each is either applied whole (202) or
    refused whole (429 inbox_full with Retry-After); the sequence counts exactly the
    applied ones."""
    server = start_server(name="inbox-busy", config_patch={"limits": {"inbox": 4}})
    start = server.settled_sequences()["levels"]
    batch = [{"type": "set", "left": 8, "right": 8}] * 4
    results: list[requests.Response] = []

    def post_many():
        with requests.Session() as session:
            session.trust_env = False
            for _ in range(40):
                results.append(session.post(server.base_url + "/v1/spins/levels/events", data=json.dumps(batch),
                                            headers={"Content-Type": "application/json"}, timeout=5))

    threads = [threading.Thread(target=post_many) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=50)
    assert len(results) == 320
    accepted = [r for r in results if r.status_code == 202]
    refused = [r for r in results if r.status_code != 202]
    for response in refused:
        assert_error(response, 429, "inbox_full")
        assert int(response.headers["Retry-After"]) >= 1
    assert server.settled_sequences()["levels"] == start + 4 * len(accepted)
    print(f"inbox 4, 8 clients: {len(accepted)} accepted, {len(refused)} refused with 429")


def test_silent_connections_at_the_limit_free_their_slots_after_the_header_timeout(start_server):
    """maxConnections silent sockets hold every slot; a newcomer waits in the backlog
    (not reset) and is served as soon as the header timeout, which runs from accept,
    closes them. The pause is counted in /metrics and logged."""
    server = start_server(name="maxconn", config_patch={
        "limits": {"maxConnections": 3, "headerTimeoutSeconds": 2, "idleTimeoutSeconds": 120}})
    server.http.close()
    held = [socket.create_connection((LOOPBACK, server.port), timeout=10) for _ in range(3)]
    try:
        time.sleep(0.3)  # let the server accept them: it is now at its limit
        opened = time.monotonic()
        with socket.create_connection((LOOPBACK, server.port), timeout=10) as newcomer:
            newcomer.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            data = b""
            while not data.endswith(b"}") and len(data) < 65536:
                chunk = newcomer.recv(4096)
                if not chunk:
                    break
                data += chunk
        waited = time.monotonic() - opened
        print(f"maxConnections 3 held by silent sockets: a newcomer waited {waited:.2f} s in the backlog, then got 200")
        assert data.startswith(b"HTTP/1.1 200"), data[:300]
        # Served once the silent ones timed out (2 s from their accept), long before
        # the 120 s idle timeout.
        assert 1.0 < waited < 8.0, waited
        for sock in held:  # closed without a word: they asked nothing
            sock.settimeout(5)
            assert sock.recv(4096) == b""
    finally:
        for sock in held:
            sock.close()
    assert metric_value(server.metrics(), "spin_connections_limited_total") >= 1
    assert "connection limit reached: 3 open" in server.log()


def process_state(pid: int) -> str:
    """The state letter of /proc/<pid>/stat ("T": stopped)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def test_a_request_sent_while_the_server_was_stopped_is_served_once_it_goes_on(start_server):
    """A server stopped past its header timeout (SIGSTOP: `docker pause`, a frozen VM, a
    debugger) reads what its clients sent meanwhile before it judges them slow: the
    request that waited in the kernel is answered, not closed as a slow client's."""
    server = start_server(name="paused", config_patch={"limits": {"headerTimeoutSeconds": 1}})
    with socket.create_connection((LOOPBACK, server.port), timeout=10) as client:
        time.sleep(0.3)  # accepted: its header deadline (1 s) runs
        os.kill(server.process.pid, signal.SIGSTOP)
        try:
            stopped_by = time.monotonic() + 5
            while process_state(server.process.pid) != "T" and time.monotonic() < stopped_by:
                time.sleep(0.01)
            assert process_state(server.process.pid) == "T"
            client.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            time.sleep(2.0)  # the deadline passes while the server is stopped
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
        data = b""
        while len(data) < 65536:
            chunk = client.recv(4096)
            if not chunk:
                break
            data += chunk
    assert data.startswith(b"HTTP/1.1 200"), data[:300]
    # A client that really is slow is still closed at the deadline.
    with socket.create_connection((LOOPBACK, server.port), timeout=10) as slow:
        slow.sendall(b"GET /healthz HTTP/1.1\r\n")
        opened = time.monotonic()
        slow.settimeout(5)
        answer = slow.recv(4096)
        assert time.monotonic() - opened < 4
        assert answer == b"" or answer.startswith(b"HTTP/1.1 408"), answer[:300]


def test_idle_stream_is_pinged(start_server):
    server = start_server(name="ping", config_patch={"limits": {"pingIntervalSeconds": 1}})
    with RawWebSocket(server.port, "/v1/spins/levels/stream") as ws:
        assert ws.recv_json()["type"] == "snapshot"
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            fin, opcode, payload = ws.recv_frame(timeout=6)
            if opcode == 0x9:
                ws.send_frame(0xA, payload)
                break
        else:
            raise AssertionError("no ping within 6 s with pingIntervalSeconds 1")
        # Answered pings keep the stream open and working.
        ws.send_json({"type": "event", "id": "p", "event": {"type": "set", "left": 9, "right": 9}})
        for _ in range(10):
            kind, payload = ws.recv_message()
            if kind == "text" and json.loads(payload)["type"] == "ack":
                break
        else:
            raise AssertionError("no ack after the ping")


def test_json_log_format_writes_one_object_per_line(start_server):
    server = start_server(name="jsonlog", args=["--log-format", "json"])
    assert server.get("/healthz").status_code == 200
    server.terminate()
    lines = [line for line in server.log().splitlines() if line.strip()]
    assert lines
    for line in lines:
        record = json.loads(line)
        assert {"time", "level", "message"} <= set(record), record
    assert any("listening on http://" in json.loads(line)["message"] for line in lines)
