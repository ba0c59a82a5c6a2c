"""A client that never reads its stream must not block the Spin, slow other clients or
grow the server's memory: its queued state messages are conflated into a snapshot and
the sequence gap tells it so (docs/PROTOCOL.md, State stream)."""
from __future__ import annotations

import threading
import time

from spin_e2e import RawWebSocket

BATCHES = 50
BATCH_SIZE = 1000
# The longest numbers a level may be (±1000000000): each state message is ~150 bytes,
# megabytes in total.
BIG = -999_999_999
RSS_GROWTH_LIMIT_KIB = 200 * 1024


class StreamReader(threading.Thread):
    """A well-behaved stream client that reads everything on its own thread."""

    def __init__(self, port: int, path: str):
        super().__init__(daemon=True)
        self.ws = RawWebSocket(port, path)
        self.messages: list[dict] = []
        self.target: int | None = None
        self.error: BaseException | None = None
        self.deadline = time.monotonic() + 50

    def last_sequence(self) -> int:
        return self.messages[-1]["sequence"] if self.messages else -1

    def run(self):
        try:
            while time.monotonic() < self.deadline:
                if self.target is not None and self.last_sequence() >= self.target:
                    return
                try:
                    message = self.ws.recv_json(timeout=1.0)
                except TimeoutError:
                    continue
                self.messages.append(message)
        except BaseException as error:  # reported by the test
            self.error = error


def test_stuck_stream_client_is_conflated_and_hurts_no_one(start_server):
    server = start_server(name="slow-consumer")
    start = server.settled_sequences()["levels"]
    rss_before = server.rss_kib()

    stuck = RawWebSocket(server.port, "/v1/spins/levels/stream", receive_buffer=4096)
    assert stuck.status == 101, stuck.status
    reader = StreamReader(server.port, "/v1/spins/levels/stream")
    assert reader.ws.status == 101
    reader.start()

    slowest_read = 0.0
    value = BIG
    last_state = None
    for batch_index in range(BATCHES):
        batch = []
        for _ in range(BATCH_SIZE):
            value += 1
            batch.append({"type": "set", "left": value, "right": value})
        response = server.post_events("levels", batch, headers=None)
        assert response.status_code == 202, f"batch {batch_index}: {response.status_code} {response.text[:300]}"
        assert response.json()["sequence"] == start + (batch_index + 1) * BATCH_SIZE
        last_state = {"left": value, "right": value}
        # Another client is answered while the stuck one holds its stream: every call
        # has a timeout, so a blocked server fails here.
        began = time.monotonic()
        assert server.get("/healthz", timeout=5).status_code == 200
        assert server.sequence("levels") == start + (batch_index + 1) * BATCH_SIZE
        slowest_read = max(slowest_read, time.monotonic() - began)

    final = start + BATCHES * BATCH_SIZE
    assert server.spin("levels") == {"name": "levels", "sequence": final, "status": "running", "state": last_state}

    # The well-behaved stream saw every event, in order (or at worst conflated, never stuck).
    reader.target = final
    reader.join(timeout=40)
    assert reader.error is None, repr(reader.error)
    assert reader.last_sequence() == final, f"the reading client stopped at {reader.last_sequence()} of {final}"
    assert reader.messages[0]["type"] == "snapshot"
    reader.ws.close()

    rss_after = server.rss_kib()
    assert rss_after - rss_before < RSS_GROWTH_LIMIT_KIB, f"RSS grew from {rss_before} KiB to {rss_after} KiB"

    # Now the stuck client reads: everything it gets is in order, ends with the newest
    # state, and the middle was conflated (a gap and a later snapshot), not kept whole.
    received = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(received) < BATCHES * BATCH_SIZE + 10:
        received.append(stuck.recv_json(timeout=5))
        if received[-1].get("sequence") == final:
            break
    stuck.close()
    assert received[0]["type"] == "snapshot" and received[0]["sequence"] == start, received[0]
    assert received[-1]["sequence"] == final, f"the stuck client never got the newest state: {received[-1]}"
    assert received[-1]["state"] == last_state
    sequences = [m["sequence"] for m in received]
    assert sequences == sorted(sequences), "stream messages out of order"
    gaps = [(a, b) for a, b in zip(sequences, sequences[1:]) if b - a > 1]
    assert gaps, f"no sequence gap: the server kept all {len(received)} messages for a client that did not read"
    assert any(m["type"] == "snapshot" for m in received[1:]), "the gap was not announced by a snapshot"
    for before, after in zip(received, received[1:]):
        if after["sequence"] - before["sequence"] > 1:
            assert after["type"] == "snapshot", f"a gap before a {after['type']} message: {before} -> {after}"
    # 50 000 messages of ~170 bytes are far more than the kernel's socket buffers hold,
    # so receiving them all would mean the server queued them in memory.
    assert len(received) < BATCHES * BATCH_SIZE, f"{len(received)} messages for {BATCHES * BATCH_SIZE} events"
    print(f"slow consumer: {len(received)} messages for {BATCHES * BATCH_SIZE} events, {len(gaps)} gaps, "
          f"slowest read {slowest_read:.3f} s, RSS {rss_before} -> {rss_after} KiB")
