#!/usr/bin/env python3
"""Power cuts: spin-server under a disk-cache layer (lazyfs.c), killed at random moments,
its storage directory rebuilt as the disk would hold it, then started again.

Each cut: the server starts under the layer (LD_PRELOAD) on a storage directory that,
every `--fresh-every` cuts, does not exist yet (so creating it is covered), clients POST
events to `counter` and `levels` and note every acknowledged sequence, the server is
SIGKILLed at a random moment, and the directory is replaced by what was durable: a
file's bytes once it was fsynced, a name (create, rename, unlink, mkdir) once its
directory was fsynced. `--torn` also lets a random subset of each file's unsynced
512-byte sectors through, in any order, and a random prefix of the unsynced name
changes. Then the server starts normally, and must answer /readyz 200 with every
acknowledged event there (for `none`, losses are counted but allowed; starting is not
optional).

    python3 Tests/powercut/powercut.py --fsync batch --torn --cuts 30
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SECTOR = 512
READY_TIMEOUT = 60.0


# -- the layer -------------------------------------------------------------------------

def compiler() -> str | None:
    """`CC`, or the first of cc, clang and gcc on the PATH (Swift toolchains bring clang)."""
    return os.environ.get("CC") or next(filter(None, map(shutil.which, ["cc", "clang", "gcc"])), None)


def build_layer(directory: Path) -> Path:
    """Compiles lazyfs.c into `directory` (once) and returns the shared object."""
    library = directory / "liblazyfs.so"
    if not library.exists() or library.stat().st_mtime < (HERE / "lazyfs.c").stat().st_mtime:
        directory.mkdir(parents=True, exist_ok=True)
        subprocess.run([compiler(), "-shared", "-fPIC", "-O2", "-o", str(library),
                        str(HERE / "lazyfs.c"), "-ldl", "-lpthread"], check=True)
    return library


def read_log(path: Path) -> list[tuple]:
    """The layer's records: (op, ino, offset, length, upto, path, second, data)."""
    data = path.read_bytes() if path.exists() else b""
    records, at = [], 0
    header = struct.Struct("<cQQQQII")
    while at + header.size <= len(data):
        op, ino, offset, length, upto, path_length, second_length = header.unpack_from(data, at)
        at += header.size
        first = data[at:at + path_length].decode()
        at += path_length
        second = data[at:at + second_length].decode()
        at += second_length
        payload = b""
        if op == b"W":
            payload = data[at:at + length]
            at += length
        records.append((op.decode(), ino, offset, length, upto, first, second, payload))
    return records


# -- what the disk holds after the cut ----------------------------------------------------

class File:
    """One inode: its bytes as the process sees them and as the disk holds them, and the
    changes (log index, op, arguments) not yet synced."""

    def __init__(self, content: bytes = b""):
        self.volatile = bytearray(content)
        self.durable = bytearray(content)
        self.pending: collections.deque = collections.deque()

    @staticmethod
    def apply(content: bytearray, op: str, offset: int, length: int, data: bytes) -> None:
        if op == "W":
            if len(content) < offset:
                content.extend(bytes(offset - len(content)))
            content[offset:offset + len(data)] = data
        else:
            del content[length:]
            content.extend(bytes(max(0, length - len(content))))

    def change(self, index: int, op: str, offset: int, length: int, data: bytes) -> None:
        self.apply(self.volatile, op, offset, length, data)
        self.pending.append((index, op, offset, length, data))

    def sync(self, upto: int) -> None:
        while self.pending and self.pending[0][0] < upto:
            _, op, offset, length, data = self.pending.popleft()
            self.apply(self.durable, op, offset, length, data)

    def after_cut(self, rng: random.Random | None) -> bytes:
        """The durable bytes; with `rng`, plus a random subset of the unsynced sectors."""
        if rng is None or not self.pending:
            return bytes(self.durable)
        disk = bytearray(self.durable)
        volatile = self.volatile
        if len(volatile) < len(disk) and rng.random() < 0.5:
            del disk[len(volatile):]
        for start in range(0, len(volatile), SECTOR):
            sector = volatile[start:start + SECTOR]
            if disk[start:start + SECTOR] == sector or rng.random() < 0.5:
                continue
            if len(disk) < start:
                disk.extend(bytes(start - len(disk)))
            disk[start:start + len(sector)] = sector
        return bytes(disk)


DIRECTORY = "directory"


def parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def restore(root: Path, baseline: Path, log: Path, rng: random.Random | None) -> dict:
    """Replaces `root`'s content by what a power cut leaves of `baseline` (the content
    before the run, all durable) changed as `log` says. Returns counts for the report."""
    volatile: dict[str, object] = {}
    durable: dict[str, object] = {}
    pending: dict[str, collections.deque] = collections.defaultdict(collections.deque)
    inodes: dict[int, File] = {}
    top = str(root)
    for directory, _, files in os.walk(baseline):
        relative = os.path.relpath(directory, baseline)
        path = top if relative == "." else f"{top}/{relative}"
        volatile[path] = durable[path] = DIRECTORY
        for name in files:
            volatile[f"{path}/{name}"] = durable[f"{path}/{name}"] = File(Path(directory, name).read_bytes())
    def name_change(_index: int, change: str, name: str, target: object) -> None:
        if change == "link":
            durable[name] = target
        else:
            durable.pop(name, None)

    records = read_log(log)
    for index, (op, ino, offset, length, upto, path, second, data) in enumerate(records):
        if op == "C":
            inodes[ino] = volatile[path] = File()
            pending[parent(path)].append((index, "link", path, inodes[ino]))
        elif op == "O":
            existing = volatile.get(path)
            inodes[ino] = existing if isinstance(existing, File) else inodes.get(ino) or File()
        elif op in "WT":
            inodes[ino].change(index, op, offset, length, data)
        elif op == "S":
            inodes[ino].sync(upto)
        elif op == "D":
            queue = pending[path]
            while queue and queue[0][0] < upto:
                name_change(*queue.popleft())
        elif op == "R":
            moved = volatile.pop(path)
            volatile[second] = moved
            pending[parent(path)].append((index, "unlink", path, None))
            pending[parent(second)].append((index, "link", second, moved))
        elif op in "UX":
            volatile.pop(path, None)
            pending[parent(path)].append((index, "unlink", path, None))
        elif op == "M":
            volatile[path] = DIRECTORY
            pending[parent(path)].append((index, "link", path, DIRECTORY))
    if rng is not None:
        # A journaling file system commits name changes in order: a random prefix of
        # those not synced may have reached the disk too.
        unsynced = sorted((change for queue in pending.values() for change in queue), key=lambda change: change[0])
        for change in unsynced[:rng.randint(0, len(unsynced))]:
            name_change(*change)

    def reachable(path: str) -> bool:
        while path != top:
            path = parent(path)
            if durable.get(path) is not DIRECTORY:
                return False
        return True

    for entry in list(root.iterdir()):
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    written = {"files": 0, "torn": 0}
    for path in sorted(durable):
        target = durable[path]
        if path == top or not reachable(path):
            continue
        if target is DIRECTORY:
            os.mkdir(path)
        else:
            content = target.after_cut(rng)
            Path(path).write_bytes(content)
            written["files"] += 1
            written["torn"] += content != bytes(target.durable)
    written["lost names"] = sum(1 for path in volatile if path not in durable or not reachable(path))
    return written


# -- the server and its clients ----------------------------------------------------------

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def session() -> requests.Session:
    http = requests.Session()
    http.trust_env = False
    return http


@dataclass
class Server:
    binary: Path
    workdir: Path
    storage: Path
    env: dict
    name: str
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    def start(self) -> None:
        command = [str(self.binary), "--config", str(self.workdir / "Config" / "spin-server.json"),
                   "--host", "127.0.0.1", "--port", str(self.port), "--storage", str(self.storage)]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            cwd=self.workdir, env=self.env)

    def wait_ready(self) -> str | None:
        """None once /readyz answers 200; otherwise why not (the server exited, or time ran out)."""
        http = session()
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                return f"exited with {code}: {self.log_tail()}"
            try:
                if http.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return None
            except requests.RequestException:
                pass
            time.sleep(0.05)
        return f"no /readyz 200 within {READY_TIMEOUT} s: {self.log_tail()}"

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(timeout=20)

    def log_tail(self, lines: int = 8) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""


EVENTS = {
    "counter": [{"type": "increase"}],
    "pinger": [{"type": "PING"}],
    "levels": [{"type": "increaseLeft"}, {"type": "decreaseRight"}, {"type": "increaseRight"},
               {"type": "set", "left": 3, "right": 40}],
}


def load(server: Server, clients: int, stop: threading.Event, rng_seed: int) -> dict:
    """Clients POSTing single events and batches until `stop`; returns, per Spin, the
    highest acknowledged sequence and the number of acknowledged events."""
    acknowledged: dict[str, int] = {}
    counts: dict[str, int] = collections.Counter()
    guard = threading.Lock()

    def client(number: int) -> None:
        rng = random.Random(rng_seed * 1000 + number)
        http = session()
        while not stop.is_set():
            spin = rng.choice(sorted(EVENTS))
            events = [rng.choice(EVENTS[spin]) for _ in range(rng.choice([1, 1, 1, 3]))]
            try:
                response = http.post(f"{server.url}/v1/spins/{spin}/events", data=json.dumps(events), timeout=5,
                                     headers={"Content-Type": "application/json"})
            except requests.RequestException:
                return
            if response.status_code == 202:
                with guard:
                    acknowledged[spin] = max(acknowledged.get(spin, 0), response.json()["sequence"])
                    counts[spin] += len(events)

    # Spins made and deleted at run time (kind `door`): what was answered 201 must exist
    # after the cut unless its deletion was answered 200, which must hold too.
    made: dict[str, int] = {}       # name → acknowledged sequence (0: made, no event yet)
    deleted: set[str] = set()

    def maker() -> None:
        rng = random.Random(rng_seed * 1000 + 999)
        http = session()
        number = 0
        while not stop.is_set():
            try:
                if made and rng.random() < 0.25:
                    name = rng.choice(sorted(made))
                    if rng.random() < 0.5:
                        # Until it is answered the deletion may or may not have happened:
                        # the Spin is checked neither way.
                        with guard:
                            sequence = made.pop(name)
                        response = http.delete(f"{server.url}/v1/spins/{name}", timeout=5)
                        with guard:
                            if response.status_code == 200:
                                deleted.add(name)
                            else:
                                made[name] = sequence
                    else:
                        response = http.post(f"{server.url}/v1/spins/{name}/events", data='{"type":"LOCK"}', timeout=5,
                                             headers={"Content-Type": "application/json"})
                        if response.status_code == 202:
                            with guard:
                                made[name] = max(made.get(name, 0), response.json()["sequence"])
                    continue
                number += 1
                name = f"door-s{rng_seed}-{number}"
                response = http.put(f"{server.url}/v1/spins/{name}", data='{"kind":"door"}', timeout=5,
                                    headers={"Content-Type": "application/json"})
                if response.status_code == 201:
                    with guard:
                        made[name] = 0
            except requests.RequestException:
                return

    threads = [threading.Thread(target=client, args=(number,), daemon=True) for number in range(clients)]
    threads.append(threading.Thread(target=maker, daemon=True))
    for thread in threads:
        thread.start()
    result = {"threads": threads, "acknowledged": acknowledged, "counts": counts, "made": made, "deleted": deleted}
    return result


# -- the cuts ----------------------------------------------------------------------------

@dataclass
class Summary:
    fsync: str
    torn: bool
    cuts: int = 0
    acknowledged: int = 0
    lost: int = 0
    cuts_with_loss: int = 0
    starts: int = 0
    failures: list[str] = field(default_factory=list)
    torn_files: int = 0
    # Gear events: PINGs the pinger holds after the cuts, and what the ledger made of them.
    pings: int = 0
    gear_problems: int = 0
    # Spins made (201) at run time, each then found (or, deleted with a 200, not found).
    made: int = 0

    def line(self) -> str:
        return (f"fsync={self.fsync}{' torn' if self.torn else ''}: {self.cuts} cuts, {self.acknowledged} events "
                f"acknowledged, {self.cuts_with_loss} cuts lost some ({self.lost} sequences), "
                f"{self.starts}/{self.cuts} starts, {self.torn_files} files with torn sectors, "
                f"{self.pings} Gear events caught once each ({self.gear_problems} problems), "
                f"{self.made} Spins made and checked, "
                f"{len(self.failures)} failures")


def prepare(workdir: Path, fsync: str) -> None:
    """A copy of Config/ whose storage settings are the run's (a small retainEvents, so
    that compactions, with their renames, happen within a few cuts)."""
    config = workdir / "Config"
    if config.exists():
        shutil.rmtree(config)
    shutil.copytree(REPO / "Config", config)
    document = json.loads((config / "spin-server.json").read_text())
    document["storage"].update({"fsync": fsync, "retainEvents": 20})
    # The Gear pair of the e2e tests: pinger numbers each PING on Gear pings, the ledger
    # checks they arrive 1, 2, 3, ... (docs/OPERATIONS.md, "Gear delivery").
    for machine in ("pinger", "ledger"):
        shutil.copy(REPO / "Tests" / "e2e" / "fixtures" / "machines" / f"{machine}.json", config / "machines")
        document["spins"].append({"name": machine, "machine": f"machines/{machine}.json"})
    document["gears"].append({"name": "pings"})
    (config / "spin-server.json").write_text(json.dumps(document, indent=2))


def environment(extra: dict | None = None) -> dict:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("SPIN_") and not key.startswith("LAZYFS_") and "proxy" not in key.lower()}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    env.update(extra or {})
    return env


def run(binary: Path, workdir: Path, *, fsync: str, torn: bool, cuts: int, clients: int = 4, seed: int = 1,
        fresh_every: int = 3, load_seconds: tuple[float, float] = (0.3, 1.5), say=print) -> Summary:
    """`cuts` power cuts; see the module's documentation. `lost` counts sequences (the
    clients' events and the feedbacks') between the highest acknowledged and the recovered."""
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    library = build_layer(workdir / "layer")
    prepare(workdir, fsync)
    rng = random.Random(seed)
    summary = Summary(fsync=fsync, torn=torn)
    root = workdir / "disk"
    storage = root / "store" / "data"
    for cut in range(cuts):
        if cut % fresh_every == 0:
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir()
        baseline = workdir / "baseline"
        shutil.rmtree(baseline, ignore_errors=True)
        shutil.copytree(root, baseline)
        log = workdir / f"cut{cut}.lazyfs"
        log.unlink(missing_ok=True)
        layered = Server(binary, workdir, storage,
                         environment({"LD_PRELOAD": str(library), "LAZYFS_ROOT": str(root), "LAZYFS_LOG": str(log)}),
                         name=f"cut{cut}")
        layered.start()
        problem = layered.wait_ready()
        if problem:
            layered.stop(signal.SIGKILL)
            summary.failures.append(f"cut {cut}: the server under the layer did not start: {problem}")
            break
        stop = threading.Event()
        clients_state = load(layered, clients, stop, seed * 100 + cut)
        time.sleep(rng.uniform(*load_seconds))
        layered.stop(signal.SIGKILL)
        stop.set()
        for thread in clients_state["threads"]:
            thread.join(timeout=10)
        acknowledged = dict(clients_state["acknowledged"])
        summary.cuts += 1
        summary.acknowledged += sum(clients_state["counts"].values())
        restored = restore(root, baseline, log, random.Random(seed * 7919 + cut) if torn else None)
        summary.torn_files += restored["torn"]
        log.unlink(missing_ok=True)

        again = Server(binary, workdir, storage, environment(), name=f"cut{cut}-restart")
        again.start()
        problem = again.wait_ready()
        if problem:
            again.stop(signal.SIGKILL)
            summary.failures.append(f"cut {cut}: the server did not start after the cut: {problem}")
            say(summary.failures[-1])
            shutil.rmtree(root)
            root.mkdir()
            continue
        summary.starts += 1
        http = session()
        lost_before = summary.lost
        for spin, sequence in sorted(acknowledged.items()):
            found = http.get(f"{again.url}/v1/spins/{spin}", timeout=5).json()
            recovered = found["sequence"]
            if recovered < sequence:
                summary.lost += sequence - recovered
                if fsync != "none":
                    summary.failures.append(f"cut {cut}: {spin} recovered to sequence {recovered}, "
                                            f"but {sequence} was acknowledged")
                    say(summary.failures[-1])
            state = found["state"]
            # Every event of the counter (clients' and its feedback's) is an increase.
            if spin == "counter" and state["value"] != recovered:
                summary.failures.append(f"cut {cut}: counter at sequence {recovered} has value {state['value']}")
            if spin == "levels" and not (isinstance(state.get("left"), int) and isinstance(state.get("right"), int)):
                summary.failures.append(f"cut {cut}: levels has no readable state: {found}")
        summary.cuts_with_loss += summary.lost > lost_before
        for problem in check_made(http, again, clients_state["made"], clients_state["deleted"], events=fsync != "none"):
            summary.failures.append(f"cut {cut}: {problem}")
            say(summary.failures[-1])
        summary.made += len(clients_state["made"]) + len(clients_state["deleted"])
        for problem in check_gear(http, again):
            summary.gear_problems += 1
            if fsync != "none":
                summary.failures.append(f"cut {cut}: {problem}")
                say(summary.failures[-1])
        summary.pings = http.get(f"{again.url}/v1/spins/pinger", timeout=5).json()["state"]["context"]["count"]
        code = again.stop()
        if code != 0:
            summary.failures.append(f"cut {cut}: the restarted server exited with {code}: {again.log_tail()}")
        say(f"cut {cut}: acknowledged {acknowledged}, restored {restored}")
    return summary


def check_made(http: requests.Session, server: Server, made: dict[str, int], deleted: set[str],
               events: bool) -> list[str]:
    """Every Spin whose make was acknowledged (201) is there (its catalog record is synced
    under every fsync policy), at its acknowledged sequence or later (`events`: not for
    `none`), unless its deletion was acknowledged (200): then it is gone."""
    present, after = {}, ""
    while True:
        page = http.get(f"{server.url}/v1/spins?prefix=door-&limit=1000&after={after}", timeout=10).json()
        present.update({spin["name"]: spin for spin in page["spins"]})
        if page["next"] is None:
            break
        after = page["next"]
    problems = []
    for name, sequence in sorted(made.items()):
        if name not in present:
            problems.append(f"{name} was made (201) and is gone")
        elif events and present[name].get("sequence", 0) < sequence:
            problems.append(f"{name} recovered to {present[name].get('sequence')}, {sequence} was acknowledged")
    for name in sorted(deleted):
        if name in present:
            problems.append(f"{name} was deleted (200) and is back")
    return problems


def check_gear(http: requests.Session, server: Server, timeout: float = 10) -> list[str]:
    """The ledger never stands ahead of the pinger (it caught nothing whose cause the cut
    took back), never saw a PING twice or out of order, and catches up with every PING the
    pinger holds (what it had not consumed is delivered again)."""
    def context(spin: str) -> dict:
        return http.get(f"{server.url}/v1/spins/{spin}", timeout=5).json()["state"]["context"]

    problems = []
    count, ledger = context("pinger")["count"], context("ledger")
    if ledger["last"] > count:
        problems.append(f"the ledger caught PING {ledger['last']}, but the pinger holds {count}")
    deadline = time.monotonic() + timeout
    while ledger["received"] < count and time.monotonic() < deadline:
        time.sleep(0.05)
        ledger = context("ledger")
    if ledger["duplicates"] or ledger["gaps"]:
        problems.append(f"the ledger saw {ledger['duplicates']} duplicates and {ledger['gaps']} gaps")
    if ledger["received"] != count:
        problems.append(f"the ledger caught {ledger['received']} of the pinger's {count} PINGs")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fsync", choices=["always", "batch", "none"], action="append",
                        help="the policy (repeat for several; default: all three)")
    parser.add_argument("--torn", action="store_true", help="let random unsynced sectors through too")
    parser.add_argument("--both", action="store_true", help="run each policy without and with --torn")
    parser.add_argument("--cuts", type=int, default=10)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fresh-every", type=int, default=3,
                        help="start from a storage directory that does not exist every N cuts")
    parser.add_argument("--binary", type=Path, default=Path(os.environ.get("SPIN_SERVER_BIN", REPO / ".build/debug/spin-server")))
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/spin-powercut"))
    parser.add_argument("--quiet", action="store_true")
    arguments = parser.parse_args()
    summaries = []
    for fsync in arguments.fsync or ["always", "batch", "none"]:
        for torn in ([False, True] if arguments.both else [arguments.torn]):
            summary = run(arguments.binary, arguments.workdir / f"{fsync}{'-torn' if torn else ''}", fsync=fsync,
                          torn=torn, cuts=arguments.cuts, clients=arguments.clients, seed=arguments.seed,
                          fresh_every=arguments.fresh_every, say=(lambda _: None) if arguments.quiet else print)
            summaries.append(summary)
            print(summary.line(), flush=True)
    for summary in summaries:
        for failure in summary.failures:
            print("FAILED", failure)
    return 1 if any(summary.failures for summary in summaries) else 0


if __name__ == "__main__":
    sys.exit(main())
