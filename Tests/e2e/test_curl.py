"""The API through curl, a client nobody on the project wrote: plain requests, a POST,
the SSE stream, HTTP/1.0 and keep-alive."""
from __future__ import annotations

import itertools
import json
import queue
import subprocess
import threading
import time

from spin_e2e import parse_metrics, parse_response_head, raw_exchange

CURL = ["curl", "--silent", "--show-error", "--noproxy", "*", "--max-time", "10"]
_unique = itertools.count(50_000)


def curl(*args: str, timeout: float = 15) -> subprocess.CompletedProcess:
    return subprocess.run([*CURL, *args], capture_output=True, text=True, timeout=timeout)


def curl_json(url: str, *args: str) -> tuple[int, dict]:
    result = curl("--write-out", "\n%{http_code}", *args, url)
    assert result.returncode == 0, result.stderr
    body, _, status = result.stdout.rpartition("\n")
    return int(status), json.loads(body)


def test_curl_healthz(server):
    assert curl_json(server.base_url + "/healthz") == (200, {"status": "ok"})


def test_curl_readyz(server):
    assert curl_json(server.base_url + "/readyz") == (200, {"status": "ready"})


def test_curl_lists_spins(server):
    status, body = curl_json(server.base_url + "/v1/spins")
    assert status == 200
    assert {"counter", "levels", "feature", "router"} <= {spin["name"] for spin in body["spins"]}


def test_curl_posts_an_event(server):
    before = server.settled_sequences()["levels"]
    value = next(_unique)
    status, body = curl_json(server.base_url + "/v1/spins/levels/events", "-H", "Content-Type: application/json",
                             "-d", json.dumps({"type": "set", "left": value, "right": value}))
    assert status == 202
    assert body == {"accepted": 1, "sequence": before + 1}
    assert server.spin("levels")["state"] == {"left": value, "right": value}


def test_curl_sees_a_404_error_body(server):
    status, body = curl_json(server.base_url + "/v1/spins/nope")
    assert status == 404
    assert body["error"]["code"] == "spin_not_found"


class LineReader:
    """Reads a subprocess's stdout lines on a thread, so the test can wait with a bound."""

    def __init__(self, process: subprocess.Popen):
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.thread = threading.Thread(target=self._pump, args=(process,), daemon=True)
        self.thread.start()

    def _pump(self, process):
        for line in process.stdout:
            self.lines.put(line.rstrip("\r\n"))
        self.lines.put(None)

    def data_until(self, predicate, timeout: float = 10.0, max_lines: int = 100000) -> list[dict]:
        """JSON of `data:` lines until one matches `predicate` (returned last)."""
        deadline = time.monotonic() + timeout
        seen = []
        for _ in range(max_lines):
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no matching SSE data within {timeout} s; got {seen[-5:]}"
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            assert line is not None, f"the SSE stream ended; got {seen[-5:]}"
            if line.startswith("data:"):
                message = json.loads(line[5:].strip())
                seen.append(message)
                if predicate(message):
                    return seen
        raise AssertionError("too many SSE lines")


def test_curl_sse_stream_sends_a_snapshot_then_states(server):
    start = server.settled_sequences()["levels"]
    process = subprocess.Popen([*CURL[:-2], "--max-time", "20", "-N", "-H", "Accept: text/event-stream",
                                server.base_url + "/v1/spins/levels/stream"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        reader = LineReader(process)
        first = reader.data_until(lambda message: True)
        assert first[0]["type"] == "snapshot", first
        assert first[0]["sequence"] == start
        assert set(first[0]["state"]) == {"left", "right"}
        values = [next(_unique) for _ in range(3)]
        for value in values:
            assert server.post_events("levels", {"type": "set", "left": value, "right": value}).status_code == 202
        seen = reader.data_until(lambda m: m.get("state") == {"left": values[-1], "right": values[-1]})
        states = [m for m in seen if m["type"] == "state"]
        assert [m["sequence"] for m in states] == [start + 1, start + 2, start + 3]
        assert [m["event"] for m in states] == [{"type": "set", "left": v, "right": v} for v in values]
    finally:
        process.kill()
        process.wait(timeout=10)


def test_curl_sse_response_is_an_event_stream(server):
    result = curl("--max-time", "2", "-N", "-D", "-", "-o", "/dev/null", "-H", "Accept: text/event-stream",
                  server.base_url + "/v1/spins/counter/stream")
    # curl gives up after 2 s on the endless stream (exit 28): the headers are what matters.
    assert result.returncode in (0, 28), result.stderr
    status_line, status, headers, _ = parse_response_head(result.stdout.replace("\n", "\r\n").replace("\r\r", "\r").encode())
    assert status == 200, status_line
    assert headers.get("content-type", "").startswith("text/event-stream"), headers


def test_curl_http_1_0(server):
    result = curl("-0", "--write-out", "\n%{http_code} %{http_version}", server.base_url + "/healthz")
    assert result.returncode == 0, result.stderr
    body, _, tail = result.stdout.rpartition("\n")
    assert json.loads(body) == {"status": "ok"}
    assert tail.split()[0] == "200"


def test_http_1_0_request_is_answered_and_the_connection_closed(server):
    data, closed = raw_exchange(server.port, b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    status_line, status, headers, body = parse_response_head(data)
    assert status == 200, status_line
    assert status_line.startswith("HTTP/1."), status_line
    assert json.loads(body) == {"status": "ok"}
    assert closed, "an HTTP/1.0 request without keep-alive must end with the server closing the connection"


def test_curl_reuses_the_connection_for_two_urls(server):
    result = curl("-v", server.base_url + "/healthz", server.base_url + "/v1/spins/levels")
    assert result.returncode == 0, result.stderr
    assert "Re-using existing connection" in result.stderr, result.stderr
    assert result.stderr.count("Connected to") == 1, result.stderr
    first, second = result.stdout.split("}{", 1) if "}{" in result.stdout else (result.stdout, "")
    assert json.loads(first + "}") == {"status": "ok"}
    assert json.loads("{" + second)["name"] == "levels"


def open_streams(server) -> float:
    return sum(value for name, _, value in parse_metrics(server.metrics()) if name == "spin_open_streams")


def test_curl_sse_gear_stream_shows_gear_traffic(server):
    before = open_streams(server)
    process = subprocess.Popen([*CURL[:-2], "--max-time", "20", "-N", "-H", "Accept: text/event-stream",
                                server.base_url + "/v1/gears/auth/stream"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        reader = LineReader(process)
        # Gear streams have no snapshot: wait until the server counts the stream open.
        deadline = time.monotonic() + 5
        while open_streams(server) <= before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert open_streams(server) > before, "the SSE Gear stream did not open"
        # An unauthorized answer makes the feature propagate on Gear auth.
        assert server.post_events("feature", {"type": "unauthorizedResponse"}).status_code == 202
        seen = reader.data_until(lambda m: m.get("type") == "gear")
        assert isinstance(seen[-1].pop("position"), int)
        assert seen[-1] == {"type": "gear", "gear": "auth", "from": "feature",
                            "event": {"type": "authorizationIssueHappened"}}
    finally:
        process.kill()
        process.wait(timeout=10)
    # The router re-checked and, the session being valid, went home again.
    deadline = time.monotonic() + 5
    while server.spin("router")["state"]["route"] != "home" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.spin("router")["state"]["route"] == "home"
