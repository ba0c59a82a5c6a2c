"""Durability as an operator meets it: corrupt journals, a second server on one
directory, SIGKILL under load, a full disk, and streams that resume with `since`.

Every acknowledged event must survive; nothing may be applied twice; nothing answered
with an error may have been applied; no stream may show a state a crash takes back.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import struct
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests
from websockets.asyncio.client import connect

from spin_e2e import SpinServer, assert_error, free_port, metric_value


def counter_at_ten(server: SpinServer) -> dict:
    """Waits until the counter's feedback has stopped at 10 (every later `increase`
    then adds exactly one), and returns the Spin."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        spin = server.spin("counter")
        if spin["state"]["value"] >= 10:
            return spin
        time.sleep(0.05)
    raise AssertionError(f"the counter did not reach 10: {server.spin('counter')}")


def run_to_exit(server_bin: Path, workdir: Path, storage: Path, *extra: str, timeout: float = 20) -> subprocess.CompletedProcess:
    """Runs spin-server expecting it to stop by itself (a refused start)."""
    config = Path(__file__).resolve().parents[2] / "Config" / "spin-server.json"
    return subprocess.run([str(server_bin), "--config", str(config), "--port", "0", "--storage", str(storage), *extra],
                          cwd=workdir, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def records(journal: Path) -> list[tuple[int, int, bool]]:
    """(offset, sequence, continues) of each record of a journal file."""
    data = journal.read_bytes()
    offset, found = 0, []
    while offset + 16 <= len(data):
        header, _crc, sequence = struct.unpack_from("<IIQ", data, offset)
        length = header & 0x7FFF_FFFF
        found.append((offset, sequence, bool(header >> 31)))
        offset += 8 + length
    return found


# -- corruption and the directory lock ---------------------------------------------------

def test_a_corrupt_journal_stops_start_up_naming_file_and_offset_and_repair_cuts_it(start_server, server_bin, tmp_path):
    storage = tmp_path / "storage"
    first = start_server(storage=storage, name="first")
    counter_at_ten(first)
    for _ in range(20):
        assert first.post_events("counter", {"type": "increase"}).status_code == 202
    sequence = first.sequence("counter")
    assert first.terminate() == 0

    journal = storage / "counter.journal"
    found = records(journal)
    bad_offset = found[-5][0]
    data = bytearray(journal.read_bytes())
    data[bad_offset + 20] ^= 0x01
    journal.write_bytes(bytes(data))

    refused = run_to_exit(server_bin, tmp_path, storage)
    assert refused.returncode == 1, refused
    assert str(journal) in refused.stderr, refused.stderr
    assert f"byte {bad_offset}" in refused.stderr, refused.stderr
    assert "--repair" in refused.stderr
    assert journal.read_bytes() == bytes(data), "a refused start must change nothing on disk"

    repaired = start_server(storage=storage, name="repaired", args=["--repair"])
    assert repaired.sequence("counter") == sequence - 5
    assert "REPAIRED" in repaired.log()


def test_a_second_server_on_the_same_storage_fails_with_a_clear_message(server, server_bin, tmp_path):
    second = run_to_exit(server_bin, tmp_path, server.storage)
    assert second.returncode == 1, second
    assert "one storage directory serves one server" in second.stderr, second.stderr
    assert f"pid {server.pid}" in second.stderr, second.stderr
    assert server.get("/healthz").status_code == 200


# -- crashes -----------------------------------------------------------------------------

def test_sigkill_under_concurrent_posts_loses_no_acknowledged_event_and_applies_none_twice(start_server, tmp_path):
    storage = tmp_path / "storage"
    for round_number in range(3):
        server = start_server(storage=storage, name=f"round{round_number}")
        base = counter_at_ten(server)
        acknowledged = []
        stop = threading.Event()

        def client():
            session = requests.Session()
            session.trust_env = False
            while not stop.is_set():
                try:
                    response = session.post(server.base_url + "/v1/spins/counter/events",
                                            data='{"type":"increase"}', timeout=2,
                                            headers={"Content-Type": "application/json"})
                except requests.RequestException:
                    return
                if response.status_code == 202:
                    acknowledged.append(response.json()["sequence"])

        threads = [threading.Thread(target=client) for _ in range(4)]
        for thread in threads:
            thread.start()
        time.sleep(0.8)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)
        server.exit_code = -9
        stop.set()
        for thread in threads:
            thread.join(timeout=10)
        assert acknowledged, "no POST was acknowledged before the kill"

        again = start_server(storage=storage, name=f"after{round_number}")
        spin = again.spin("counter")
        # Every acknowledged event is there...
        assert spin["sequence"] >= max(acknowledged), (spin, max(acknowledged))
        # ...and each applied event counted once: above 10, one increase is one step.
        applied = spin["sequence"] - base["sequence"]
        assert spin["state"]["value"] - base["state"]["value"] == applied, (base, spin)
        assert applied >= len(acknowledged)
        assert again.terminate() == 0


# -- a full disk -------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs: a disk that can really fill up. Skipped where mounting is refused.
    Ask for it before `start_server`, so that it is unmounted after the servers stop."""
    mountpoint = tmp_path / "disk"
    mountpoint.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mountpoint)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN): {result.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True)


def fill(disk: Path) -> Path:
    """Fills `disk` to the last byte with a file; returns it."""
    filler = disk / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for size in (65536, 4096, 1):
            try:
                while True:
                    os.write(descriptor, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(descriptor)
    return filler


def test_a_full_disk_answers_503_applies_nothing_and_recovers_by_itself(small_disk, start_server):
    storage = small_disk / "storage"
    server = start_server(storage=storage)
    base = counter_at_ten(server)
    filler = fill(small_disk)

    refused = None
    accepted = 0
    for _ in range(5000):
        response = server.post_events("counter", {"type": "increase"})
        if response.status_code != 202:
            refused = response
            break
        accepted += 1
    assert refused is not None, "the disk never filled"
    assert_error(refused, 503, "storage_unavailable")
    assert refused.headers.get("Retry-After") == "1"
    # Nothing answered 503 was applied: the state is what the acknowledged events made.
    spin = server.spin("counter")
    assert spin["sequence"] == base["sequence"] + accepted, (base, spin, accepted)
    assert spin["state"]["value"] == base["state"]["value"] + accepted
    assert server.get("/readyz").status_code == 503
    assert server.get("/healthz").status_code == 200
    metrics = server.metrics()
    assert metric_value(metrics, "spin_storage_failing", spin="counter") == 1
    assert metric_value(metrics, "spin_durable_sequence", spin="counter") == spin["sequence"]
    # Still refused while the disk is full, and still nothing applied.
    assert server.post_events("counter", {"type": "increase"}).status_code == 503
    assert server.sequence("counter") == spin["sequence"]

    filler.unlink()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and server.get("/readyz").status_code != 200:
        time.sleep(0.2)
    assert server.get("/readyz").status_code == 200
    response = server.post_events("counter", {"type": "increase"})
    assert response.status_code == 202, response.text
    assert response.json()["sequence"] == spin["sequence"] + 1
    assert "works again" in server.log()
    assert metric_value(server.metrics(), "spin_storage_failing", spin="counter") == 0


def test_a_failing_disk_at_shutdown_exits_non_zero(small_disk, start_server):
    storage = small_disk / "storage"
    server = start_server(storage=storage)
    counter_at_ten(server)
    fill(small_disk)
    for _ in range(5000):
        if server.post_events("counter", {"type": "increase"}).status_code == 503:
            break
    assert server.terminate() == 1
    assert "could not make every applied event durable" in server.log()
    server.exit_code = 0  # checked here; the fixture's exit-0 check does not apply


def test_starting_on_a_full_disk_is_not_ready_until_space_is_freed(small_disk, start_server):
    storage = small_disk / "storage"
    first = start_server(storage=storage, name="first")
    counter_at_ten(first)
    assert first.terminate() == 0
    filler = fill(small_disk)
    server = start_server(storage=storage, name="second")
    assert server.get("/readyz").status_code == 503
    assert_error(server.post_events("counter", {"type": "reset"}), 503, "storage_unavailable")
    filler.unlink()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and server.get("/readyz").status_code != 200:
        time.sleep(0.2)
    assert server.get("/readyz").status_code == 200
    assert server.post_events("counter", {"type": "reset"}).status_code == 202


# -- streams that never lie --------------------------------------------------------------

async def collect(url: str, count: int, timeout: float = 10.0) -> list[dict]:
    messages = []
    async with connect(url, open_timeout=5, proxy=None) as ws:
        while len(messages) < count:
            messages.append(json.loads(await asyncio.wait_for(ws.recv(), timeout)))
    return messages


def test_a_stream_resumes_after_since_with_no_gap_and_no_snapshot(server):
    counter_at_ten(server)
    for _ in range(5):
        assert server.post_events("counter", {"type": "increase"}).status_code == 202
    current = server.sequence("counter")
    since = current - 3
    messages = asyncio.run(collect(f"{server.ws_base}/v1/spins/counter/stream?since={since}", 3))
    assert [m["type"] for m in messages] == ["state"] * 3
    assert [m["sequence"] for m in messages] == [since + 1, since + 2, since + 3]
    assert len({m["epoch"] for m in messages}) == 1
    # A fresh stream starts with a snapshot that carries the same epoch.
    snapshot = asyncio.run(collect(f"{server.ws_base}/v1/spins/counter/stream", 1))[0]
    assert snapshot["type"] == "snapshot" and snapshot["epoch"] == messages[0]["epoch"]
    # Another epoch, or a sequence outside the history: a snapshot.
    other = asyncio.run(collect(f"{server.ws_base}/v1/spins/counter/stream?since={since}&epoch=other", 1))[0]
    assert other["type"] == "snapshot" and other["sequence"] == current
    assert_error(server.get("/v1/spins/counter/stream?since=x", headers={"Accept": "text/event-stream"}),
                 400, "bad_request")


def test_sse_resumes_with_last_event_id_and_sends_ids(server):
    counter_at_ten(server)
    for _ in range(3):
        assert server.post_events("counter", {"type": "increase"}).status_code == 202
    current = server.sequence("counter")
    with server.http.get(server.base_url + "/v1/spins/counter/stream", stream=True, timeout=5,
                         headers={"Accept": "text/event-stream", "Last-Event-ID": str(current - 2)}) as response:
        assert response.status_code == 200
        lines = []
        for line in response.iter_lines(decode_unicode=True):
            lines.append(line)
            if sum(1 for entry in lines if entry.startswith("data: ")) == 2:
                break
    ids = [int(line[len("id: "):]) for line in lines if line.startswith("id: ")]
    data = [json.loads(line[len("data: "):]) for line in lines if line.startswith("data: ")]
    assert ids == [current - 1, current]
    assert [d["sequence"] for d in data] == ids and all(d["type"] == "state" for d in data)


def test_a_resume_works_across_a_clean_restart(start_server, tmp_path):
    storage = tmp_path / "storage"
    first = start_server(storage=storage, name="first")
    counter_at_ten(first)
    for _ in range(4):
        assert first.post_events("counter", {"type": "increase"}).status_code == 202
    snapshot = asyncio.run(collect(f"{first.ws_base}/v1/spins/counter/stream", 1))[0]
    assert first.terminate() == 0
    second = start_server(storage=storage, name="second")
    since = snapshot["sequence"] - 2
    url = f"{second.ws_base}/v1/spins/counter/stream?since={since}&epoch={snapshot['epoch']}"
    messages = asyncio.run(collect(url, 2))
    assert [(m["type"], m["sequence"], m["epoch"]) for m in messages] == [
        ("state", since + 1, snapshot["epoch"]), ("state", since + 2, snapshot["epoch"])]


def test_an_ack_never_precedes_its_state_message(server):
    async def scenario():
        async with connect(f"{server.ws_base}/v1/spins/counter/stream", open_timeout=5, proxy=None) as ws:
            first = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert first["type"] == "snapshot"
            ids = [f"c{index}" for index in range(20)]
            for message_id in ids:
                await ws.send(json.dumps({"type": "event", "id": message_id, "event": {"type": "increase"}}))
            seen_states = set()
            acked = {}
            while len(acked) < len(ids):
                message = json.loads(await asyncio.wait_for(ws.recv(), 5))
                if message["type"] == "state":
                    seen_states.add(message["sequence"])
                elif message["type"] == "ack":
                    # The state of an acknowledged event went out before its ack.
                    assert message["sequence"] in seen_states, (message, sorted(seen_states))
                    acked[message["id"]] = message["sequence"]
            return acked

    counter_at_ten(server)
    acked = asyncio.run(scenario())
    assert len(set(acked.values())) == 20


def test_long_resumes_to_clients_that_do_not_read_stall_nobody(start_server):
    """Replaying thousands of retained states to resuming clients that never read (one of
    them vanishing mid-replay) must leave every other client served promptly."""
    from spin_e2e import RawWebSocket

    server = start_server(name="long-resume")
    counter_at_ten(server)
    for _ in range(4):
        batch = [{"type": "increase"}] * 1000
        assert server.post_events("counter", batch).status_code == 202
    current = server.sequence("counter")
    readers = [RawWebSocket(server.port, f"/v1/spins/counter/stream?since={current - 4000}",
                            headers={"Sec-WebSocket-Extensions": "permessage-deflate"}, receive_buffer=4096)
               for _ in range(8)]
    assert all(reader.status == 101 for reader in readers)
    readers[0].sock.close()
    for _ in range(20):
        started = time.monotonic()
        response = server.post_events("counter", {"type": "increase"})
        assert response.status_code == 202
        assert time.monotonic() - started < 2.0
    assert server.get("/readyz").status_code == 200
    for reader in readers[1:]:
        reader.sock.close()


def test_a_full_disk_refuses_makes_and_events_of_made_spins_and_both_work_again(small_disk, start_server):
    """The same with Spins made at run time, in spins.db: a make on a full disk answers 503
    and makes nothing, an event for a made Spin answers 503 and applies nothing, and both
    work again once space is freed; a restart finds what was answered and nothing else."""
    storage = small_disk / "storage"
    server = start_server(storage=storage)
    kind = {"Content-Type": "application/json"}
    for index in range(20):
        assert server.request("PUT", f"/v1/spins/door-{index}", data='{"kind":"door"}', headers=kind).status_code == 201
    assert server.post_events("door-1", {"type": "LOCK"}, wait=True).status_code == 200
    filler = fill(small_disk)

    made, refused = [], None
    for index in range(20, 5000):
        response = server.request("PUT", f"/v1/spins/door-{index}", data='{"kind":"door"}', headers=kind)
        if response.status_code != 201:
            refused = (index, response)
            break
        made.append(f"door-{index}")
    assert refused is not None, "the disk never filled"
    assert_error(refused[1], 503, "storage_unavailable")
    assert server.request("GET", f"/v1/spins/door-{refused[0]}").status_code == 404
    # An event for a made Spin: refused, nothing applied.
    response = server.post_events("door-1", {"type": "UNLOCK", "code": "1234"})
    assert response.status_code == 503, response.text
    assert server.spin("door-1")["state"]["value"] == "locked"

    filler.unlink()
    deadline = time.monotonic() + 15
    response = None
    while time.monotonic() < deadline:
        response = server.post_events("door-1", {"type": "UNLOCK", "code": "1234"}, wait=True)
        if response.status_code == 200:
            break
        time.sleep(0.2)
    assert response.status_code == 200, response.text
    assert server.spin("door-1")["state"]["value"] == "closed"
    again = server.request("PUT", f"/v1/spins/door-{refused[0]}", data='{"kind":"door"}', headers=kind)
    assert again.status_code == 201, again.text
    assert server.terminate() == 0
    restarted = start_server(storage=storage, name="again")
    listed = [spin["name"] for spin in restarted.listed("door-")]
    assert sorted(listed) == sorted([f"door-{index}" for index in range(20)] + made + [f"door-{refused[0]}"])
    assert restarted.spin("door-1")["state"]["value"] == "closed"
