"""JSON machines (docs/MACHINES.md) through the HTTP API with real clients:
every construct of the format, `?wait=true` replies for ignored events, the `session`
machine's forceLogout race, restarts on the same storage, the declarative auth-routing
pair on Gear `authMachines`, and each kind of validation error at start-up and with
`--check-config`."""
from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from spin_e2e import REPO, SpinServer, assert_error, recv_json, recv_until, run_async

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "machines"
LAB = json.loads((FIXTURES / "lab.json").read_text())
XSTATE = json.loads((FIXTURES / "xstate.json").read_text())


@pytest.fixture
def machine_server(server_bin, tmp_path):
    """Starts servers hosting `machines` ({file name: JSON object}) as `spins`, with
    `gears`: `machine_server(machines, spins, gears=[], storage=None, name=None, config=None)`
    (`config`: more of the config file, merged in). The files are written next to the
    copied config (`machines/<file>`). Each server must exit 0 on SIGTERM at the end of
    the test."""
    started: list[SpinServer] = []

    def start(machines: dict[str, dict], spins: list[dict], gears: list[dict] | None = None, *,
              storage: Path | None = None, name: str | None = None, run: bool = True,
              config: dict | None = None) -> SpinServer:
        instance = prepare(server_bin, tmp_path / (name or f"server{len(started)}"), machines, spins,
                           gears or [], storage, config)
        started.append(instance)
        return instance.start() if run else instance

    yield start
    for instance in started:
        if instance.process is not None and instance.exit_code is None:
            code = instance.terminate()
            assert code == 0, f"exit code {code} after SIGTERM:\n{instance.log_tail()}"


def prepare(server_bin: Path, workdir: Path, machines: dict[str, dict], spins: list[dict],
            gears: list[dict], storage: Path | None, config: dict | None = None) -> SpinServer:
    instance = SpinServer(server_bin, workdir, storage=storage,
                          config_patch={"spins": spins, "gears": gears} | (config or {}))
    folder = instance.config_path.parent / "machines"
    for file, document in machines.items():
        (folder / file).write_text(json.dumps(document, indent=2))
    return instance


def lab_server(machine_server, **kwargs) -> SpinServer:
    return machine_server({"lab.json": LAB}, [{"name": "lab", "machine": "machines/lab.json"}], **kwargs)


def session_server(machine_server, **kwargs) -> SpinServer:
    """A server hosting only the shipped `session` machine."""
    session = json.loads((REPO / "Config" / "machines" / "session.json").read_text())
    return machine_server({"session.json": session}, [{"name": "session", "machine": "machines/session.json"}],
                          **kwargs)


def send(server: SpinServer, spin: str, *events: dict) -> dict:
    """POSTs the events as one batch with `?wait=true`; returns the 200 reply."""
    response = server.post_events(spin, list(events), wait=True)
    assert response.status_code == 200, response.text
    return response.json()


def state(server: SpinServer, spin: str = "lab") -> dict:
    return server.spin(spin)["state"]


def context(server: SpinServer) -> dict:
    return state(server)["context"]


APPLIED = {"applied": True}
IGNORED = {"applied": False, "reason": "no_transition"}
DONE = {"applied": False, "reason": "done"}


def wait_for_value(server: SpinServer, spin: str, value, timeout: float = 5.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        current = server.spin(spin)
        if current["state"]["value"] == value:
            return current
        time.sleep(0.05)
    raise AssertionError(f"{spin} did not reach {value!r} within {timeout} s: {server.spin(spin)}")


# -- constructs ----------------------------------------------------------------------------


def test_nested_value_target_string_and_transition_object_order(machine_server):
    server = lab_server(machine_server)
    spin = server.spin("lab")
    assert spin.pop("machine") == LAB   # a machine Spin shows its definition
    assert spin == {"name": "lab", "sequence": 0, "status": "running",
                    "state": {"value": {"main": "idle"}, "context": LAB["context"] | {"entries": 1}},
                    "schema": "/v1/spins/lab/schema", "version": 1}
    # A transition object with actions: exit of idle, then the actions, then entry of busy,
    # each assign seeing the context the previous one left.
    reply = send(server, "lab", {"type": "ORDER"})
    assert reply["replies"] == [APPLIED] and reply["sequence"] == 1
    assert reply["state"]["value"] == {"main": {"busy": "a"}}
    assert {key: reply["state"]["context"][key] for key in ("exitAt", "actionAt", "entryAt", "step")} == \
        {"exitAt": 1, "actionAt": 2, "entryAt": 3, "step": 3}
    # A target string, inside the nested state.
    reply = send(server, "lab", {"type": "NEXT"})
    assert reply["state"]["value"] == {"main": {"busy": "b"}}
    # An event handled by an ancestor (busy) from the leaf b.
    assert send(server, "lab", {"type": "BACK"})["state"]["value"] == {"main": "idle"}


def test_self_transition_without_target_keeps_state_and_every_assign_form(machine_server):
    server = lab_server(machine_server)
    reply = send(server, "lab", {"type": "SET", "value": {"deep": [1, 2]}})
    assert reply["replies"] == [APPLIED] and reply["sequence"] == 1
    ctx = reply["state"]["context"]
    assert ctx["lit"] == 5
    assert ctx["fromEvent"] == {"deep": [1, 2]}
    assert ctx["fromContext"] == "ada"
    assert ctx["counter"] == 2             # a missing key counts as 0
    assert ctx["raw"] == {"from": "event.value"}
    # No exit, no entry: the entry counter is unchanged, exit did not run.
    assert ctx["entries"] == 1 and ctx["exitAt"] is None and reply["state"]["value"] == {"main": "idle"}
    reply = send(server, "lab", {"type": "SET", "value": 7})
    assert reply["state"]["context"]["counter"] == 4 and reply["state"]["context"]["fromEvent"] == 7
    # A transition to the state itself stays in it, as in XState v5 (transition.test.ts,
    # "reenter"): no exit, no entry...
    reply = send(server, "lab", {"type": "AGAIN"})
    assert reply["state"]["context"]["entries"] == 1 and reply["state"]["context"]["exitAt"] is None
    # ... unless it says "reenter": true.
    reply = send(server, "lab", {"type": "REENTER"})
    assert reply["state"]["context"]["entries"] == 2 and reply["state"]["context"]["exitAt"] == 1


def test_guarded_array_first_guard_that_holds_wins(machine_server):
    server = lab_server(machine_server)
    # n=7 satisfies both guards: the first (small) wins.
    reply = send(server, "lab", {"type": "PICK", "n": 7}, {"type": "BACK"},
                 {"type": "PICK", "n": 20}, {"type": "BACK"},
                 {"type": "PICK", "n": "seven"})
    assert reply["replies"] == [APPLIED, APPLIED, APPLIED, APPLIED, IGNORED]
    assert reply["sequence"] == 4 and reply["state"]["value"] == {"main": "idle"}
    assert send(server, "lab", {"type": "PICK", "n": 7})["state"]["value"] == {"main": "small"}
    send(server, "lab", {"type": "BACK"})
    assert send(server, "lab", {"type": "PICK", "n": 20})["state"]["value"] == {"main": "big"}


@pytest.mark.parametrize("event, passing, failing", [
    ("G_EQ", "ada", "bob"),
    ("G_NEQ", "bob", "ada"),
    ("G_LT", 2, 3),
    ("G_LTE", 3, 4),
    ("G_GT", 4, 3),
    ("G_GTE", 3, 2),
    ("G_AND", 5, 10),
    ("G_OR", "b", "c"),
    ("G_NOT", "b", "a"),
    ("G_LIT", "context.name", "ada"),
])
def test_guard_forms(machine_server, event, passing, failing):
    server = lab_server(machine_server, name=event.lower())
    name = event[2:].lower() if event != "G_LIT" else "literal"
    reply = send(server, "lab", {"type": event, "v": passing})
    assert reply["state"]["context"]["hit"] == name, reply
    reply = send(server, "lab", {"type": event, "v": failing})
    assert reply["state"]["context"]["hit"] == "else", reply


def test_guards_compare_numbers_or_strings_only(machine_server):
    server = lab_server(machine_server)
    # lt between a string and a number is false, never an error.
    assert send(server, "lab", {"type": "G_LT", "v": "1"})["state"]["context"]["hit"] == "else"


def test_in_guard_follows_the_active_state(machine_server):
    server = lab_server(machine_server)
    assert send(server, "lab", {"type": "G_IN"})["state"]["context"]["hit"] == "else"
    reply = send(server, "lab", {"type": "GO"}, {"type": "NEXT"}, {"type": "G_IN"})
    assert reply["state"]["value"] == {"main": {"busy": "b"}}
    assert reply["state"]["context"]["hit"] == "in"


def test_after_timer_fires_and_is_journaled(machine_server):
    server = lab_server(machine_server)
    reply = send(server, "lab", {"type": "WAIT"})
    assert reply["state"]["value"] == {"main": "waiting"} and reply["sequence"] == 1
    fired = wait_for_value(server, "lab", {"main": "timedOut"})
    # The timer's event is an event like any: it took a sequence number.
    assert fired["sequence"] == 2


def test_after_timer_is_cancelled_when_its_state_is_left(machine_server):
    server = lab_server(machine_server)
    reply = send(server, "lab", {"type": "WAIT"}, {"type": "CANCEL"})
    assert reply["replies"] == [APPLIED, APPLIED] and reply["state"]["value"] == {"main": "idle"}
    time.sleep(0.8)  # well past the 300 ms delay
    assert server.spin("lab")["state"]["value"] == {"main": "idle"}
    assert server.sequence("lab") == 2


def test_top_level_final_state_completes_the_machine(machine_server, tmp_path):
    """XState v5, final.test.ts "status of a machine with a root state being final should be
    done": reaching a top-level final state completes the machine; later events are
    answered done, take no sequence and are not journaled; the status survives a restart."""
    storage = tmp_path / "storage"
    server = lab_server(machine_server, storage=storage, name="first")
    assert server.spin("lab")["status"] == "running"
    # In one batch: ignored before the end (no_transition), done after it.
    reply = send(server, "lab", {"type": "NOPE"}, {"type": "END"}, {"type": "GO"}, {"type": "NOPE"})
    assert reply["replies"] == [IGNORED, APPLIED, DONE, DONE]
    assert reply["state"]["value"] == "done" and reply["sequence"] == 1
    reply = send(server, "lab", {"type": "GO"}, {"type": "G_EQ", "v": "ada"}, {"type": "BACK"})
    assert reply["replies"] == [DONE] * 3
    assert reply["sequence"] == 1 and reply["state"]["value"] == "done"
    response = server.post_events("lab", [{"type": "GO"}])
    assert response.status_code == 202 and response.json()["sequence"] == 1
    spin = server.spin("lab")
    assert spin["status"] == "done" and spin["sequence"] == 1
    listed = {entry["name"]: entry for entry in server.get("/v1/spins").json()["spins"]}
    assert listed["lab"]["status"] == "done"
    assert server.terminate() == 0

    # The journal holds the one applied event: replayed, the machine is done again.
    again = lab_server(machine_server, storage=storage, name="second")
    spin = again.spin("lab")
    assert spin["status"] == "done" and spin["sequence"] == 1
    assert send(again, "lab", {"type": "BACK"})["replies"] == [DONE]


def test_a_done_machine_acks_a_stream_event_with_reason_done(machine_server):
    server = lab_server(machine_server)
    send(server, "lab", {"type": "END"})

    async def scenario():
        async with connect(server.ws_base + "/v1/spins/lab/stream", open_timeout=5, close_timeout=5, proxy=None) as ws:
            assert (await recv_json(ws))["type"] == "snapshot"
            await ws.send(json.dumps({"type": "event", "id": 7, "event": {"type": "GO"}}))
            return (await recv_until(ws, lambda m: m.get("type") == "ack"))[0]

    ack = run_async(scenario())
    assert ack["applied"] is False and ack["reason"] == "done" and ack["sequence"] == 1


def test_xstate_v5_features_over_http(machine_server):
    """XState v5's semantics (tests of statelyai/xstate packages/core/test/ named per step):
    internalTransitions.test.ts (a child target does not re-enter its parent unless
    "reenter": true; events on the root), eventDescriptors.test.ts (the wildcard after
    the event's own type), transient.test.ts (a guarded always), final.test.ts (onDone;
    a top-level final state completes the machine, the root's exit runs)."""
    server = machine_server({"xstate.json": XSTATE}, [{"name": "xs", "machine": "machines/xstate.json"}])
    start = state(server, "xs")
    assert start["value"] == {"word": "left"} and start["context"]["rootEntered"] is True
    assert start["context"]["entries"] == 1
    reply = send(server, "xs", {"type": "RIGHT"}, {"type": "RIGHT_REENTER"}, {"type": "ANYTHING"})
    assert reply["replies"] == [APPLIED] * 3
    ctx = reply["state"]["context"]
    assert reply["state"]["value"] == {"word": "right"}
    assert ctx["entries"] == 2 and ctx["seen"] == "ANYTHING"
    reply = send(server, "xs", {"type": "COUNT"}, {"type": "INC"}, {"type": "INC"}, {"type": "INC"})
    assert reply["replies"] == [APPLIED] * 4
    # The third INC makes the always guard hold: low -> high (final) -> counting's onDone.
    assert reply["state"]["value"] == {"word": "left"}
    # The done event is named by the state's id, which starts with the machine's ("xstate").
    assert reply["state"]["context"]["seen"] == "xstate.done.state.xstate.counting"
    assert reply["sequence"] == 7
    # Inside word, its wildcard takes QUIT before the root's own transition does.
    reply = send(server, "xs", {"type": "QUIT"})
    assert reply["state"]["value"] == {"word": "left"} and reply["state"]["context"]["seen"] == "QUIT"
    reply = send(server, "xs", {"type": "COUNT"}, {"type": "QUIT"}, {"type": "RIGHT"})
    assert reply["replies"] == [APPLIED, APPLIED, DONE]
    assert reply["state"]["value"] == "bye" and reply["state"]["context"]["finished"] is True
    assert server.spin("xs")["status"] == "done"


RAISING = {
    "initial": "a",
    "states": {
        "a": {"on": {"NEXT": {"actions": [{"type": "raise", "event": {"type": "RAISED"}, "delay": 300, "id": "later"}]},
                     "NOW": {"actions": [{"type": "raise", "event": {"type": "RAISED"}}]},
                     "CANCEL": {"actions": [{"type": "cancel", "id": "later"}]},
                     "RAISED": "b"}},
        "b": {"on": {"BACK": "a"}},
    },
}


def test_raise_and_cancel_over_http(machine_server, tmp_path):
    """XState v5, actions.test.ts: raise "should be able to raise a delayed event and
    respond to it in the same state", cancel "should be possible to cancel a raised
    delayed event". A raised event is taken in the same step (one sequence); a delayed
    one arrives later as its own journaled event."""
    storage = tmp_path / "storage"
    server = machine_server({"r.json": RAISING}, [{"name": "r", "machine": "machines/r.json"}], storage=storage, name="first")
    reply = send(server, "r", {"type": "NOW"})
    assert reply["state"]["value"] == "b" and reply["sequence"] == 1
    send(server, "r", {"type": "BACK"}, {"type": "NEXT"})
    assert state(server, "r")["value"] == "a"
    spin = wait_for_value(server, "r", "b")
    assert spin["sequence"] == 4                 # NOW, BACK, NEXT, then RAISED by itself
    send(server, "r", {"type": "BACK"}, {"type": "NEXT"}, {"type": "CANCEL"})
    time.sleep(0.6)
    assert server.spin("r")["sequence"] == 7 and state(server, "r")["value"] == "a"
    assert server.terminate() == 0
    again = machine_server({"r.json": RAISING}, [{"name": "r", "machine": "machines/r.json"}], storage=storage, name="second")
    assert again.spin("r")["sequence"] == 7 and state(again, "r")["value"] == "a"


ALARM = {
    "initial": "asleep",
    "states": {
        "asleep": {"entry": [{"type": "raise", "event": {"type": "WAKE"}, "delay": 2000}], "on": {"WAKE": "awake"}},
        "awake": {"on": {"ARM": {"actions": [{"type": "raise", "event": {"type": "RING", "tone": {"from": "event.tone"}},
                                               "delay": 1500, "id": "alarm"}]},
                         "RING": {"target": "ringing",
                                  "actions": [{"type": "assign", "set": {"tone": {"from": "event.tone"}}}]}}},
        "ringing": {},
    },
}


def test_delayed_raises_are_sent_from_the_initial_state_and_survive_a_restart(machine_server, tmp_path):
    """XState v5, actions.test.ts: raise "should be able to send a delayed event to itself"
    (the raise is in the initial state's entry). A delayed raise still waiting when the
    server stops is in the state ("scheduled"), so the restarted server sends it, after its
    whole delay, as XState's system restarts its scheduled events; it is journaled once
    (a second restart replays it, nothing is sent again)."""
    storage = tmp_path / "storage"
    spins = [{"name": "alarm", "machine": "machines/alarm.json"}]
    server = machine_server({"alarm.json": ALARM}, spins, storage=storage, name="first")
    # Two seconds: the first GET comes well before, however slowly the server starts.
    assert state(server, "alarm")["scheduled"] == [{"key": 1, "delay": 2000, "event": {"type": "WAKE"}}]
    awake = wait_for_value(server, "alarm", "awake", timeout=10)
    assert awake["sequence"] == 1 and "scheduled" not in awake["state"]
    reply = send(server, "alarm", {"type": "ARM", "tone": "bell"})
    assert reply["state"]["scheduled"] == [{"key": 1, "id": "alarm", "delay": 1500,
                                            "event": {"type": "RING", "tone": "bell"}}]
    assert server.terminate() == 0
    again = machine_server({"alarm.json": ALARM}, spins, storage=storage, name="second")
    assert state(again, "alarm") == reply["state"]
    ringing = wait_for_value(again, "alarm", "ringing", timeout=10)
    assert ringing["sequence"] == 3 and ringing["state"] == {"value": "ringing", "context": {"tone": "bell"}}
    assert again.terminate() == 0
    third = machine_server({"alarm.json": ALARM}, spins, storage=storage, name="third")
    time.sleep(0.5)
    assert third.spin("alarm")["sequence"] == 3 and state(third, "alarm")["value"] == "ringing"


def test_a_client_cannot_send_the_machines_own_events(machine_server):
    """`xstate.` types are the machine's own (a timer's `xstate.after`, a delayed raise's
    `xstate.raise`): posted, they are refused 422 `invalid_event`, naming the type, and
    nothing of the batch is applied; the timer still fires by itself."""
    server = machine_server({"alarm.json": ALARM}, [{"name": "alarm", "machine": "machines/alarm.json"}])
    before = server.spin("alarm")
    for batch in ([{"type": "xstate.raise", "key": 1, "event": {"type": "WAKE"}}],
                  [{"type": "WAKE"}, {"type": "xstate.after", "state": "asleep", "delay": 2000}]):
        assert_error(server.post_events("alarm", batch, wait=True), 422, "invalid_event",
                     message_contains=f'"{batch[-1]["type"]}" is the machine\'s own')
        assert server.spin("alarm")["sequence"] == before["sequence"]
    assert state(server, "alarm")["value"] == "asleep"
    assert wait_for_value(server, "alarm", "awake", timeout=10)["sequence"] == 1


HISTORY = {
    "initial": "on",
    "states": {
        "on": {"initial": "first", "on": {"POWER": "off"},
               "states": {"first": {"on": {"SWITCH": "second"}},
                          "second": {"initial": "A", "states": {"A": {"on": {"INNER": "B"}}, "B": {}}},
                          "hist": {"type": "history"},
                          "deep": {"type": "history", "history": "deep"}}},
        "off": {"on": {"POWER": "on.hist", "DEEP_POWER": "on.deep"}},
    },
}


def test_history_states_over_http_and_across_a_restart(machine_server, tmp_path):
    """XState v5, history.test.ts: "should go to the most recently visited state" (shallow)
    and the deep history; the record rides in the state ("history") and survives a restart."""
    storage = tmp_path / "storage"
    server = machine_server({"h.json": HISTORY}, [{"name": "h", "machine": "machines/h.json"}], storage=storage, name="first")
    reply = send(server, "h", {"type": "SWITCH"}, {"type": "INNER"}, {"type": "POWER"})
    assert reply["state"] == {"value": "off", "context": {}, "history": {"on": "on.second.B"}}
    assert server.terminate() == 0
    again = machine_server({"h.json": HISTORY}, [{"name": "h", "machine": "machines/h.json"}], storage=storage, name="second")
    assert state(again, "h")["history"] == {"on": "on.second.B"}
    assert send(again, "h", {"type": "DEEP_POWER"})["state"]["value"] == {"on": {"second": "B"}}
    send(again, "h", {"type": "POWER"})
    assert send(again, "h", {"type": "POWER"})["state"]["value"] == {"on": {"second": "A"}}


PARALLEL = {
    "initial": "word",
    "on": {"RESET": "#word"},
    "states": {
        "word": {"id": "word", "type": "parallel", "onDone": "saved",
                 "states": {
                     "bold": {"initial": "off", "states": {"off": {"on": {"TOGGLE_BOLD": "on"}},
                                                           "on": {"on": {"TOGGLE_BOLD": "off", "LOCK": "locked"}},
                                                           "locked": {"type": "final"}}},
                     "list": {"initial": "none", "states": {
                         "none": {"on": {"BULLETS": "bullets"}},
                         "bullets": {"on": {"NONE": "none"},
                                     "always": {"target": "#saving", "guard": {"in": "word.bold.on"}}},
                         "saving": {"id": "saving", "type": "final"}}},
                     "status": {"initial": "editing", "states": {
                         "editing": {"on": {"*": {"actions": [{"type": "assign", "set": {"edits": {"add": 1}}}]},
                                     "SAVE": "stored"}},
                         "stored": {"type": "final"}}}}},
        "saved": {"type": "final"},
    },
}


def test_parallel_states_over_http_and_across_restarts(machine_server, tmp_path):
    """XState v5, parallel.test.ts: "should have initial parallel states", "should go from
    ... on TOGGLE_BOLD", and 'should raise a "xstate.done.state.*" event when all child
    states reach final state'. The value is an object of regions over HTTP; one event is
    taken in every region that handles it (here a wildcard counts it); the configuration
    survives a restart replayed from the journal, and one recovered from a snapshot (after
    a compaction); the parallel state's onDone completes the machine once every region is
    final."""
    storage = tmp_path / "storage"
    spins = [{"name": "w", "machine": "machines/w.json"}]
    # Few events retained: 1100 records make a compaction (the journal keeps 1000 more).
    small = {"storage": {"retainEvents": 100}}
    server = machine_server({"w.json": PARALLEL}, spins, storage=storage, name="first", config=small)
    assert state(server, "w") == {"value": {"word": {"bold": "off", "list": "none", "status": "editing"}}, "context": {}}
    reply = send(server, "w", {"type": "TOGGLE_BOLD"}, {"type": "TOGGLE_BOLD"}, {"type": "TOGGLE_BOLD"})
    assert reply["state"] == {"value": {"word": {"bold": "on", "list": "none", "status": "editing"}}, "context": {"edits": 3}}
    assert send(server, "w", {"type": "NOPE"})["state"]["context"] == {"edits": 4}
    assert server.terminate() == 0
    again = machine_server({"w.json": PARALLEL}, spins, storage=storage, name="second", config=small)
    assert state(again, "w") == reply["state"] | {"context": {"edits": 4}}
    # Enough events for the journal to be compacted: the state behind it becomes a snapshot.
    for _ in range(3):
        assert again.post_events("w", [{"type": "TOGGLE_BOLD"}] * 1000, wait=True).status_code == 200
    before = again.spin("w")
    assert before["state"]["value"] == {"word": {"bold": "on", "list": "none", "status": "editing"}}
    assert again.terminate() == 0
    third = machine_server({"w.json": PARALLEL}, spins, storage=storage, name="third", config=small)
    assert any(storage.rglob("*snapshot*")), sorted(p.name for p in storage.rglob("*"))
    assert third.spin("w")["state"] == before["state"] and third.spin("w")["sequence"] == before["sequence"]
    # BULLETS with bold on: the list's always goes to its final state; LOCK and SAVE finish
    # the others; every region final: the parallel state's onDone, and the machine is done.
    send(third, "w", {"type": "BULLETS"}, {"type": "LOCK"})
    assert state(third, "w")["value"] == {"word": {"bold": "locked", "list": "saving", "status": "editing"}}
    reply = send(third, "w", {"type": "SAVE"})
    assert reply["state"]["value"] == "saved"
    assert third.spin("w")["status"] == "done"
    assert send(third, "w", {"type": "RESET"})["replies"] == [DONE]


REGIONS = json.loads((FIXTURES / "regions.json").read_text())


def test_parallel_root_target_lists_history_and_initial_actions_over_http(machine_server, tmp_path):
    """XState v5, parallel.test.ts: a parallel root (the value is the object of its regions),
    "regions should be able to transition to orthogonal regions" (a target list), "should
    execute actions of the initial transition of a parallel region ..." (an initial
    transition's actions run at start and when the region is targeted); a deep history
    over a parallel state restores every region, across a restart from the journal."""
    storage = tmp_path / "storage"
    spins = [{"name": "r", "machine": "machines/regions.json"}]
    server = machine_server({"regions.json": REGIONS}, spins, storage=storage, name="first")
    assert state(server, "r") == {"value": {"Pages": "About", "Menu": "Closed", "Work": "idle"}, "context": {"menus": 1}}
    reply = send(server, "r", {"type": "toggle"}, {"type": "go to dashboard"})
    assert reply["state"]["value"] == {"Pages": "Dashboard", "Menu": "Opened", "Work": "idle"}
    reply = send(server, "r", {"type": "START"}, {"type": "A"}, {"type": "B"}, {"type": "PAUSE"})
    assert reply["state"]["value"]["Work"] == "paused"
    assert reply["state"]["history"] == {"Work.busy": "Work.busy.p.a.a2", "Work.busy.p.a": "Work.busy.p.a.a2",
                                         "Work.busy.p.b": "Work.busy.p.b.b2"}
    assert server.terminate() == 0
    again = machine_server({"regions.json": REGIONS}, spins, storage=storage, name="second")
    assert state(again, "r") == reply["state"]
    resumed = send(again, "r", {"type": "RESUME"})["state"]
    assert resumed["value"] == {"Pages": "Dashboard", "Menu": "Opened", "Work": {"busy": {"p": {"a": "a2", "b": "b2"}}}}
    # The root's RESET targets the Menu region: every region is left and entered again, the
    # Menu's initial actions run once more.
    reset = send(again, "r", {"type": "RESET"})["state"]
    assert reset["value"] == {"Pages": "About", "Menu": "Closed", "Work": "idle"} and reset["context"] == {"menus": 2}


def test_a_parallel_root_completes_when_every_region_is_done(machine_server):
    """XState v5, final.test.ts: a parallel root is done once every region is, not before."""
    machine = {"type": "parallel", "states": {
        "a": {"initial": "x", "states": {"x": {"on": {"END": "y"}}, "y": {"type": "final"}}},
        "b": {"type": "final"}}}
    server = machine_server({"p.json": machine}, [{"name": "p", "machine": "machines/p.json"}])
    assert server.spin("p")["status"] != "done"
    assert send(server, "p", {"type": "END"})["state"]["value"] == {"a": "y", "b": {}}
    assert server.spin("p")["status"] == "done"
    assert send(server, "p", {"type": "END"})["replies"] == [DONE]


def test_partial_event_descriptors_over_http(machine_server):
    """XState v5's partial descriptors: "mouse.*" takes mouse.click and mouse.click.left,
    after a state's own type and before "*" (each event on a fresh server, from idle)."""
    machine = {"initial": "idle", "states": {
        "idle": {"on": {"mouse.*": "pointing", "mouse.wheel": "scrolling", "*": "other"}},
        "pointing": {}, "scrolling": {}, "other": {}}}
    server = machine_server({"p.json": machine}, [{"name": "p", "machine": "machines/p.json"}])
    assert send(server, "p", {"type": "mouse.click.left"})["state"]["value"] == "pointing"
    server.terminate()
    server = machine_server({"p.json": machine}, [{"name": "p", "machine": "machines/p.json"}], name="scroll")
    assert send(server, "p", {"type": "mouse.wheel"})["state"]["value"] == "scrolling"
    server.terminate()
    server = machine_server({"p.json": machine}, [{"name": "p", "machine": "machines/p.json"}], name="other")
    assert send(server, "p", {"type": "mousemove"})["state"]["value"] == "other"


# -- ignored events ---------------------------------------------------------------------------


def test_ignored_events_take_no_sequence_and_are_not_journaled(machine_server, tmp_path):
    storage = tmp_path / "storage"
    server = lab_server(machine_server, storage=storage, name="first")
    reply = send(server, "lab", {"type": "NEXT"}, {"type": "GO"}, {"type": "GO"}, {"type": "NEXT"},
                 {"type": "NOPE"})
    assert reply["replies"] == [IGNORED, APPLIED, IGNORED, APPLIED, IGNORED]
    assert reply["sequence"] == 2 and reply["state"]["value"] == {"main": {"busy": "b"}}
    # Without wait: accepted counts every event, sequence stays.
    response = server.post_events("lab", [{"type": "NOPE"}])
    assert response.status_code == 202, response.text
    assert response.json()["sequence"] == 2
    before = server.spin("lab")
    assert server.terminate() == 0

    # Replaying the journal gives the same state and sequence: nothing ignored was written.
    again = lab_server(machine_server, storage=storage, name="second")
    assert again.spin("lab") == before
    assert send(again, "lab", {"type": "BACK"})["sequence"] == 3


# -- Gear wiring: the declarative auth-routing pair ------------------------------------------


def auth_server(machine_server) -> SpinServer:
    folder = REPO / "Config" / "machines"
    machines = {file: json.loads((folder / file).read_text()) for file in ("auth-feature.json", "auth-router.json")}
    return machine_server(machines, [{"name": "feature", "machine": "machines/auth-feature.json"},
                                     {"name": "router", "machine": "machines/auth-router.json"}],
                          [{"name": "authMachines"}])


def test_gear_propagate_reaches_the_other_machines_catch(machine_server):
    server = auth_server(machine_server)
    # launching leaves by itself (a 1 ms timer) to checkingAuthorization: one check.
    wait_for_value(server, "router", "checkingAuthorization")
    assert send(server, "router", {"type": "authorized"})["state"] == \
        {"value": "home", "context": {"authorizationChecks": 1}}

    async def scenario():
        open_ws = lambda path: connect(server.ws_base + path, open_timeout=5, close_timeout=5, proxy=None)
        async with open_ws("/v1/spins/router/stream") as router, open_ws("/v1/gears/authMachines/stream") as gear:
            assert (await recv_json(router))["type"] == "snapshot"
            # The client plays the backend: the load is refused.
            reply = await asyncio.to_thread(send, server, "feature", {"type": "load"},
                                            {"type": "unauthorizedResponse"})
            assert reply["state"] == {"value": "unauthorized", "context": {"items": 0}}
            traffic = await recv_json(gear, 10)
            # Its place in the sender's outbox (the server routes Gears durably).
            assert isinstance(traffic.pop("position"), int)
            assert traffic == {"type": "gear", "gear": "authMachines", "from": "feature",
                               "event": {"type": "authorizationIssueHappened"}}
            checking, _ = await recv_until(router, lambda m: m.get("state", {}).get("value") == "checkingAuthorization")
            assert checking["event"] == {"type": "checkAuthorization"}
            assert checking["state"]["context"] == {"authorizationChecks": 2}

    run_async(scenario(), timeout=30)
    assert send(server, "router", {"type": "unauthorized"})["state"]["value"] == "login"
    reply = send(server, "feature", {"type": "load"}, {"type": "loaded", "items": 3})
    assert reply["state"] == {"value": "loaded", "context": {"items": 3}}
    # A load that succeeds says nothing on the Gear: the router stays on login.
    assert server.spin("router")["state"] == {"value": "login", "context": {"authorizationChecks": 2}}


def test_auth_machines_example_config_passes_check_config(server_bin):
    config = REPO / "Config" / "examples" / "auth-machines.json"
    result = subprocess.run([str(server_bin), "--config", str(config), "--check-config"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "configuration OK" in result.stdout


# -- session: the forceLogout race and restarts --------------------------------------------------


def values_seen_during(server: SpinServer, action, seconds: float) -> tuple[dict, list]:
    """Opens the session stream, runs `action` (in a thread), then collects the state
    values the stream shows for `seconds`."""
    async def scenario():
        async with connect(server.ws_base + "/v1/spins/session/stream", open_timeout=5, close_timeout=5,
                           proxy=None) as ws:
            snapshot = await recv_json(ws)
            assert snapshot["type"] == "snapshot"
            await asyncio.to_thread(action)
            seen = []
            deadline = asyncio.get_running_loop().time() + seconds
            while (remaining := deadline - asyncio.get_running_loop().time()) > 0:
                try:
                    seen.append(await recv_json(ws, remaining))
                except asyncio.TimeoutError:
                    break
            return snapshot, seen
    return run_async(scenario(), timeout=30)


@pytest.mark.parametrize("batched", [False, True], ids=["two-requests", "one-batch"])
def test_force_logout_race_never_shows_logged_in(machine_server, batched):
    server = session_server(machine_server, name="batch" if batched else "separate")

    def race():
        if batched:
            send(server, "session", {"type": "login"}, {"type": "forceLogout"})
        else:
            assert server.post_events("session", {"type": "login"}).status_code == 202
            assert server.post_events("session", {"type": "forceLogout"}).status_code == 202

    snapshot, seen = values_seen_during(server, race, 1.2)  # past the 500 ms login timer
    assert snapshot["state"]["value"] == "loggedOut"
    values = [message["state"]["value"] for message in seen if message.get("type") == "state"]
    assert values == ["loggingIn", "loggedOut"], seen
    assert "loggedIn" not in values
    spin = server.spin("session")
    assert spin.pop("machine") == json.loads((REPO / "Config" / "machines" / "session.json").read_text())
    assert spin == {"name": "session", "sequence": 2, "status": "running",
                    "state": {"value": "loggedOut", "context": {}}, "schema": "/v1/spins/session/schema",
                    "version": 1}


def test_restart_keeps_machine_state(machine_server, tmp_path):
    storage = tmp_path / "storage"
    server = session_server(machine_server, storage=storage, name="first")
    assert send(server, "session", {"type": "login"}, {"type": "loginOK"})["state"]["value"] == "loggedIn"
    before = server.spin("session")
    assert before["sequence"] == 2
    assert server.terminate() == 0
    again = session_server(machine_server, storage=storage, name="second")
    assert again.spin("session") == before


def test_restart_mid_timer_starts_the_timer_again(machine_server, tmp_path):
    """Stopped while `loggingIn`, the server comes back `loggingIn`; its 500 ms timer
    starts again, from the full delay, when the machine starts (nothing of the first
    wait is remembered), and then logs in."""
    storage = tmp_path / "storage"
    server = session_server(machine_server, storage=storage, name="first")
    assert send(server, "session", {"type": "login"})["state"]["value"] == "loggingIn"
    assert server.terminate() == 0
    again = session_server(machine_server, storage=storage, name="second")
    current = again.spin("session")
    assert current["state"]["value"] == "loggingIn" and current["sequence"] == 1
    logged_in = wait_for_value(again, "session", "loggedIn")
    # The timer's event is journaled like any event.
    assert logged_in["sequence"] == 2


# -- validation errors ---------------------------------------------------------------------------

DOOR = json.loads((REPO / "Config" / "machines" / "door.json").read_text())


def broken(change) -> dict:
    document = json.loads(json.dumps(DOOR))
    change(document)
    return document


REMOVE = object()


def set_path(*keys_and_value):
    """A change to a machine document: sets the value at the keys (REMOVE deletes it)."""
    *keys, value = keys_and_value

    def change(document):
        target = document
        for key in keys[:-1]:
            target = target[key]
        if value is REMOVE:
            del target[keys[-1]]
        else:
            target[keys[-1]] = value
    return change


BAD_MACHINES = {
    "unknown-target": (set_path("states", "locked", "on", "UNLOCK", 0, "target", "clsoed"),
                       'machines/x.json: states.locked.on.UNLOCK[0].target: unknown state "clsoed" (did you mean "closed"?)'),
    # A value of one member that is no form would be kept as a literal: the count would
    # become {"increment": 1}.
    "value-form-typo": (set_path("states", "closed", "on", "OPEN", "actions", 0, "set", {"opens": {"increment": 1}}),
                        'machines/x.json: states.closed.on.OPEN.actions[0].set.opens.increment: bad value: unknown value '
                        'form "increment" (did you mean "add"?)'),
    "unreachable-state": (set_path("states", "attic", {"on": {"DOWN": "closed"}}),
                          "machines/x.json: states.attic: unreachable: no transition or initial enters this state"),
    "unknown-gear": (set_path("states", "opened", "entry", 0, "gear", "windows"),
                     'machines/x.json: states.opened.entry[0].gear: unknown gear "windows": not declared in "gears"'),
    "bad-delay": (set_path("states", "opened", "after", {"0.5": "closed"}),
                  'machines/x.json: states.opened.after["0.5"]: bad delay "0.5": a delay is a positive whole number of milliseconds'),
    "unknown-action-form": (set_path("states", "opened", "entry", 0, "type", "send"),
                            'machines/x.json: states.opened.entry[0].type: unknown action: "send" is not "assign", "gear.propagate", "raise" or "cancel"'),
    "unknown-guard-form": (set_path("states", "locked", "on", "UNLOCK", 0, "guard", {"equals": ["a", "b"]}),
                           "machines/x.json: states.locked.on.UNLOCK[0].guard: unknown guard: a guard is one of"),
    "missing-initial": (set_path("initial", REMOVE),
                        'machines/x.json: initial: missing: a machine, and every state with "states", names its initial state'),
    # Typos in paths: each would otherwise run, its guard always false or its value null.
    "unknown-context-key": (set_path("states", "locked", "on", "UNLOCK", 0, "guard", {"eq": ["event.code", "context.cdoe"]}),
                            'machines/x.json: states.locked.on.UNLOCK[0].guard.eq[1]: unknown context key "cdoe" '
                            '("context" and "assign" define "code", "opens"; did you mean "code"?)'),
    "path-like-literal": (set_path("states", "locked", "on", "UNLOCK", 0, "guard", {"eq": ["event.code", "contxt.code"]}),
                          'machines/x.json: states.locked.on.UNLOCK[0].guard.eq[1]: "contxt.code" looks like a path: '
                          'did you mean "context.code"? (write {"literal": "contxt.code"} for the string)'),
    "assign-from-unknown-key": (set_path("states", "closed", "on", "OPEN", "actions", 0, "set", {"opens": {"from": "context.opnes"}}),
                                'machines/x.json: states.closed.on.OPEN.actions[0].set.opens.from: unknown context key "opnes"'),
    "after-event-field": (set_path("states", "opened", "after", "300", {"target": "closed", "guard": {"gt": ["event.dealy", 1]}}),
                          'machines/x.json: states.opened.after.300.guard.gt[0]: unknown event field "dealy": '
                          'the event of an "after" transition has "delay", "state", "type" (did you mean "delay"?)'),
    "eventless-loop": (set_path("states", "closed", "always", "closed"),
                       'machines/x.json: states.closed.always: endless loop: "always" transitions without guards go round closed → closed'),
    "conflicting-targets": (set_path("states", "locked", "on", "UNLOCK", 0, "target", ["closed", "opened"]),
                            'machines/x.json: states.locked.on.UNLOCK[0].target[1]: bad value: targets conflict: '
                            '"closed" and "opened" are in the same region'),
    "duplicate-id": (set_path("states", "gone", "id", "door"),
                     'machines/x.json: states.gone.id: duplicate id "door": "#door" must name one state'),
}


@pytest.mark.parametrize("kind", sorted(BAD_MACHINES))
def test_bad_machine_stops_start_up_with_exit_64(server_bin, tmp_path, kind):
    change, message = BAD_MACHINES[kind]
    instance = prepare(server_bin, tmp_path / "server", {"x.json": broken(change)},
                       [{"name": "x", "machine": "machines/x.json"}], [{"name": "doors"}], None)
    command = instance.command()
    result = subprocess.run(command, capture_output=True, text=True, timeout=30, cwd=instance.workdir,
                            env=instance.env)
    assert result.returncode == 64, result.stdout + result.stderr
    assert message in result.stderr, result.stderr
    # --check-config says the same and creates nothing in the storage directory.
    storage = tmp_path / "check-storage"
    storage.mkdir()
    check = [part if part != str(instance.storage) else str(storage) for part in command] + ["--check-config"]
    result = subprocess.run(check, capture_output=True, text=True, timeout=30, cwd=instance.workdir,
                            env=instance.env)
    assert result.returncode == 64, result.stdout + result.stderr
    assert message in result.stderr, result.stderr
    assert list(storage.iterdir()) == []


def test_a_path_like_string_written_as_a_literal_passes_check_config(server_bin, tmp_path):
    guard = {"eq": ["event.code", {"literal": "contxt.code"}]}
    instance = prepare(server_bin, tmp_path / "server", {"x.json": broken(set_path("states", "locked", "on", "UNLOCK", 0, "guard", guard))},
                       [{"name": "x", "machine": "machines/x.json"}], [{"name": "doors"}], None)
    result = subprocess.run([str(server_bin), "--config", str(instance.config_path), "--check-config"],
                            capture_output=True, text=True, timeout=30, cwd=instance.workdir)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_syntax_error_in_a_machine_file_gives_its_line_and_column(server_bin, tmp_path):
    instance = prepare(server_bin, tmp_path / "server", {"x.json": DOOR},
                       [{"name": "x", "machine": "machines/x.json"}], [{"name": "doors"}], None)
    # Line 3 holds a two-byte "é" before the error: the column counts characters.
    (instance.config_path.parent / "machines" / "x.json").write_text(
        '{\n  "initial": "closed",\n  "description": "é" "states": {}\n}\n', encoding="utf-8")
    result = subprocess.run([str(server_bin), "--config", str(instance.config_path), "--check-config"],
                            capture_output=True, text=True, timeout=30, cwd=instance.workdir)
    assert result.returncode == 64, result.stdout + result.stderr
    assert "machines/x.json: line 3, column 22: expected ',' or '}' after an object member" in result.stderr, result.stderr


LIGHT = {"id": "light", "initial": "green", "context": {"cycles": 0},
         "states": {"green": {"on": {"NEXT": "yellow"}}, "yellow": {"on": {"NEXT": "red"}},
                    "red": {"on": {"NEXT": {"target": "green",
                                            "actions": [{"type": "assign", "set": {"cycles": {"add": 1}}}]}}}}}


def test_a_snapshot_in_a_state_the_changed_machine_lacks_is_named_never_run_silently(machine_server, tmp_path):
    """A state renamed in the machine file (`green` → `go`) with no new `"version"`
    while a snapshot holds the old name: the Spin would take no event again, without a
    word. That Spin is unrecoverable, named with the state and the file, and the others
    run (whatever `storage.onCorruption` says: it is the definition, not the storage);
    the old file back, it runs from where it was."""
    storage = tmp_path / "storage"
    spins = [{"name": "l", "machine": "machines/light.json"}, {"name": "other", "machine": "machines/light.json"}]
    first = machine_server({"light.json": LIGHT}, spins, storage=storage, name="first")
    reply = send(first, "l", *([{"type": "NEXT"}] * 9))
    assert reply["state"] == {"value": "green", "context": {"cycles": 3}}
    assert first.terminate() == 0
    # What a compaction leaves: the state at sequence 9 as the snapshot.
    epoch = (storage / "l.epoch").read_text()
    (storage / "l.snapshot.json").write_text(json.dumps(
        {"sequence": 9, "epoch": epoch, "state": {"value": "green", "context": {"cycles": 3}}}))
    renamed = json.loads(json.dumps(LIGHT).replace('"green"', '"go"'))

    changed = machine_server({"light.json": renamed}, spins, storage=storage, name="renamed")
    spin = changed.spin("l")
    assert spin["status"] == "unrecoverable", spin
    error = spin["unrecoverable"]["error"]
    assert '"green"' in error and "light.json does not define" in error, error
    assert send(changed, "other", {"type": "NEXT"})["state"]["value"] == "yellow"
    assert "changed since this storage first ran it" in changed.log(), changed.log_tail()
    assert changed.terminate() == 0

    restored = machine_server({"light.json": LIGHT}, spins, storage=storage, name="restored")
    assert restored.spin("l")["state"] == {"value": "green", "context": {"cycles": 3}}
    assert send(restored, "l", {"type": "NEXT"})["state"]["value"] == "yellow"
