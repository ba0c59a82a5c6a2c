"""Issue 9, "nothing lost, nothing stuck": the runaway guard (docs/OPERATIONS.md "Runaway loops",
limits.feedbackBudget) and input no example reducer can represent.

A `levels` pair set two billion apart would run for ever: the server suspends it once its
feedbacks have produced the budget of events without a client event, with memory
bounded; its state stays readable, events get 409 until an admin resumes it. The batch
that used to trap the reducer on integer overflow is a 422 that changes nothing."""
from __future__ import annotations

import json
import time

from websockets.asyncio.client import connect

from spin_e2e import assert_error, metric_value, recv_json, recv_until, run_async

RUNAWAY = {"type": "set", "left": -1_000_000_000, "right": 1_000_000_000}
POISON = [{"type": "set", "left": 9223372036854775807, "right": 0}, {"type": "increaseLeft"}]


def wait_for_status(server, status: str, timeout: float = 60.0, headers: dict | None = None) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        spin = server.spin("levels", headers)
        if spin["status"] == status:
            return spin
        time.sleep(0.02)
    raise AssertionError(f"levels is not {status} after {timeout} s: {server.spin('levels', headers)}")


def resume_and_settle(server, value: int, headers: dict | None = None) -> None:
    """Resumes levels with a corrective `set` in the body: applied before the feedbacks
    run again, so the runaway cannot spend its budget first."""
    before = server.sequence("levels", headers)
    resumed = server.post("/v1/spins/levels/resume", data=json.dumps({"type": "set", "left": value, "right": value}),
                          headers={"Content-Type": "application/json", **(headers or {})})
    assert resumed.status_code == 200, resumed.text
    assert resumed.json() == {"name": "levels", "status": "running"}
    assert server.spin("levels", headers) == {"name": "levels", "sequence": before + 1, "status": "running",
                                              "state": {"left": value, "right": value},
                                              "schema": "/v1/spins/levels/schema"}


def test_a_runaway_is_suspended_with_memory_bounded_and_resumed_by_an_admin(start_server):
    """The default budget (100000): the runaway stops within seconds, RSS stays bounded
    while it runs and does not grow once it is suspended."""
    server = start_server(name="runaway")
    start = server.settled_sequences()["levels"]
    rss_before = server.rss_kib()
    began = time.monotonic()
    response = server.post_events("levels", RUNAWAY)
    assert response.status_code == 202, response.text
    peak = rss_before
    deadline = began + 60
    while time.monotonic() < deadline:
        peak = max(peak, server.rss_kib())
        spin = server.spin("levels")
        if spin["status"] == "suspended":
            break
        time.sleep(0.02)
    else:
        raise AssertionError(f"not suspended within 60 s: {server.spin('levels')}")
    elapsed = time.monotonic() - began
    # The set, then exactly the budget of feedback events.
    assert spin["sequence"] == start + 1 + 100_000, spin
    assert list(spin) == ["name", "sequence", "status", "state", "schema"]
    assert spin["state"] == {"left": -1_000_000_000 + 50_000, "right": 1_000_000_000 - 50_000}
    time.sleep(1.0)
    rss_suspended = server.rss_kib()
    time.sleep(2.0)
    rss_later = server.rss_kib()
    print(f"suspended after {elapsed:.2f} s; VmRSS before {rss_before} KiB, peak {peak} KiB, "
          f"suspended {rss_suspended} KiB, 2 s later {rss_later} KiB")
    assert peak - rss_before < 300 * 1024, (rss_before, peak)
    # Suspended means idle: no growth at all (a runaway grew ~10 MB/s).
    assert rss_later - rss_suspended < 4 * 1024, (rss_suspended, rss_later)
    assert server.spin("levels") == spin

    refused = server.post_events("levels", {"type": "set", "left": 1, "right": 1})
    assert_error(refused, 409, "spin_suspended", message_contains="/v1/spins/levels/resume")
    # Nor is it restored: resuming it is the way on.
    assert_error(server.post("/v1/spins/levels/restore", json={"at": 1}), 409, "spin_suspended")
    assert server.spin("levels") == spin
    listed = {entry["name"]: entry for entry in server.get("/v1/spins").json()["spins"]}
    assert listed["levels"]["status"] == "suspended"
    assert listed["counter"]["status"] == "running"
    metrics = server.metrics()
    assert metric_value(metrics, "spin_suspended", spin="levels") == 1
    assert metric_value(metrics, "spin_suspended", spin="counter") == 0
    assert metric_value(metrics, "spin_suspensions_total", spin="levels") == 1
    assert "Spin levels suspended at sequence" in server.log() and "100000" in server.log()

    # Without a body, resuming runs the feedbacks again: the runaway spends its budget
    # again and is suspended again.
    resumed = server.post("/v1/spins/levels/resume")
    assert resumed.status_code == 200 and resumed.json() == {"name": "levels", "status": "running"}
    again = wait_for_status(server, "suspended", timeout=60)
    assert again["sequence"] == spin["sequence"] + 100_000, again
    # No tokens configured: resuming needs no token (as every other route).
    resume_and_settle(server, 42)
    metrics = server.metrics()
    assert metric_value(metrics, "spin_suspended", spin="levels") == 0
    assert metric_value(metrics, "spin_suspensions_total", spin="levels") == 2


def test_stream_clients_see_the_suspended_state_and_get_the_same_error(start_server):
    server = start_server(name="runaway-stream", config_patch={"limits": {"feedbackBudget": 5000}})
    assert server.post_events("levels", RUNAWAY).status_code == 202
    spin = wait_for_status(server, "suspended")
    # Streams show durable states: wait until the journal has the last of the runaway.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if metric_value(server.metrics(), "spin_durable_sequence", spin="levels") == spin["sequence"]:
            break
        time.sleep(0.1)

    async def scenario():
        async with connect(f"ws://127.0.0.1:{server.port}/v1/spins/levels/stream", proxy=None,
                           open_timeout=5, close_timeout=5) as ws:
            snapshot = await recv_json(ws)
            assert snapshot["type"] == "snapshot"
            assert snapshot["sequence"] == spin["sequence"] and snapshot["state"] == spin["state"]
            await ws.send(json.dumps({"type": "event", "id": "c1", "event": {"type": "increaseLeft"}}))
            error, _ = await recv_until(ws, lambda m: m.get("type") == "error")
            assert error["id"] == "c1" and error["error"]["code"] == "spin_suspended", error

    run_async(scenario())
    assert server.spin("levels") == spin


def test_resume_needs_the_admin_scope(start_server):
    server = start_server(name="runaway-auth", env={"SPIN_TOKENS": "w:read+write,boss:read+write+admin"},
                          config_patch={"limits": {"feedbackBudget": 5000}})
    writer = {"Authorization": "Bearer w"}
    boss = {"Authorization": "Bearer boss"}
    assert server.post_events("levels", RUNAWAY, headers=writer).status_code == 202
    wait_for_status(server, "suspended", headers=writer)
    assert_error(server.post("/v1/spins/levels/resume"), 401, "unauthorized")
    assert_error(server.post("/v1/spins/levels/resume", headers=writer), 403, "forbidden")
    assert server.spin("levels", writer)["status"] == "suspended"
    assert_error(server.post("/v1/spins/nope/resume", headers=boss), 404, "spin_not_found")
    assert server.get("/v1/spins/levels/resume", headers=boss).status_code == 405
    resume_and_settle(server, 7, headers=boss)


def test_a_suspension_survives_a_restart(start_server, tmp_path):
    storage = tmp_path / "kept"
    patch = {"limits": {"feedbackBudget": 5000}}
    first = start_server(name="before", storage=storage, config_patch=patch)
    assert first.post_events("levels", RUNAWAY).status_code == 202
    spin = wait_for_status(first, "suspended")
    assert first.terminate() == 0
    second = start_server(name="after", storage=storage, config_patch=patch)
    # Recovered suspended, at the same state: the runaway does not start again.
    assert second.spin("levels") == spin
    time.sleep(0.5)
    assert second.spin("levels") == spin
    assert "suspended before the restart" in second.log()
    resume_and_settle(second, 5)
    assert second.terminate() == 0
    third = start_server(name="again", storage=storage, config_patch=patch)
    assert third.spin("levels")["status"] == "running"


def test_the_poison_batch_is_422_and_the_server_stays_up(server):
    baseline = server.settled_sequences()
    state = server.spin("levels")
    response = server.post_events("levels", POISON)
    assert_error(response, 422, "invalid_event", message_contains="[0].left: must be an integer from -1000000000 to 1000000000")
    # Int.max, then Int.min, in two requests.
    for value in (9223372036854775807, -9223372036854775808):
        response = server.post_events("levels", {"type": "set", "left": value, "right": 0})
        assert_error(response, 422, "invalid_event", message_contains="left: must be")
    assert server.get("/healthz").status_code == 200
    assert server.spin("levels") == state
    assert server.settled_sequences() == baseline
