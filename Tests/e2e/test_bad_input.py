"""Bad bytes on the wire: the offender gets a clear error and is dropped; no Spin's state
changes and a well-behaved client on another connection keeps working."""
from __future__ import annotations

import itertools
import json
import re
import select
import socket
import struct
import time

import pytest

from spin_e2e import LOOPBACK, RawWebSocket, assert_error, deflate_message, mask_bytes, parse_response_head, raw_exchange

_unique = itertools.count(400_000)


@pytest.fixture
def bystander(server):
    """A well-behaved stream client opened before the bad input, and the sequences then."""
    baseline = server.settled_sequences()
    ws = RawWebSocket(server.port, "/v1/spins/levels/stream")
    assert ws.status == 101
    snapshot = ws.recv_json()
    assert snapshot["type"] == "snapshot" and snapshot["sequence"] == baseline["levels"]
    yield baseline
    # Nothing changed because of the bad input ...
    assert server.settled_sequences() == baseline, "bad input changed a Spin"
    # ... and the bystander still gets what it asks for.
    value = next(_unique)
    event = {"type": "set", "left": value, "right": value}
    ws.send_json({"type": "event", "id": "bystander", "event": event})
    messages = [ws.recv_json(), ws.recv_json()]
    assert {m["type"] for m in messages} == {"ack", "state"}, messages
    assert all(m["sequence"] == baseline["levels"] + 1 for m in messages), messages
    assert server.get("/healthz").status_code == 200
    ws.close()


# -- HTTP ------------------------------------------------------------------------------------

@pytest.mark.parametrize("request_bytes", [
    b"GARBAGE\r\n\r\n",
    b"GET\r\n\r\n",
    b"GET /healthz FTP/1.1\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(40) + b"\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n",
    b"GET /he lthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
], ids=["word", "method-only", "bad-version", "tls-hello", "header-without-colon", "space-in-target"])
def test_garbage_request_gets_400_and_the_connection_closes(server, bystander, request_bytes):
    data, closed = raw_exchange(server.port, request_bytes)
    status_line, status, headers, _ = parse_response_head(data)
    assert status == 400, status_line
    assert closed, "the server kept a connection that sent garbage"


def test_content_length_with_transfer_encoding_gets_400(server, bystander):
    # Either framing alone would carry a valid event: neither may be applied.
    event = json.dumps({"type": "set", "left": 7, "right": 7}).encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(event), event)
    request = (b"POST /v1/spins/levels/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n%s" % (len(chunked), chunked))
    data, closed = raw_exchange(server.port, request)
    status_line, status, _, body = parse_response_head(data)
    assert status == 400, status_line
    assert json.loads(body)["error"]["code"] == "content_length_with_transfer_encoding", body
    assert data.count(b"HTTP/1.1 ") == 1, f"more than one response: {data!r}"
    assert closed


def test_chunked_body_is_accepted(server):
    start = server.settled_sequences()["levels"]
    value = next(_unique)
    event = json.dumps({"type": "set", "left": value, "right": value}).encode()
    body = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (event[:10], event[10:])) + b"0\r\n\r\n"
    request = (b"POST /v1/spins/levels/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + body)
    data, _ = raw_exchange(server.port, request)
    status_line, status, _, rest = parse_response_head(data)
    assert status == 202, (status_line, rest)
    assert json.loads(rest) == {"accepted": 1, "sequence": start + 1}


def test_pipelined_requests_are_answered_in_order(server):
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" \
              b"GET /v1/spins/nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" \
              b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    data, closed = raw_exchange(server.port, request)
    statuses = [int(code) for code in re.findall(rb"HTTP/1\.1 (\d{3}) ", data)]
    assert statuses == [200, 404, 200], data[:600]
    assert closed, "Connection: close was not honoured"


def test_oversized_header_is_refused(server, bystander):
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * (64 << 10) + b"\r\n\r\n"
    try:
        data, closed = raw_exchange(server.port, request)
    except (BrokenPipeError, ConnectionResetError) as error:
        pytest.fail(f"the server dropped the connection without an answer: {error!r}")
    status_line, status, _, body = parse_response_head(data)
    assert status == 431, status_line  # docs/PROTOCOL.md: 431 header_section_too_large
    assert json.loads(body)["error"]["code"] == "header_section_too_large", body
    assert closed


def test_slow_request_head_is_cut_off(server, bystander):
    """No slowloris: a client that never finishes its request head is disconnected
    (the default header timeout is 10 s)."""
    with socket.create_connection((LOOPBACK, server.port), timeout=5) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        deadline = time.monotonic() + 25
        closed = False
        while time.monotonic() < deadline:
            ready, _, _ = select.select([sock], [], [], 1.0)
            if ready:
                try:
                    chunk = sock.recv(4096)
                except ConnectionResetError:
                    closed = True
                    break
                if not chunk:
                    closed = True
                    break
                continue
            try:
                sock.sendall(b"X-Drip: 1\r\n")  # keep dripping headers
            except OSError:
                closed = True
                break
        assert closed, "the server kept a connection whose request head never ended for 25 s"


# -- WebSocket ---------------------------------------------------------------------------------

def open_stream(server) -> RawWebSocket:
    ws = RawWebSocket(server.port, "/v1/spins/counter/stream")
    assert ws.status == 101, ws.status
    assert ws.recv_json()["type"] == "snapshot"
    return ws


def test_unmasked_client_frame_is_closed_with_1002(server, bystander):
    with open_stream(server) as ws:
        ws.send_frame(0x1, json.dumps({"type": "event", "id": "u", "event": {"type": "increase"}}).encode(), mask=False)
        ws.expect_close(1002)


@pytest.mark.parametrize("frame", [
    RawWebSocket.frame(0x3, b"reserved opcode"),
    bytes([0x80 | 0x40 | 0x1, 0x80 | 2]) + b"\x00\x00\x00\x00" + b"hi",  # RSV1 without an extension
    RawWebSocket.frame(0x9, b"p" * 126),  # control frame over 125 bytes
    RawWebSocket.frame(0x9, b"ping", fin=False),  # fragmented control frame
    RawWebSocket.frame(0x0, b"continuation without a start"),
    RawWebSocket.frame(0x8, b"\x03\xe8"[:1]),  # close with a 1-byte payload
], ids=["reserved-opcode", "rsv1", "long-control", "fragmented-control", "lone-continuation", "close-1-byte"])
def test_protocol_violation_is_closed_with_1002(server, bystander, frame):
    with open_stream(server) as ws:
        ws.sock.sendall(frame)
        ws.expect_close(1002)


def test_invalid_utf8_text_is_closed_with_1007(server, bystander):
    with open_stream(server) as ws:
        ws.send_frame(0x1, b'{"type":"event","id":"\xff\xfe","event":{"type":"increase"}}')
        ws.expect_close(1007)


def test_invalid_utf8_split_across_fragments_is_closed_with_1007(server, bystander):
    with open_stream(server) as ws:
        ws.send_frame(0x1, b'{"type":"event","id":"\xe2\x82', fin=False)
        ws.send_frame(0x0, b'(","event":{"type":"increase"}}')
        ws.expect_close(1007)


def send_until_answered(ws: RawWebSocket, chunks) -> None:
    """Sends chunks until the server answers (it may close before the end)."""
    for chunk in chunks:
        if ws.readable():
            return
        try:
            ws.sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            return


def test_too_large_message_is_closed_with_1009(server, bystander):
    with open_stream(server) as ws:
        size = 2 << 20
        header = RawWebSocket.frame(0x1, b"", declared_length=size, mask=True)  # header + mask key
        key = header[-4:]
        payload = (b'{"type":"event","id":"big","event":{"type":"increase"},"pad":"' + b"a" * size)[:size]
        masked = mask_bytes(payload, key)
        send_until_answered(ws, [header] + [masked[i:i + 65536] for i in range(0, size, 65536)])
        ws.expect_close(1009)


def test_too_large_fragmented_message_is_closed_with_1009(server, bystander):
    with open_stream(server) as ws:
        fragment = b"a" * 65536
        frames = [RawWebSocket.frame(0x1, b'{"pad":"' + fragment, fin=False)]
        frames += [RawWebSocket.frame(0x0, fragment, fin=False) for _ in range(40)]  # 2.5 MiB in all
        send_until_answered(ws, frames)
        ws.expect_close(1009)


def test_fragmented_client_event_is_reassembled(server):
    start = server.settled_sequences()["levels"]
    value = next(_unique)
    text = json.dumps({"type": "event", "id": "frag", "event": {"type": "set", "left": value, "right": value}}).encode()
    ws = RawWebSocket(server.port, "/v1/spins/levels/stream")
    with ws:
        assert ws.recv_json()["sequence"] == start
        ws.send_frame(0x1, text[:7], fin=False)
        ws.send_frame(0x9, b"interleaved ping")  # control frames may come between fragments
        ws.send_frame(0x0, text[7:20], fin=False)
        ws.send_frame(0x0, text[20:])
        messages = []
        for _ in range(5):
            kind, payload = ws.recv_message()
            if kind == "text":
                messages.append(json.loads(payload))
            if any(m["type"] == "ack" for m in messages):
                break
        ack = next(m for m in messages if m["type"] == "ack")
        assert ack == {"type": "ack", "id": "frag", "sequence": start + 1}


def test_client_close_is_echoed(server):
    with open_stream(server) as ws:
        ws.send_frame(0x8, struct.pack("!H", 1000) + b"bye")
        ws.expect_close(1000)


def test_upgrade_without_websocket_key_is_refused(server, bystander):
    request = (b"GET /v1/spins/levels/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
               b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n")
    data, _ = raw_exchange(server.port, request, timeout=3)
    _, status, _, _ = parse_response_head(data)
    assert status == 400


def test_upgrade_with_unsupported_version_is_refused_naming_version_13(server):
    """RFC 6455 §4.4: an error such as 426 and the versions the server understands."""
    request = (b"GET /v1/spins/levels/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
               b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n")
    data, _ = raw_exchange(server.port, request, timeout=3)
    _, status, headers, _ = parse_response_head(data)
    assert status in (400, 426), data[:300]
    assert headers.get("sec-websocket-version") == "13"


def test_stream_route_without_upgrade_answers_events_to_any_accept_and_406_to_another(server):
    """RFC 9110 content negotiation: requests' `Accept: */*` takes an event stream."""
    with server.get("/v1/spins/levels/stream", stream=True) as response:
        assert response.status_code == 200, response.text
        assert response.headers["Content-Type"].startswith("text/event-stream")
        first = next(line for line in response.iter_lines() if line.startswith(b"data: "))
        assert json.loads(first[len(b"data: "):])["type"] == "snapshot"
    assert_error(server.get("/v1/spins/levels/stream", headers={"Accept": "application/json"}), 406, "not_acceptable")


def open_deflate_stream(server) -> RawWebSocket:
    ws = RawWebSocket(server.port, "/v1/spins/levels/stream",
                      headers={"Sec-WebSocket-Extensions": "permessage-deflate; client_max_window_bits"})
    assert ws.status == 101 and ws.deflate, ws.headers
    assert ws.recv_json()["type"] == "snapshot"
    return ws


def compressed_text_frame(data: bytes) -> bytes:
    frame = bytearray(RawWebSocket.frame(0x1, deflate_message(data)))
    frame[0] |= 0x40  # RSV1: this message is compressed
    return bytes(frame)


def test_compressed_client_event_is_understood(server):
    start = server.settled_sequences()["levels"]
    value = next(_unique)
    with open_deflate_stream(server) as ws:
        ws.sock.sendall(compressed_text_frame(json.dumps(
            {"type": "event", "id": "zip", "event": {"type": "set", "left": value, "right": value}}).encode()))
        messages = [ws.recv_json(), ws.recv_json()]
        assert {"type": "ack", "id": "zip", "sequence": start + 1} in messages, messages


def test_compression_bomb_is_closed_with_1009(server, bystander):
    """4 MiB of spaces inside a JSON string compress to a few KiB: the limit applies to
    the decompressed size (docs/OPERATIONS.md, limits.maxWebSocketMessageBytes)."""
    bomb = b'{"type":"event","id":"bomb","event":{"type":"increaseLeft"},"pad":"' + b" " * (4 << 20) + b'"}'
    frame = compressed_text_frame(bomb)
    assert len(frame) < 64 << 10
    with open_deflate_stream(server) as ws:
        ws.sock.sendall(frame)
        ws.expect_close(1009)
