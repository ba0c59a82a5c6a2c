#!/usr/bin/env python3
"""Chaos test of a spin-server cluster: three nodes on one PostgreSQL under continuous
load while a driver kills, terminates, pauses and restarts random nodes and pauses the
database; at the end it checks what clients were promised (Tests/cluster/README.md).

Load: POSTs of `{"type":"add","id":N}` to Spin `ledger` through every node (each id
used once), a state stream of `ledger` through every node (resumed with `?since=`),
and Gear traffic (`sender` passes each `send` on Gear `relay` to `listener`).

    python3 Tests/cluster/chaos.py --duration 80 --seed 7

Exit code 0 when every check passed, 1 when one failed, 2 when the harness could not
run (no PostgreSQL, the server did not start).
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "Tests" / "e2e"))
from spin_e2e import clean_environment, free_port, server_binary  # noqa: E402

PG = REPO / "Tests" / "postgres" / "pg.sh"
CONFIG = HERE / "chaos-config.json"
NODE_NAMES = ("n1", "n2", "n3")
SPINS = ("ledger", "sender", "listener")   # configured; placement (SCALING.md) spreads their partitions
ACTIONS = ("kill", "term", "stop", "pg_pause", "pg_restart")
# Actions after which refusals are allowed for a while (a crash, a paused process, a
# database outage); every other action is a planned move, which must refuse nothing.
CRASHES = {"kill", "stop", "pg_pause", "pg_restart"}
ORIGIN = time.monotonic()


def now() -> float:
    """Seconds since the harness started: the time of every record and action."""
    return time.monotonic() - ORIGIN


def http_session() -> requests.Session:
    session = requests.Session()
    session.trust_env = False
    return session


# -- the timeline of the driver's actions -----------------------------------------------

@dataclasses.dataclass
class Action:
    t: float
    kind: str   # spawn, ready, startup, kill, term, exit, stop, cont, pg_pause, pg_resume, pg_restart, pg_start
    node: str | None
    detail: dict


@dataclasses.dataclass
class Window:
    """A span after a crash in which refusals are allowed (see `Driver.crash_window`)."""
    crash: Action
    end: float


@dataclasses.dataclass
class Cause:
    """What a refusal is attributed to: an action (None before start-up), a label for the
    summary, and whether refusals are allowed there."""
    action: Action | None
    label: str
    allowed: bool


class Timeline:
    """Every action of the driver with its time, printed as it happens."""

    def __init__(self) -> None:
        self.actions: list[Action] = []
        self.windows: list[Window] = []
        self.lock = threading.Lock()

    def log(self, kind: str, node: str | None = None, **detail) -> Action:
        action = Action(now(), kind, node, detail)
        with self.lock:
            self.actions.append(action)
        extra = " ".join(f"{key}={value}" for key, value in detail.items())
        print(f"[{action.t:7.2f}] {kind:<10} {node or '':<3} {extra}", flush=True)
        return action

    def allow(self, crash: Action, end: float) -> None:
        self.windows.append(Window(crash, end))

    def cause(self, t: float) -> Cause:
        """What a refusal at `t` is attributed to: the latest crash whose window holds
        `t` (allowed), else the last action before `t` (a planned move, or a crash whose
        window has passed: "late")."""
        holding = [window for window in self.windows if window.crash.t <= t <= window.end]
        if holding:
            crash = max(holding, key=lambda window: window.crash.t).crash
            return Cause(crash, crash.kind, True)
        earlier = [action for action in self.actions if action.t <= t]
        if not earlier:
            return Cause(None, "before start-up", False)
        last = earlier[-1]
        late = last.kind in CRASHES or last.kind in ("cont", "pg_resume", "pg_start")
        return Cause(last, f"{last.kind} (late)" if late else last.kind, False)


# -- PostgreSQL ----------------------------------------------------------------------------

def event_json(payload: bytes) -> bytes:
    """The event of a journal record's payload: after its metadata, when it has some
    (`RS {"sub":..,"consumed":{..}} LF` before the event's JSON: docs/OPERATIONS.md)."""
    if payload[:1] == b"\x1e" and b"\n" in payload:
        return payload[payload.index(b"\n") + 1:]
    return payload


class Database:
    """A throwaway PostgreSQL server (Tests/postgres/pg.sh) that the driver may pause
    (SIGSTOP of the postmaster and its backends) or stop and start."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.server_url = ""
        self.url = ""
        self.paused: list[int] = []

    def start(self) -> None:
        self.server_url = subprocess.run([str(PG), "start", str(self.directory)], check=True, capture_output=True,
                                         text=True, timeout=120).stdout.strip()
        if not self.url:
            subprocess.run(["psql", "-q", "-X", self.server_url, "-c", "CREATE DATABASE spin_chaos"], check=True,
                           capture_output=True, timeout=30)
            self.url = self.server_url.rsplit("/", 1)[0] + "/spin_chaos"

    def stop(self) -> None:
        subprocess.run([str(PG), "stop", str(self.directory)], check=True, timeout=60)

    def remove(self) -> None:
        subprocess.run([str(PG), "remove", str(self.directory)], timeout=60)

    def processes(self) -> list[int]:
        """The postmaster, then its children (backends and helpers)."""
        postmaster = int((self.directory / "data" / "postmaster.pid").read_text().split()[0])
        children = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == postmaster:
                children.append(int(entry.name))
        return [postmaster, *children]

    def pause(self) -> None:
        self.paused = self.processes()
        for pid in self.paused:
            os.kill(pid, signal.SIGSTOP)

    def resume(self) -> None:
        for pid in reversed(self.paused):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.paused = []

    def query(self, sql: str, timeout: float = 60) -> list[list[str]]:
        """Rows of `sql` through psql; raises subprocess.SubprocessError when the database
        does not answer (stopped, or paused: then after `timeout`)."""
        output = subprocess.run(["psql", "-X", "-At", "-F", "\t", self.url, "-c", sql], check=True,
                                capture_output=True, text=True, timeout=timeout,
                                env=os.environ | {"PGCONNECT_TIMEOUT": "3"}).stdout
        return [line.split("\t") for line in output.splitlines() if line]

    def journal(self, spin: str, after: int = 0, timeout: float = 60) -> list[tuple[int, dict]]:
        """(sequence, event) of the journaled events of `spin` after `after`, in order."""
        rows = self.query(f"SELECT sequence, encode(event, 'hex') FROM spin_journal WHERE spin = '{spin}' "
                          f"AND sequence > {after} ORDER BY sequence", timeout)
        return [(int(sequence), json.loads(event_json(bytes.fromhex(event)))) for sequence, event in rows]

    def lease_epochs(self) -> dict[str, int]:
        """The epoch of each partition's lease (`spin_partitions`): each take after the first is a move."""
        return {partition: int(epoch) for partition, epoch in self.query("SELECT partition, epoch FROM spin_partitions")}


class JournalTap:
    """Reads each Spin's new journal rows every few seconds while the load runs: the
    nodes compact their journals (`storage.retainEvents`, 10000 by default, deletes older
    rows), and the checks need every event ever committed. The last `overlap` rows are
    read again each time, so that a committed row that changes is seen."""

    def __init__(self, database: Database, spins: tuple[str, ...], interval: float = 3, overlap: int = 2000) -> None:
        self.database = database
        self.interval = interval
        self.overlap = overlap
        self.seen: dict[str, dict[int, dict]] = {spin: {} for spin in spins}
        self.changed: list[str] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=90)

    def run(self) -> None:
        while not self.stopping.wait(self.interval):
            self.read()

    def read(self) -> None:
        for spin, seen in self.seen.items():
            try:
                rows = self.database.journal(spin, after=max(seen, default=0) - self.overlap, timeout=10)
            except subprocess.SubprocessError:
                return   # the driver stopped or paused the database: next time
            for sequence, event in rows:
                if sequence in seen and seen[sequence] != event:
                    self.changed.append(f"{spin} {sequence}: {seen[sequence]} became {event}")
                seen[sequence] = event

    def merged(self, spin: str, final: list[tuple[int, dict]]) -> tuple[list[tuple[int, dict]], list[str]]:
        """The rows compaction deleted (read before) followed by the journal at the end;
        and what is wrong: rows read before that vanished from or changed in the part
        the journal still holds."""
        held = dict(final)
        first = min(held, default=sys.maxsize)
        problems = [line for line in self.changed if line.startswith(f"{spin} ")]
        for sequence, event in self.seen[spin].items():
            if sequence >= first and sequence not in held:
                problems.append(f"{spin} {sequence}: {event} was committed, then vanished")
            elif sequence in held and held[sequence] != event:
                problems.append(f"{spin} {sequence}: {event} became {held[sequence]}")
        compacted = {sequence: event for sequence, event in self.seen[spin].items() if sequence < first}
        return sorted((compacted | held).items()), problems


# -- the nodes -------------------------------------------------------------------------------

class Node:
    """One spin-server process, started again on the same port after each stop. `serving`
    is what a load balancer knows: set once `/readyz` answers 200 after a start, cleared
    when the driver kills or terminates it (not when it pauses it: nobody knows then)."""

    def __init__(self, name: str, workdir: Path, database_url: str, lease_seconds: int) -> None:
        self.name = name
        self.port = free_port()
        self.storage = workdir / name
        self.log_path = workdir / f"{name}.log"
        self.env = clean_environment({"SPIN_STORAGE_BACKEND": "postgres", "SPIN_DATABASE_URL": database_url,
                                      "SPIN_NODE": name, "SPIN_CLUSTER_LEASE_SECONDS": str(lease_seconds)})
        self.process: subprocess.Popen | None = None
        self.serving = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_base(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def spawn(self) -> None:
        self.storage.mkdir(parents=True, exist_ok=True)
        command = [str(server_binary()), "--host", "127.0.0.1", "--port", str(self.port),
                   "--storage", str(self.storage), "--config", str(CONFIG)]
        with open(self.log_path, "ab") as log:
            log.write(f"--- chaos: started at {now():.2f}\n".encode())
            log.flush()
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=self.env)

    def wait_ready(self, timeout: float = 60) -> None:
        """Until `/readyz` answers 200; raises if the process exits or time runs out."""
        http = http_session()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode} while starting "
                                   f"(see {self.log_path})")
            try:
                if http.get(self.base_url + "/readyz", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} was not ready within {timeout} s (see {self.log_path})")

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def send(self, number: int) -> None:
        self.process.send_signal(number)

    def wait_exit(self, timeout: float) -> int | None:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def get(self, path: str) -> requests.Response:
        return http_session().get(self.base_url + path, timeout=5)


# -- load: POSTs ---------------------------------------------------------------------------------

@dataclasses.dataclass(slots=True)   # a long run keeps hundreds of thousands
class Post:
    """One POST and what came of it. outcome: acked (202), refused (an answer that
    promises nothing was applied), unknown (502 proxy_outcome_unknown, or the connection
    dropped after the request went out), hang (no answer within the client timeout),
    unreachable (no connection: nothing was sent)."""
    spin: str
    node: str
    id: int
    started: float
    ended: float
    outcome: str
    status: int | None = None
    code: str = ""
    sequence: int | None = None
    retry_after: str | None = None
    detail: str = ""


def send(request, timeout: float) -> tuple[requests.Response | None, str, str]:
    """Runs `request()` (one HTTP call): (the response, "", "") when an answer came, else
    (None, outcome, detail) with outcome unreachable (no connection: nothing was sent),
    hang (no answer within `timeout`) or unknown (the connection dropped after the
    request went out, or the answer was cut short)."""
    try:
        return request(), "", ""
    except requests.exceptions.ConnectTimeout as error:
        return None, "unreachable", type(error).__name__
    except requests.exceptions.ReadTimeout:
        return None, "hang", f"no answer within {timeout} s"
    except requests.exceptions.ConnectionError as error:
        refused = "NewConnectionError" in repr(error) or "Connection refused" in str(error)
        return None, "unreachable" if refused else "unknown", str(error)[:200]
    except requests.RequestException as error:
        # The answer's head came and its body did not (ChunkedEncodingError: the node was
        # killed while writing it), or another failure after the request went out: it
        # may have been applied.
        return None, "unknown", f"{type(error).__name__}: {str(error)[:200]}"


def error_of(response: requests.Response) -> tuple[str, str]:
    """An answer that is not a success: its error code, and its outcome (unknown for 502
    proxy_outcome_unknown, which may have been applied; refused otherwise)."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    code = body.get("error", {}).get("code", "") if isinstance(body, dict) else ""
    return code, "unknown" if (response.status_code, code) == (502, "proxy_outcome_unknown") else "refused"


def post_once(http: requests.Session, node: Node, spin: str, event: dict, timeout: float) -> Post:
    started = now()
    record = lambda outcome, **fields: Post(spin, node.name, event["id"], started, now(), outcome, **fields)
    response, outcome, detail = send(lambda: http.post(f"{node.base_url}/v1/spins/{spin}/events", json=event,
                                                       timeout=timeout), timeout)
    if response is None:
        return record(outcome, detail=detail)
    if response.status_code == 202:
        try:
            sequence = response.json().get("sequence")
        except ValueError:
            sequence = None
        return record("acked", status=202, sequence=sequence)
    code, outcome = error_of(response)
    return record(outcome, status=response.status_code, code=code, retry_after=response.headers.get("Retry-After"),
                  detail=response.text[:200])


class Posters:
    """Threads POSTing events with unique ids until stopped; each thread goes round its
    list of nodes, skipping those not serving."""

    def __init__(self, spin: str, event_type: str, routes: list[list[Node]], ids: itertools.count,
                 pause: float, timeout: float) -> None:
        self.spin = spin
        self.event_type = event_type
        self.ids = ids
        self.pause = pause
        self.timeout = timeout
        self.posts: list[Post] = []
        self.last_trouble = 0.0   # when an answer was last anything but a 202
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(route,), daemon=True) for route in routes]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def run(self, route: list[Node]) -> None:
        http = http_session()
        for node in itertools.cycle(route):
            if self.stopping.is_set():
                return
            if not node.serving.is_set():
                time.sleep(0.05)
                continue
            post = post_once(http, node, self.spin, {"type": self.event_type, "id": next(self.ids)}, self.timeout)
            with self.lock:
                self.posts.append(post)
                if post.outcome not in ("acked", "unreachable"):
                    self.last_trouble = post.ended
            time.sleep(self.pause if post.outcome == "acked" else max(self.pause, 0.05))

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=self.timeout + 5)


# -- load: state streams ----------------------------------------------------------------------

@dataclasses.dataclass(slots=True)
class StreamMessage:
    node: str
    connection: int      # counts the connections of this node's reader
    since: int | None    # what the connection asked to resume after
    t: float
    type: str
    sequence: int | None
    epoch: str | None
    event_id: int | None


@dataclasses.dataclass
class StreamRefusal:
    node: str
    t: float
    status: int | None
    retry_after: str | None
    detail: str


class StreamReaders:
    """One WebSocket state stream of a Spin through every node, in a thread of its own;
    a closed stream is opened again (on the same node, once it serves) with
    `?since=<last sequence>`."""

    def __init__(self, nodes: list[Node], spin: str, timeout: float) -> None:
        self.nodes = nodes
        self.spin = spin
        self.timeout = timeout
        self.messages: list[StreamMessage] = []
        self.refusals: list[StreamRefusal] = []
        self.last_trouble = 0.0   # when a handshake was last refused
        self.closes: list[tuple[str, float, str]] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self.follow_all()), daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=self.timeout + 10)

    async def follow_all(self) -> None:
        await asyncio.gather(*(self.follow(node) for node in self.nodes))

    async def follow(self, node: Node) -> None:
        last: int | None = None
        for connection in itertools.count(1):
            if self.stopping.is_set():
                return
            if not node.serving.is_set():
                await asyncio.sleep(0.1)
                continue
            last = await self.read(node, connection, last)
            await asyncio.sleep(0.2)

    async def read(self, node: Node, connection: int, since: int | None) -> int | None:
        """Reads one connection until it closes; returns the last sequence seen."""
        url = f"{node.ws_base}/v1/spins/{self.spin}/stream" + (f"?since={since}" if since is not None else "")
        last = since
        try:
            async with connect(url, open_timeout=self.timeout, close_timeout=2, proxy=None, max_size=None) as stream:
                while not self.stopping.is_set():
                    try:
                        raw = await asyncio.wait_for(stream.recv(), 1)
                    except TimeoutError:
                        continue
                    message = json.loads(raw)
                    event = message.get("event") or {}
                    self.messages.append(StreamMessage(node.name, connection, since, now(), message.get("type", ""),
                                                       message.get("sequence"), message.get("epoch"),
                                                       event.get("id") if isinstance(event, dict) else None))
                    if message.get("type") in ("snapshot", "state"):
                        last = message["sequence"]
        except InvalidStatus as error:
            self.last_trouble = now()
            self.refusals.append(StreamRefusal(node.name, now(), error.response.status_code,
                                               error.response.headers.get("Retry-After"),
                                               (error.response.body or b"")[:200].decode(errors="replace")))
        except (ConnectionClosed, InvalidHandshake, OSError, TimeoutError) as error:
            self.closes.append((node.name, now(), f"{type(error).__name__}: {error}"[:200]))
        return last


# -- load: Spins made and deleted at run time -------------------------------------------------------

@dataclasses.dataclass(slots=True)
class MadeOp:
    """One PUT, DELETE or POST of a `tally-*` Spin and what came of it (outcome as `Post`)."""
    name: str
    node: str
    op: str              # make, delete, add
    started: float
    ended: float
    outcome: str         # done (201/200/202), refused, unknown, hang, unreachable
    status: int | None = None
    code: str = ""
    retry_after: str | None = None
    uncertain: bool = False  # an earlier unknown make or delete left the name either way


class Makers:
    """Threads making (`PUT`), feeding (`POST {"type":"add"}`) and deleting Spins of kind
    `tally` through random nodes, thousands of them over a run. Each thread owns its names,
    so one name's operations never overlap, and knows what each should be at the end:
    absent, or present with as many adds as were acknowledged since it was last made; a
    name an unknown outcome touched is left out of that check (counted)."""

    def __init__(self, nodes: list[Node], threads: int, names: int, timeout: float, seed: int) -> None:
        self.nodes = nodes
        self.timeout = timeout
        self.ops: list[MadeOp] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.last_trouble = 0.0
        # name → ("present", adds acknowledged, adds unknown) | ("absent",) | ("uncertain",)
        self.expected: dict[str, tuple] = {}
        self.threads = [threading.Thread(target=self.run, args=(index, names, random.Random(seed * 31 + index)), daemon=True)
                        for index in range(threads)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=self.timeout + 5)

    def once(self, http: requests.Session, node: Node, name: str, op: str) -> MadeOp:
        started = now()
        record = lambda outcome, **fields: MadeOp(name, node.name, op, started, now(), outcome, **fields)
        url = f"{node.base_url}/v1/spins/{name}"
        calls = {"make": lambda: http.put(url, json={"kind": "tally"}, timeout=self.timeout),
                 "delete": lambda: http.delete(url, timeout=self.timeout),
                 "add": lambda: http.post(url + "/events", json={"type": "add"}, timeout=self.timeout)}
        response, outcome, _ = send(calls[op], self.timeout)
        if response is None:
            return record(outcome)
        status = response.status_code
        if (op, status) in (("make", 201), ("delete", 200), ("add", 202)):
            return record("done", status=status)
        code, outcome = error_of(response)
        return record(outcome, status=status, code=code, retry_after=response.headers.get("Retry-After"))

    def run(self, index: int, count: int, rng: random.Random) -> None:
        http = http_session()
        names = [f"tally-{index}-{number}" for number in range(count)]
        state: dict[str, tuple] = {name: ("absent",) for name in names}
        while not self.stopping.is_set():
            serving = [node for node in self.nodes if node.serving.is_set()]
            if not serving:
                time.sleep(0.05)
                continue
            node = rng.choice(serving)
            name = rng.choice(names)
            current = state[name]
            if current[0] == "absent":
                op = "make"
            elif current[0] == "uncertain":
                op = rng.choice(("make", "delete"))
            else:
                op = "delete" if rng.random() < 0.15 else "add"
            result = self.once(http, node, name, op)
            result.uncertain = current[0] == "uncertain"
            if result.outcome == "done":
                if op == "make":
                    state[name] = ("present", 0, 0)
                elif op == "delete":
                    state[name] = ("absent",)
                elif current[0] == "present":
                    state[name] = ("present", current[1] + 1, current[2])
            elif result.outcome in ("unknown", "hang"):
                if op == "add" and current[0] == "present":
                    state[name] = ("present", current[1], current[2] + 1)
                else:
                    state[name] = ("uncertain",)
            elif result.outcome == "refused" and op == "make" and result.status == 200:
                state[name] = ("uncertain",)      # existed already: an earlier unknown make landed
            with self.lock:
                self.ops.append(result)
                if result.outcome not in ("done", "unreachable"):
                    self.last_trouble = result.ended
            if result.outcome != "done":
                time.sleep(0.05)
        with self.lock:
            self.expected.update(state)


class Load:
    """All of the load: POSTs to `ledger` through every node, Gear traffic through the
    nodes in turn, a `ledger` stream through every node, Spins made, fed and deleted."""

    def __init__(self, nodes: list[Node], args: argparse.Namespace, seed: int = 0) -> None:
        self.nodes = nodes
        ids = itertools.count(1)
        self.ledger = Posters("ledger", "add", [[node] for node in nodes for _ in range(args.posters)], ids,
                              args.pause, args.timeout)
        self.gear = Posters("sender", "send", [nodes], ids, 0.1, args.timeout)
        self.streams = StreamReaders(nodes, "ledger", args.timeout)
        self.makers = Makers(nodes, args.makers, args.made_names, args.timeout, seed)

    def start(self) -> None:
        for node in self.nodes:
            node.serving.set()
        for part in (self.ledger, self.gear, self.streams, self.makers):
            part.start()

    def stop(self) -> None:
        for part in (self.ledger, self.gear, self.streams, self.makers):
            part.stop()

    def posts(self) -> list[Post]:
        return self.ledger.posts + self.gear.posts

    def last_refusal(self) -> float:
        return max(self.ledger.last_trouble, self.gear.last_trouble, self.streams.last_trouble, self.makers.last_trouble)


# -- the driver ------------------------------------------------------------------------------------

@dataclasses.dataclass
class GracefulStop:
    node: str
    exit_code: int | None   # None: it did not exit in time and was killed
    seconds: float


class Driver:
    """Picks a random node and does one chaos action at a time; every node is back and
    serving after each action. The next action waits until the refusals the last one may
    cause are no longer allowed, plus 1–3 s of steady load, so that each refusal has one
    cause (a planned move inside a crash's window would pass unseen). Actions are dealt
    from a shuffled deck holding each once, so a short run still does each kind."""

    def __init__(self, nodes: list[Node], database: Database, timeline: Timeline, rng: random.Random,
                 lease: int, slack: float, last_refusal) -> None:
        self.nodes = nodes
        self.last_refusal = last_refusal   # () -> the time a client last got anything but a 202
        self.database = database
        self.timeline = timeline
        self.rng = rng
        self.lease = lease
        self.slack = slack
        self.counts: collections.Counter[str] = collections.Counter()
        self.graceful: list[GracefulStop] = []
        self.problems: list[str] = []

    def run(self, until: float) -> None:
        deck: list[str] = []
        while True:
            self.wait_for_quiet(until)
            self.restart_the_dead()
            if now() >= until:
                return
            if not deck:
                deck = list(ACTIONS)
                self.rng.shuffle(deck)
            action = deck.pop()
            self.counts[action] += 1
            getattr(self, action)(self.rng.choice(self.nodes))

    @staticmethod
    def sleep_until(t: float) -> None:
        time.sleep(max(0.0, t - now()))

    def crash_window(self, crash: Action, back: float) -> None:
        """Refusals are allowed from the crash until one lease (plus slack) after it, and
        after a pause until the slack after `back` (the paused thing runs again): a woken
        node answers what waited for it and finds its leases gone; a database back from a
        pause or restart lets the nodes renew or retake their leases."""
        end = crash.t + self.lease + self.slack
        if crash.kind == "stop":
            end = max(end, back + self.slack)
        elif crash.kind != "kill":
            end = back + self.lease + self.slack
        self.timeline.allow(crash, end)

    def wait_for_quiet(self, until: float) -> None:
        """Until every crash window has closed and no client saw a refusal for 2 s (at
        most 20 s more: a cluster that keeps refusing is reported, not waited for), then
        1–3 s of steady load."""
        self.sleep_until(min(until, max([now(), *(window.end for window in self.timeline.windows)])))
        deadline = min(until, now() + 20)
        while now() < deadline and now() - self.last_refusal() < 2:
            time.sleep(0.2)
        self.sleep_until(min(until, now() + self.rng.uniform(1, 3)))

    def kill(self, node: Node) -> None:
        node.serving.clear()
        node.send(signal.SIGKILL)
        killed = self.timeline.log("kill", node.name)
        node.wait_exit(10)
        self.crash_window(killed, killed.t)
        # Back once the crash's window is over: the join is a planned move of its own.
        self.sleep_until(self.timeline.windows[-1].end + self.rng.uniform(0, 1))
        self.restart(node)

    def term(self, node: Node) -> None:
        node.serving.clear()
        node.send(signal.SIGTERM)
        termed = self.timeline.log("term", node.name)
        code = node.wait_exit(30)
        seconds = now() - termed.t
        if code is None:
            node.send(signal.SIGKILL)
            node.wait_exit(10)
        self.graceful.append(GracefulStop(node.name, code, seconds))
        self.timeline.log("exit", node.name, code=code, seconds=f"{seconds:.2f}")
        time.sleep(self.rng.uniform(0.5, 2))
        self.restart(node)

    def restart_the_dead(self) -> None:
        """A node that exited without being told to is a failure; it is started again
        so that the run goes on."""
        for node in self.nodes:
            if node.serving.is_set() and not node.running():
                node.serving.clear()
                self.timeline.log("died", node.name, code=node.process.returncode)
                self.problems.append(f"{node.name} exited by itself with {node.process.returncode} "
                                     f"(see {node.log_path})")
                self.restart(node)

    def restart(self, node: Node) -> None:
        for _ in range(3):
            self.timeline.log("spawn", node.name)
            node.spawn()
            try:
                node.wait_ready()
                break
            except RuntimeError as error:
                self.problems.append(f"restart of {node.name}: {error}")
                if node.running():
                    node.send(signal.SIGKILL)
                    node.wait_exit(10)
                time.sleep(1)
        else:
            raise RuntimeError(f"{node.name} did not start again: {self.problems[-1]}")
        self.timeline.log("ready", node.name)
        node.serving.set()

    def stop(self, node: Node) -> None:
        node.send(signal.SIGSTOP)
        stopped = self.timeline.log("stop", node.name)
        time.sleep(self.lease + self.rng.uniform(1, 2))
        node.send(signal.SIGCONT)
        woken = self.timeline.log("cont", node.name)
        self.crash_window(stopped, woken.t)

    def pg_pause(self, _node: Node) -> None:
        self.database.pause()
        paused = self.timeline.log("pg_pause", processes=len(self.database.paused))
        time.sleep(self.rng.uniform(0.5, 2))
        self.database.resume()
        resumed = self.timeline.log("pg_resume")
        self.crash_window(paused, resumed.t)

    def pg_restart(self, _node: Node) -> None:
        stopped = self.timeline.log("pg_restart")
        self.database.stop()
        time.sleep(self.rng.uniform(0.5, 2))
        self.database.start()
        started = self.timeline.log("pg_start")
        self.crash_window(stopped, started.t)


# -- the end of the run -------------------------------------------------------------------------

def readings(nodes: list[Node]) -> dict[str, dict[str, object]]:
    """GET /v1/spins/{spin} through every node: node → spin → (sequence, state) or an error."""
    result: dict[str, dict[str, object]] = {}
    for node in nodes:
        result[node.name] = {}
        for spin in SPINS:
            try:
                response = node.get(f"/v1/spins/{spin}")
                body = response.json() if response.status_code == 200 else None
                result[node.name][spin] = (body["sequence"], body["state"]) if body else f"HTTP {response.status_code}"
            except requests.RequestException as error:
                result[node.name][spin] = type(error).__name__
    return result


def settle(nodes: list[Node], timeout: float = 60) -> dict[str, dict[str, object]]:
    """Waits until the listener caught every Gear event the sender journaled, then until
    every node answers the same state of every Spin twice in a row."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reading = readings(nodes[:1])[nodes[0].name]
        sender, listener = reading.get("sender"), reading.get("listener")
        if isinstance(sender, tuple) and isinstance(listener, tuple) and \
                listener[1]["context"]["received"] >= sender[1]["context"]["sent"]:
            break
        time.sleep(0.5)
    previous = None
    while time.monotonic() < deadline:
        current = readings(nodes)
        agreed = all(current[node.name] == current[nodes[0].name] for node in nodes) and \
            all(isinstance(value, tuple) for value in current[nodes[0].name].values())
        if agreed and current == previous:
            return current
        previous = current
        time.sleep(1)
    return previous


def stop_all(nodes: list[Node], timeline: Timeline) -> list[GracefulStop]:
    """SIGTERM to every node at once, as a deployment's shutdown does."""
    started = now()
    for node in nodes:
        node.serving.clear()
        node.send(signal.SIGTERM)
    timeline.log("term", "all")
    stops = []
    for node in nodes:
        code = node.wait_exit(max(1, 30 - (now() - started)))
        if code is None:
            node.send(signal.SIGKILL)
            node.wait_exit(10)
        stops.append(GracefulStop(node.name, code, now() - started))
    return stops


# -- checks ----------------------------------------------------------------------------------------

CHECKS = (
    "journals whole: no hole, no committed row changed or vanished",
    "ledger: acknowledged events exactly once",
    "sender: acknowledged events exactly once",
    "streams without gaps or duplicates",
    "streams show what the journal holds",
    "no refusal in a planned move, none late after a crash",
    "every refusal a 503 with Retry-After",
    "never a hang",
    "Gear events exactly once, in order, and only of journaled events",
    "final state equal on every node",
    "graceful stops exit 0",
    "nodes run until stopped and start again",
    "made Spins: every 201 there, every deleted one gone, acknowledged adds exactly once",
)


class Report:
    """Failed checks (each a line) and notes (flagged, not failures), capped per check."""

    def __init__(self) -> None:
        self.failures: collections.defaultdict[str, list[str]] = collections.defaultdict(list)
        self.notes: collections.defaultdict[str, list[str]] = collections.defaultdict(list)
        self.skipped: dict[str, str] = {}

    def fail(self, check: str, line: str) -> None:
        self.failures[check].append(line)

    def note(self, check: str, line: str) -> None:
        self.notes[check].append(line)

    @property
    def failed(self) -> int:
        return sum(len(lines) for lines in self.failures.values())

    def print(self, limit: int = 8) -> None:
        for check in CHECKS:
            if check in self.skipped:
                print(f"-      {check}: not run ({self.skipped[check]})")
                continue
            lines = self.failures.get(check, [])
            print(f"{'FAILED' if lines else 'ok    '} {check}" + (f": {len(lines)}" if lines else ""))
            self.print_lines(lines, limit)
        for check, lines in self.notes.items():
            print(f"flagged {check}: {len(lines)}")
            self.print_lines(lines, limit)

    @staticmethod
    def print_lines(lines: list[str], limit: int) -> None:
        for line in lines[:limit]:
            print(f"    {line}")
        if len(lines) > limit:
            print(f"    ... {len(lines) - limit} more")


def ids_by_sequence(journal: list[tuple[int, dict]]) -> dict[int, int | None]:
    return {sequence: as_id(event.get("id")) for sequence, event in journal}


def as_id(value) -> int | None:
    return int(value) if isinstance(value, (int, float)) else None


def check_journal(report: Report, spin: str, journal: list[tuple[int, dict]], problems: list[str]) -> None:
    """The journal holds sequences 1, 2, 3, ... with none missing, and no row the tap
    read changed or vanished later."""
    check = "journals whole: no hole, no committed row changed or vanished"
    for line in problems:
        report.fail(check, line)
    for (sequence, _), (after, _) in zip(journal, journal[1:]):
        if after != sequence + 1:
            report.fail(check, f"{spin}: the journal jumps from {sequence} to {after}")
    if journal and journal[0][0] != 1:
        report.fail(check, f"{spin}: the journal starts at {journal[0][0]}")


def check_ids(report: Report, spin: str, posts: list[Post], journal: list[tuple[int, dict]]) -> None:
    """Every acknowledged id journaled exactly once at its acknowledged sequence; no id
    twice; none that was refused; none nobody sent."""
    check = f"{spin}: acknowledged events exactly once"
    sequences: collections.defaultdict[int, list[int]] = collections.defaultdict(list)
    for sequence, identifier in ids_by_sequence(journal).items():
        sequences[identifier].append(sequence)
    for identifier, found in sequences.items():
        if identifier is None:
            report.fail(check, f"journaled events without an id at sequences {found[:5]}")
        elif len(found) > 1:
            report.fail(check, f"id {identifier} journaled {len(found)} times, at sequences {found}")
    sent = {post.id for post in posts}
    for identifier in set(sequences) - sent - {None}:
        report.fail(check, f"id {identifier} is journaled but was never sent")
    for post in posts:
        found = sequences.get(post.id, [])
        if post.outcome == "acked" and found != [post.sequence]:
            report.fail(check, f"id {post.id} acknowledged at {post.sequence} by {post.node} at "
                               f"{post.ended:.2f}, " + (f"journaled at {found}" if found else "not journaled (lost)"))
        elif post.outcome in ("refused", "unreachable") and found:
            report.fail(check, f"id {post.id} was {post.outcome} ({post.status} {post.code}) by {post.node} at "
                               f"{post.ended:.2f} yet journaled at {found}")


@dataclasses.dataclass
class Trouble:
    """An answer that was not a 202 (POST), or a stream refused at its handshake."""
    t: float
    what: str          # which request, through which node
    answer: str        # outcome, status and code, for the summary
    outcome: str       # refused, unknown or hang (Post.outcome); refused for a stream
    proper: bool       # a refusal that is a 503 with Retry-After (unknown outcomes: True)
    detail: str


def troubles(posts: list[Post], stream_refusals: list[StreamRefusal]) -> list[Trouble]:
    found = []
    for post in posts:
        if post.outcome in ("acked", "unreachable"):
            continue
        answer = f"{post.outcome} {post.status} {post.code}" if post.status else post.outcome
        proper = post.outcome != "refused" or (post.status == 503 and bool(post.retry_after))
        detail = f"Retry-After={post.retry_after} {post.detail}" if post.outcome == "refused" else post.detail
        found.append(Trouble(post.ended, f"{post.spin} id {post.id} via {post.node} at {post.ended:.2f}", answer,
                             post.outcome, proper, detail))
    for refusal in stream_refusals:
        found.append(Trouble(refusal.t, f"stream via {refusal.node} at {refusal.t:.2f}",
                             f"stream refused {refusal.status}", "refused",
                             refusal.status == 503 and bool(refusal.retry_after),
                             f"Retry-After={refusal.retry_after} {refusal.detail}"))
    return sorted(found, key=lambda trouble: trouble.t)


def check_answers(report: Report, found: list[Trouble], timeline: Timeline) -> dict:
    """Every answer that is not a 202, and every stream refused at its handshake: a 503
    with Retry-After, within a crash's window; never a hang. Returns them counted by
    cause, "allowed" (in a crash's window) and "violations", and per action of the driver
    (how many, and until how long after the action)."""
    by_cause = {"allowed": collections.Counter(), "violations": collections.Counter()}
    by_action: dict[int, dict] = {}
    for trouble in found:
        cause = timeline.cause(trouble.t)
        allowed = cause.allowed and trouble.outcome != "hang"
        by_cause["allowed" if allowed else "violations"][f"{cause.label}: {trouble.answer}"] += 1
        if cause.action is not None:
            entry = by_action.setdefault(id(cause.action), {"t": round(cause.action.t, 2), "action": cause.label,
                                                            "node": cause.action.node, "count": 0})
            entry["count"] += 1
            entry["until_s"] = round(trouble.t - cause.action.t, 2)
        if trouble.outcome == "hang":
            report.fail("never a hang", f"{trouble.what}: {trouble.detail} (after {cause.label})")
        elif not trouble.proper:
            report.fail("every refusal a 503 with Retry-After",
                        f"{trouble.what}: {trouble.answer} (after {cause.label}) {trouble.detail}")
        if trouble.outcome != "hang" and not cause.allowed:
            report.fail("no refusal in a planned move, none late after a crash",
                        f"{trouble.what}: {trouble.answer} after {cause.label}")
    return {"by_cause": {kind: dict(sorted(counts.items())) for kind, counts in by_cause.items()},
            "by_action": sorted(by_action.values(), key=lambda entry: entry["t"])}


def check_streams(report: Report, messages: list[StreamMessage], journal: list[tuple[int, dict]]) -> dict[str, int]:
    """Per node: sequences strictly increasing with no gap within an epoch, across
    reconnects; each state message's event is the journal's at that sequence."""
    journaled = ids_by_sequence(journal)
    counts = collections.Counter()
    by_node: collections.defaultdict[str, list[StreamMessage]] = collections.defaultdict(list)
    for message in messages:
        by_node[message.node].append(message)
    for node, stream in by_node.items():
        last_sequence, last_epoch, connection = None, None, None
        for message in stream:
            reconnected = message.connection != connection
            connection = message.connection
            counts["connections"] += reconnected
            counts["messages"] += 1
            where = f"{node} at {message.t:.2f} (connection {message.connection}, since {message.since})"
            if message.type == "snapshot":
                if last_epoch is not None and message.epoch != last_epoch:
                    counts["epoch changes"] += 1
                elif last_sequence is not None:
                    counts["snapshots on resume" if reconnected else "snapshots mid-stream"] += 1
                    report.note("snapshot instead of a resume in the same epoch",
                                f"{where}: snapshot at {message.sequence} after {last_sequence}")
                    if message.sequence < last_sequence:
                        report.fail("streams without gaps or duplicates",
                                    f"{where}: snapshot at {message.sequence} went back from {last_sequence}")
            elif message.type == "state":
                if last_sequence is None:
                    report.fail("streams without gaps or duplicates", f"{where}: a state before any snapshot")
                elif message.epoch != last_epoch:
                    counts["epoch changes"] += 1
                elif message.sequence != last_sequence + 1:
                    kind = "gap" if message.sequence > last_sequence + 1 else "duplicate or step back"
                    report.fail("streams without gaps or duplicates",
                                f"{where}: {kind}: {message.sequence} after {last_sequence}")
                if message.event_id is not None and journaled.get(message.sequence) != message.event_id:
                    report.fail("streams show what the journal holds",
                                f"{where}: id {message.event_id} at {message.sequence}, journal has "
                                f"{journaled.get(message.sequence)}")
            else:
                continue
            last_sequence, last_epoch = message.sequence, message.epoch
    return dict(counts)


GEAR_OF_REFUSED = "Gear events of sends whose journal write failed (flagged, not failed: --lenient-gear)"


def check_gear(report: Report, posts: list[Post], sends: list[tuple[int, dict]],
               receives: list[tuple[int, dict]], strict: bool) -> dict[str, int]:
    """Each Gear event the sender journaled reaches the listener exactly once, in the
    order the sender journaled them, on whichever node serves the listener, across kills,
    stops, pauses and database outages (docs/OPERATIONS.md, "Gear delivery"); none of a
    send the sender did not journal (one answered "nothing was applied", say) arrives: a
    Gear event leaves only once its cause is durable. `--lenient-gear` only flags a
    received event of a send refused after it was applied (what servers before Gear
    delivery was durable did)."""
    check = "Gear events exactly once, in order, and only of journaled events"
    answers = {post.id: f"{post.outcome} {post.status or ''} {post.code} via {post.node} at {post.ended:.2f}"
               for post in posts}
    order = [as_id(event.get("id")) for _, event in sends]
    sent = set(order)
    arrived = [as_id(event.get("id")) for _, event in receives]
    received = collections.Counter(arrived)
    for identifier, times in received.items():
        if times > 1:
            report.fail(check, f"id {identifier} received {times} times")
        if identifier not in sent:
            line = f"id {identifier} received, but the sender did not journal it (its POST: {answers.get(identifier, 'none')})"
            answer = answers.get(identifier, "")
            refused_after_apply = "storage_unavailable" in answer or "spin_unavailable" in answer
            if refused_after_apply and not strict:
                report.note(GEAR_OF_REFUSED, line)
            else:
                report.fail(check, line)
    missed = [identifier for identifier in order if identifier not in received]
    for identifier in missed[:20]:
        report.fail(check, f"id {identifier} journaled by the sender, never received "
                           f"(its POST: {answers.get(identifier, 'none')})")
    if len(missed) > 20:
        report.fail(check, f"... and {len(missed) - 20} more never received")
    in_order = [identifier for identifier in arrived if identifier in sent]
    expected = [identifier for identifier in order if identifier in received]
    if in_order != expected:
        first = next(index for index, (a, b) in enumerate(zip(in_order, expected)) if a != b) \
            if any(a != b for a, b in zip(in_order, expected)) else min(len(in_order), len(expected))
        report.fail(check, f"received out of the sender's order from the {first + 1}th event on: "
                           f"{in_order[first:first + 5]} where the sender journaled {expected[first:first + 5]}")
    return {"gear_sent": len(sent), "gear_delivered": len(set(received) & sent), "gear_missed": len(missed)}


def check_final(report: Report, final: dict[str, dict[str, object]], ledger: list[tuple[int, dict]]) -> None:
    """Every node answers the same state of every Spin, and the ledger's count is the
    number of adds in its journal."""
    first = next(iter(final.values()))
    for node, spins in final.items():
        for spin, reading in spins.items():
            if not isinstance(reading, tuple):
                report.fail("final state equal on every node", f"{node}: {spin}: {reading}")
            elif reading != first[spin]:
                report.fail("final state equal on every node", f"{node}: {spin}: {reading} != {first[spin]}")
    reading = first.get("ledger")
    if isinstance(reading, tuple):
        sequence, state = reading
        count = state.get("context", {}).get("count")
        if count != len(ledger) or (ledger and sequence != ledger[-1][0]):
            report.fail("final state equal on every node",
                        f"ledger at {sequence} counts {count}, its journal holds {len(ledger)} adds up to "
                        f"{ledger[-1][0] if ledger else 0}")


def check_made(report: Report, makers: Makers, node: Node) -> dict:
    """After the load, through one node: each Spin a maker last made is there with exactly
    its acknowledged adds (plus at most the unknown ones), each it deleted answers 404; a
    made-Spin answer other than success is a 503 with Retry-After (or a 404 for a name
    whose make was refused meanwhile, or to a delete after an unknown outcome left the
    name uncertain)."""
    check = "made Spins: every 201 there, every deleted one gone, acknowledged adds exactly once"
    http = http_session()
    counts = collections.Counter()
    for name, expected in sorted(makers.expected.items()):
        counts[expected[0]] += 1
        if expected[0] == "uncertain":
            continue
        try:
            response = http.get(f"{node.base_url}/v1/spins/{name}", timeout=30)
        except requests.RequestException as error:
            report.fail(check, f"{name}: GET failed: {error!r}")
            continue
        if expected[0] == "absent":
            if response.status_code != 404:
                report.fail(check, f"{name}: deleted (or never made), yet GET answers {response.status_code}")
            continue
        if response.status_code != 200:
            report.fail(check, f"{name}: made (201), yet GET answers {response.status_code}: {response.text[:200]}")
            continue
        tally = response.json()["state"]["context"]["n"]
        acked, unknown = expected[1], expected[2]
        if not acked <= tally <= acked + unknown:
            report.fail(check, f"{name}: {tally} adds applied, {acked} acknowledged (+{unknown} unknown)")
    for op in makers.ops:
        if op.outcome in ("done", "unreachable", "unknown"):
            continue
        if op.outcome == "hang":
            report.fail("never a hang", f"{op.op} {op.name} through {op.node} at {op.started:.2f}: no answer")
        elif op.status != 503 or not op.retry_after:
            # 404 to an add, 200 to a make (it existed), and 404 to a delete of a name an
            # unknown make or delete left uncertain (the delete had landed) are answers too.
            if not (op.op == "add" and op.status == 404) and not (op.op == "make" and op.status == 200) \
                    and not (op.op == "delete" and op.status == 404 and op.uncertain):
                report.fail(check, f"{op.op} {op.name} through {op.node} at {op.started:.2f}: {op.status} {op.code}")
    outcomes = collections.Counter(f"{op.op}:{op.outcome}" for op in makers.ops)
    return {"made_ops": dict(outcomes), "made_final": dict(counts)}


def check_graceful(report: Report, stops: list[GracefulStop]) -> None:
    for stop in stops:
        if stop.exit_code != 0:
            report.fail("graceful stops exit 0", f"{stop.node}: exit {stop.exit_code} after {stop.seconds:.2f} s")


# -- the run ---------------------------------------------------------------------------------------

def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=80, help="seconds of load, chaos included (default 80)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the driver's choices (default: the time)")
    parser.add_argument("--lease", type=int, default=3, help="cluster.leaseSeconds of the nodes (default 3)")
    parser.add_argument("--slack", type=float, default=3.0,
                        help="seconds past a lease after a crash in which refusals are still allowed (default 3)")
    parser.add_argument("--calm", type=float, default=8.0,
                        help="seconds of load without chaos after start-up and before the end (default 8)")
    parser.add_argument("--posters", type=int, default=2, help="POST threads per node (default 2)")
    parser.add_argument("--pause", type=float, default=0.02, help="seconds each POST thread waits between POSTs")
    parser.add_argument("--timeout", type=float, default=15.0, help="client timeout: no answer by then is a hang")
    parser.add_argument("--makers", type=int, default=4,
                        help="threads making, feeding and deleting tally-* Spins (default 4)")
    parser.add_argument("--made-names", type=int, default=500, help="names each maker thread uses (default 500)")
    parser.add_argument("--lenient-gear", dest="strict_gear", action="store_false",
                        help="only flag a Gear event received for a send refused because its journal write failed "
                             "(it fails the run by default)")
    parser.add_argument("--strict-gear", dest="strict_gear", action="store_true", default=True,
                        help="fail on such an event (the default; kept for scripts that pass it)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory (node logs, records) when every check passed too")
    return parser.parse_args()


def main() -> int:
    args = parse_arguments()
    seed = args.seed if args.seed is not None else int(time.time())
    if not PG.exists() or shutil.which("psql") is None or not any(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")):
        print("chaos: PostgreSQL is not installed (Debian package postgresql)", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="spin-chaos-", dir="/tmp"))
    workdir.chmod(0o755)   # the postgres user (pg.sh as root) must enter it
    print(f"chaos: seed {seed}, duration {args.duration} s, lease {args.lease} s, binary {server_binary()}, "
          f"work directory {workdir}", flush=True)
    database = Database(workdir / "pg")
    nodes: list[Node] = []
    try:
        database.start()
        nodes = [Node(name, workdir, database.url, args.lease) for name in NODE_NAMES]
        report, summary = run(args, seed, database, nodes)
    except RuntimeError as error:
        print(f"chaos: could not run: {error}", file=sys.stderr)
        print_log_tails(nodes)
        return 2
    finally:
        tear_down(database, nodes)
    report.print()
    print_summary(summary)
    if report.failed == 0 and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"chaos: logs and records in {workdir}")
    return 1 if report.failed else 0


def tear_down(database: Database, nodes: list[Node]) -> None:
    """Whatever still runs is killed (a paused process woken first); the database goes."""
    database.resume()
    for node in nodes:
        if node.running():
            node.send(signal.SIGCONT)
            node.send(signal.SIGKILL)
            node.wait_exit(10)
    database.remove()


def print_log_tails(nodes: list[Node], lines: int = 15) -> None:
    for node in nodes:
        if node.log_path.exists():
            tail = node.log_path.read_text(errors="replace").splitlines()[-lines:]
            print(f"--- {node.log_path} (last {lines} lines)", *tail, sep="\n", file=sys.stderr)


def run(args: argparse.Namespace, seed: int, database: Database, nodes: list[Node]) -> tuple[Report, dict]:
    """Starts the nodes, runs the load and the driver, stops everything and checks."""
    timeline = Timeline()
    start_cluster(nodes, timeline)
    start_epochs = database.lease_epochs()
    timeline.log("startup", epochs=sum(start_epochs.values()))
    load = Load(nodes, args, seed)
    tap = JournalTap(database, SPINS)
    driver = Driver(nodes, database, timeline, random.Random(seed), args.lease, args.slack, load.last_refusal)
    load.start()
    tap.start()
    began = now()
    time.sleep(args.calm)
    driver.run(until=began + args.duration - args.calm)
    Driver.sleep_until(max(now() + args.calm, began + args.duration))
    load.stop()
    loaded = now() - began
    timeline.log("load stopped", seconds=f"{loaded:.1f}")
    final = settle(nodes)
    end_epochs = database.lease_epochs()
    made_report = Report()
    if args.makers > 0:
        made_counts = check_made(made_report, load.makers, nodes[0])
    else:
        made_counts = {}
        made_report.skipped[CHECKS[-1]] = "--makers 0"
    final_stops = stop_all(nodes, timeline)
    tap.stop()
    tap.read()
    report = made_report
    journals, compacted = {}, 0
    for spin in SPINS:
        retained = database.journal(spin)
        journals[spin], problems = tap.merged(spin, retained)
        compacted += len(journals[spin]) - len(retained)
        check_journal(report, spin, journals[spin], problems)
    save_records(nodes[0].log_path.parent, timeline, load.posts(), load.streams.messages)

    for problem in driver.problems:
        report.fail("nodes run until stopped and start again", problem)
    check_ids(report, "ledger", load.ledger.posts, journals["ledger"])
    check_ids(report, "sender", load.gear.posts, journals["sender"])
    refusals = check_answers(report, troubles(load.posts(), load.streams.refusals), timeline)
    stream_counts = check_streams(report, load.streams.messages, journals["ledger"])
    gear_counts = check_gear(report, load.gear.posts, journals["sender"], journals["listener"], args.strict_gear)
    check_final(report, final, journals["ledger"])
    check_graceful(report, driver.graceful + final_stops)
    summary = {
        "seed": seed, "duration_s": round(loaded, 1), "lease_s": args.lease,
        "events_acked": sum(post.outcome == "acked" for post in load.ledger.posts),
        "posts": len(load.posts()),
        "outcomes": dict(collections.Counter(post.outcome for post in load.posts())),
        "unknown_applied": unknown_applied(load.posts(), journals),
        "journal_rows_compacted": compacted,   # read by the tap, gone from the database at the end
        # A lease's epoch is 1 at the first take and grows by one at each move.
        "moves": sum(end_epochs.values()) - len(end_epochs),
        "moves_before_load": sum(start_epochs.values()) - len(start_epochs),
        "kills": driver.counts["kill"], "terms": driver.counts["term"], "stops": driver.counts["stop"],
        "pg_pauses": driver.counts["pg_pause"], "pg_restarts": driver.counts["pg_restart"],
        "refusals": refusals["by_cause"],
        "refusal_spans": refusal_spans(refusals["by_action"]),
        "graceful_stops": graceful_summary(driver.graceful + final_stops),
        "streams": stream_counts | {"closes": len(load.streams.closes), "refused": len(load.streams.refusals)},
        **gear_counts,
        **made_counts,
        "failed_checks": {check: len(lines) for check, lines in report.failures.items()},
        "passed": report.failed == 0,
    }
    details = {"refusals_by_action": refusals["by_action"],
               "graceful_stops": [dataclasses.asdict(stop) for stop in driver.graceful + final_stops]}
    (nodes[0].log_path.parent / "summary.json").write_text(json.dumps(summary | details, indent=1))
    return report, summary


def refusal_spans(by_action: list[dict]) -> dict[str, dict]:
    """Per kind of action: how many of them were followed by refusals, how many in all,
    and the longest time from such an action to its last refusal."""
    spans: dict[str, dict] = {}
    for entry in by_action:
        span = spans.setdefault(entry["action"], {"actions": 0, "refusals": 0, "longest_s": 0.0})
        span["actions"] += 1
        span["refusals"] += entry["count"]
        span["longest_s"] = max(span["longest_s"], entry["until_s"])
    return spans


def graceful_summary(stops: list[GracefulStop]) -> dict:
    """How many, their exit codes, and the seconds from SIGTERM to the exit."""
    seconds = sorted(round(stop.seconds, 2) for stop in stops) or [None]
    return {"count": len(stops), "exit_codes": dict(collections.Counter(str(stop.exit_code) for stop in stops)),
            "seconds_min": seconds[0], "seconds_median": seconds[len(seconds) // 2], "seconds_max": seconds[-1]}


def start_cluster(nodes: list[Node], timeline: Timeline) -> None:
    """All three at once, as a deployment starts them; returns once each is ready."""
    for node in nodes:
        timeline.log("spawn", node.name)
        node.spawn()
    for node in nodes:
        node.wait_ready()
        timeline.log("ready", node.name)


def unknown_applied(posts: list[Post], journals: dict[str, list[tuple[int, dict]]]) -> dict[str, int]:
    """Of the POSTs whose outcome the client could not know, how many were applied."""
    journaled = {(spin, as_id(event.get("id"))) for spin, journal in journals.items() for _, event in journal}
    unknown = [post for post in posts if post.outcome in ("unknown", "hang")]
    applied = sum((post.spin, post.id) in journaled for post in unknown)
    return {"applied": applied, "not_applied": len(unknown) - applied}


def save_records(directory: Path, timeline: Timeline, posts: list[Post], messages: list[StreamMessage]) -> None:
    """Every action, POST and stream message as JSON lines, for a look after the run."""
    with open(directory / "records.jsonl", "w") as out:
        for kind, records in (("action", timeline.actions), ("post", posts), ("stream", messages)):
            for record in records:
                out.write(json.dumps({"record": kind, **dataclasses.asdict(record)}) + "\n")


def print_summary(summary: dict) -> None:
    print(f"chaos summary: {summary['duration_s']} s of load, {summary['events_acked']} ledger events acknowledged, "
          f"{summary['moves']} moves ({summary['moves_before_load']} before the load), {summary['kills']} kills, "
          f"{summary['terms']} SIGTERMs, {summary['stops']} SIGSTOPs, {summary['pg_pauses']} PostgreSQL pauses, "
          f"{summary['pg_restarts']} PostgreSQL restarts")
    print(f"  outcomes: {summary['outcomes']}; unknown outcomes {summary['unknown_applied']}")
    for kind, counts in summary["refusals"].items():
        for cause, count in counts.items():
            print(f"  {kind}: {count} x {cause}")
    for kind, span in summary["refusal_spans"].items():
        print(f"  after {span['actions']} x {kind}: {span['refusals']} refused or unknown, the last at most "
              f"{span['longest_s']} s after the action")
    graceful = summary["graceful_stops"]
    print(f"  graceful stops: {graceful['count']}, exit codes {graceful['exit_codes']}, {graceful['seconds_min']} to "
          f"{graceful['seconds_max']} s (median {graceful['seconds_median']})")
    print(f"  streams: {summary['streams']}")
    print(f"  gear: sent {summary['gear_sent']}, delivered {summary['gear_delivered']}, "
          f"missed {summary['gear_missed']}")
    print(f"  {'PASSED' if summary['passed'] else 'FAILED'}")
    print("CHAOS-SUMMARY " + json.dumps(summary, sort_keys=True), flush=True)


if __name__ == "__main__":
    sys.exit(main())
