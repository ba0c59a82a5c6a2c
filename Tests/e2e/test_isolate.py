"""`storage.onCorruption: "isolate"`: one Spin whose stored history cannot be replayed
does not take the server down. The others start and serve; that one is reported
`unrecoverable` (where and why) by the API, `/metrics` and the log, refuses its events
and streams with 503 `spin_unrecoverable`, and nothing of its storage is touched.
Without the option the same data stops start-up (exit 1), changing nothing on disk.
"""
from __future__ import annotations

import asyncio
import binascii
import struct
import subprocess
import time
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from spin_e2e import REPO, SpinServer, assert_error, metric_value

ISOLATE = {"storage": {"onCorruption": "isolate"}}


def record(sequence: int, payload: bytes) -> bytes:
    """One journal record as the server frames it: length | CRC-32 | sequence | payload."""
    body = struct.pack("<Q", sequence) + payload
    return struct.pack("<II", len(body), binascii.crc32(body)) + body


def stored_counter(start_server, storage: Path, events: int = 5) -> int:
    """A storage directory whose counter has a journal: returns its sequence."""
    first = start_server(storage=storage, name="first")
    for _ in range(events):
        assert first.post_events("counter", {"type": "reset"}).status_code == 202
    # The counter's feedback counts up to 10 after each reset: read the sequence once it
    # has settled, so that the journal ends there.
    deadline = time.monotonic() + 20
    while first.spin("counter")["state"]["value"] != 10:
        assert time.monotonic() < deadline, "the counter never settled at 10"
        time.sleep(0.02)
    sequence = first.sequence("counter")
    assert first.terminate() == 0
    return sequence


def refused_start(server_bin: Path, workdir: Path, storage: Path) -> subprocess.CompletedProcess:
    config = REPO / "Config" / "spin-server.json"
    return subprocess.run([str(server_bin), "--config", str(config), "--port", "0", "--storage", str(storage)],
                          cwd=workdir, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


def files(storage: Path, spin: str) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(storage.glob(f"{spin}.*"))}


def check_isolated(server: SpinServer, journal: Path, *, sequence: int, error: str) -> dict:
    """Counter is unrecoverable, said everywhere; the other Spins serve."""
    spin = server.spin("counter")
    assert spin["status"] == "unrecoverable", spin
    assert spin["state"] is None, spin
    problem = spin["unrecoverable"]
    assert problem["journal"] == str(journal), problem
    assert problem["sequence"] == sequence, problem
    assert error in problem["error"], problem

    listed = {entry["name"]: entry for entry in server.get("/v1/spins").json()["spins"]}
    assert listed["counter"]["status"] == "unrecoverable"

    refused = assert_error(server.post_events("counter", {"type": "increase"}), 503, "spin_unrecoverable")
    message = refused["error"]["message"]
    assert "counter" in message and str(journal) in message, refused
    assert_error(server.post("/v1/spins/counter/resume"), 503, "spin_unrecoverable")
    assert_error(server.get("/v1/spins/counter/stream", headers={"Accept": "text/event-stream"}),
                 503, "spin_unrecoverable")

    async def websocket_refused() -> int:
        with pytest.raises(InvalidStatus) as refusal:
            async with connect(f"ws://127.0.0.1:{server.port}/v1/spins/counter/stream"):
                pass
        return refusal.value.response.status_code
    assert asyncio.run(websocket_refused()) == 503

    metrics = server.get("/metrics").text
    assert metric_value(metrics, "spin_unrecoverable", spin="counter") == 1
    assert metric_value(metrics, "spin_unrecoverable", spin="levels") == 0
    assert "UNRECOVERABLE" in server.log() and str(journal) in server.log()

    # Every other Spin serves, Gears included.
    assert server.get("/readyz").status_code == 200
    before = server.sequence("levels")
    assert server.post_events("levels", {"type": "set", "left": 3, "right": 5}).status_code == 202
    assert server.sequence("levels") > before
    assert server.post_events("feature", {"type": "load"}).status_code == 202
    return spin


# An intact record (its checksum holds) the counter cannot replay, appended after the
# last one (at `sequence`): (its sequence offset, its event, the record at fault's
# offset, what the refusal and the report say, with {0} the stored sequence).
UNREPLAYABLE = {
    # What a renamed event type leaves behind.
    "unknown-event": (1, b'{"type":"increment"}', 1, "event {1} does not decode", 'unknown type "increment"'),
    # A journal that skips two sequences: the first one missing is at fault, and the
    # Spin's history ends where the journal was whole.
    "gap": (3, b'{"type":"increase"}', 1, "the journal jumps from {0} to {3}", "jumps from {0} to {3}"),
}


@pytest.mark.parametrize("case", list(UNREPLAYABLE))
def test_a_record_that_cannot_be_replayed_stops_start_up_or_isolates_its_spin(start_server, server_bin, tmp_path, case):
    appended, payload, fault, refusal, report = UNREPLAYABLE[case]
    storage = tmp_path / "storage"
    sequence = stored_counter(start_server, storage)
    journal = storage / "counter.journal"
    with journal.open("ab") as file:
        file.write(record(sequence + appended, payload))
    before = files(storage, "counter")
    numbers = [sequence + offset for offset in range(4)]

    refused = refused_start(server_bin, tmp_path, storage)
    assert refused.returncode == 1, refused
    assert refusal.format(*numbers) in refused.stderr, refused.stderr
    assert files(storage, "counter") == before, "a refused start changes nothing on disk"

    isolated = start_server(storage=storage, name="isolated", config_patch=ISOLATE)
    spin = check_isolated(isolated, journal, sequence=sequence + fault, error=report.format(*numbers))
    assert spin["sequence"] == sequence
    assert isolated.terminate() == 0
    assert files(storage, "counter") == before, "an isolated Spin's storage is left as it was"


def test_a_corrupt_journal_isolates_its_spin_and_repair_still_cuts_it(start_server, server_bin, tmp_path):
    storage = tmp_path / "storage"
    sequence = stored_counter(start_server, storage, events=8)
    journal = storage / "counter.journal"
    data = bytearray(journal.read_bytes())
    # Flip a bit in the third record from the end: intact records follow, so it is
    # corruption, not a torn tail.
    offsets, offset = [], 0
    while offset + 16 <= len(data):
        offsets.append(offset)
        offset += 8 + (struct.unpack_from("<I", data, offset)[0] & 0x7FFF_FFFF)
    bad = offsets[-3]
    data[bad + 18] ^= 0x01
    journal.write_bytes(bytes(data))
    before = files(storage, "counter")

    isolated = start_server(storage=storage, name="isolated", config_patch=ISOLATE)
    spin = check_isolated(isolated, journal, sequence=sequence - 2, error="checksum")
    assert spin["unrecoverable"]["offset"] == bad
    assert isolated.terminate() == 0
    assert files(storage, "counter") == before

    repaired = start_server(storage=storage, name="repaired", args=["--repair"])
    assert repaired.spin("counter")["status"] == "running"
    # Cut after sequence - 3 (the counter's feedback may count on from there).
    assert repaired.sequence("counter") >= sequence - 3
    assert "REPAIRED" in repaired.log()
