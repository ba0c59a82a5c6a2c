#!/usr/bin/env python3
"""What an idle cluster costs its database: the statements and transactions per second
PostgreSQL runs for a three-node spin-server cluster that nobody sends anything to, as a
function of how many Spins the cluster hosts.

    swift build -c release --product spin-server
    python3 Benchmarks/cluster-idle.py .build/release/spin-server [--counts 100,1000] [--nodes 3]
        [--seconds 30] [--lease 10] [--settle SECONDS] [--kinds] [--keep]

A node keeps the leases of the Spins it owns alive, and its own heartbeat, by writing to
the database every third of the lease; none of that is traffic anyone asked for, and
if it grows with the number of Spins it is what limits how many Spins one database can
carry, long before any load does. This measures it.

It starts a throwaway PostgreSQL (Tests/postgres/pg.sh) with pg_stat_statements loaded
(`track = all`), then for each count N: a fresh database, a config of N `door` Spins (a
machine with no Gears, written next to the config; `--kinds` instead configures kind
`door` and makes the N Spins with `PUT /v1/spins/door-NNNNNN` once the nodes are up),
`--nodes` nodes on it (SPIN_STORAGE_BACKEND=postgres,
SPIN_CLUSTER_LEASE_SECONDS=`--lease`), timed from their start to `GET /readyz` 200 on all
of them. After `--settle` seconds (default two lease periods: leases taken, placement
settled), and then until each node's `GET /v1/cluster` shows every node live, the nodes
agree on the owners, and all N Spins are owned (configured Spins only: Spins made at run
time are not listed there; at most `--settle-max` seconds more; a row measured without
that is marked "not settled"), it resets the statement counters and, `--seconds` later,
reads the statements the cluster's database ran meanwhile (pg_stat_statements; the
harness's own queries run in another database and are left out), the transactions it
committed or rolled back (pg_stat_database; PostgreSQL publishes a connection's counts up
to ten seconds late, so short windows are approximate), the eight most frequent
statements, the nodes' RSS and the CPU the nodes and PostgreSQL used. Then it stops the
nodes and drops the database before the next count.

Nothing else should load the machine. Exit code 0 when every count was measured, 2 when
the harness could not run (no PostgreSQL, a node did not start, `--kinds` against a
build whose clusters make no Spins: releases before made Spins on clusters answer `PUT`
501).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
PG = ROOT / "Tests" / "postgres" / "pg.sh"
DOOR = {"id": "door", "initial": "closed", "context": {"opens": 0},
        "states": {"closed": {"on": {"OPEN": {"target": "opened",
                                               "actions": [{"type": "assign", "set": {"opens": {"add": 1}}}]}}},
                   "opened": {"on": {"CLOSE": "closed"}}}}
TICKS = os.sysconf("SC_CLK_TCK")


class HarnessError(Exception):
    """The harness could not measure (exit code 2)."""


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def clean_environment(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment without SPIN_* or proxy variables, plus `extra` (as
    Tests/e2e/spin_e2e.py's clean_environment)."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("SPIN_") and "proxy" not in key.lower()}
    env["NO_PROXY"] = "127.0.0.1,localhost,::1"
    env.update(extra)
    return env


def http_session() -> requests.Session:
    session = requests.Session()
    session.trust_env = False
    return session


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process so far, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mib(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"VmRSS:\s+(\d+)", status)
    return int(match.group(1)) / 1024 if match else None


# -- PostgreSQL ----------------------------------------------------------------------------

class Database:
    """A throwaway PostgreSQL server with pg_stat_statements, one database per count. The
    harness queries through the `postgres` database, so that its own statements are not
    counted against the cluster's."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.admin_url = ""
        self.started = False

    def start(self) -> None:
        try:
            self.admin_url = self._pg("start")
            self.started = True
            with open(self.directory / "data" / "postgresql.conf", "a") as conf:
                conf.write("\n# Benchmarks/cluster-idle.py\nshared_preload_libraries = 'pg_stat_statements'\n"
                           "pg_stat_statements.track = all\n")
            self._pg("stop")
            self.admin_url = self._pg("start")   # pg.sh keeps the port
            self.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        except (subprocess.SubprocessError, OSError) as error:
            raise HarnessError(f"could not start PostgreSQL with pg_stat_statements: {error}") from error

    def _pg(self, command: str) -> str:
        result = subprocess.run([str(PG), command, str(self.directory)], capture_output=True, text=True, timeout=180)
        if result.returncode != 0:
            raise subprocess.SubprocessError(f"pg.sh {command}: {result.stderr.strip()}")
        return result.stdout.strip()

    def url(self, database: str) -> str:
        return self.admin_url.rsplit("/", 1)[0] + "/" + database

    def query(self, sql: str, timeout: float = 120) -> list[list[str]]:
        result = subprocess.run(["psql", "-X", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", self.admin_url, "-c", sql],
                                capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise subprocess.SubprocessError(f"psql: {result.stderr.strip()} (in: {sql[:120]})")
        return [line.split("\t") for line in result.stdout.splitlines() if line]

    def processes(self) -> list[int]:
        """The postmaster and its children (backends, helpers)."""
        try:
            postmaster = int((self.directory / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return []
        found = [postmaster]
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                        found.append(int(entry.name))
                except (OSError, ValueError, IndexError):
                    pass
        return found

    def cpu(self) -> dict[int, float]:
        return {pid: seconds for pid in self.processes() if (seconds := cpu_seconds(pid)) is not None}

    def stop(self) -> None:
        if self.started:
            subprocess.run([str(PG), "stop", str(self.directory)], capture_output=True, timeout=120)
            self.started = False

    def remove(self) -> None:
        subprocess.run([str(PG), "remove", str(self.directory)], capture_output=True, timeout=120)
        self.started = False


# -- the nodes -----------------------------------------------------------------------------

class Node:
    """One spin-server process of the cluster (as Tests/cluster/chaos.py's Node)."""

    def __init__(self, binary: Path, name: str, workdir: Path, config: Path, database_url: str, lease: int) -> None:
        self.name = name
        self.port = free_port()
        self.storage = workdir / name
        self.log_path = workdir / f"{name}.log"
        self.command = [str(binary), "--host", "127.0.0.1", "--port", str(self.port),
                        "--storage", str(self.storage), "--config", str(config)]
        self.env = clean_environment({"SPIN_STORAGE_BACKEND": "postgres", "SPIN_DATABASE_URL": database_url,
                                      "SPIN_NODE": name, "SPIN_CLUSTER_LEASE_SECONDS": str(lease)})
        self.process: subprocess.Popen | None = None
        self.ready_after: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def spawn(self) -> None:
        self.storage.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=self.env)

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def stop_all(nodes: list[Node], timeout: float = 60) -> str:
    """SIGTERM to every node at once, SIGKILL to those still running `timeout` seconds
    later; how long each took ("n1 2.1 s, n2 killed after 60 s, ...")."""
    began = time.monotonic()
    running = [node for node in nodes if node.process is not None and node.process.poll() is None]
    for node in running:
        node.process.terminate()
    took = {}
    while running and time.monotonic() - began < timeout:
        for node in [node for node in running if node.process.poll() is not None]:
            took[node.name] = f"{time.monotonic() - began:.1f} s"
            running.remove(node)
        time.sleep(0.05)
    for node in running:
        node.process.kill()
        node.process.wait(30)
        took[node.name] = f"killed after {timeout:.0f} s"
    return ", ".join(f"{name} {took[name]}" for name in sorted(took))


def wait_ready(nodes: list[Node], began: float, timeout: float) -> float:
    """Until `/readyz` answers 200 on every node; the seconds from `began` until then."""
    http = http_session()
    deadline = began + timeout
    next_note = time.monotonic() + 15
    while True:
        waiting = [node for node in nodes if node.ready_after is None]
        if not waiting:
            return max(node.ready_after for node in nodes)
        for node in waiting:
            if node.process.poll() is not None:
                raise HarnessError(f"{node.name} exited with {node.process.returncode} while starting "
                                   f"({node.log_path}):\n{node.log_tail()}")
            try:
                if http.get(node.base_url + "/readyz", timeout=2).status_code == 200:
                    node.ready_after = time.monotonic() - began
            except requests.RequestException:
                pass
        if time.monotonic() > deadline:
            raise HarnessError(f"{', '.join(node.name for node in waiting)} not ready within {timeout:.0f} s")
        if time.monotonic() > next_note:
            print(f"  {time.monotonic() - began:.0f} s: waiting for {', '.join(n.name for n in waiting)} "
                  f"(RSS {', '.join(f'{n.name} {rss_mib(n.process.pid) or 0:.0f} MiB' for n in nodes)})", flush=True)
            next_note += 15
        time.sleep(0.1)


def make_spins(nodes: list[Node], count: int, workers: int = 64) -> float:
    """`PUT /v1/spins/door-NNNNNN` {"kind":"door"} for each of `count` doors, spread over
    the nodes from `workers` threads, a 503 with Retry-After tried again after it (as a
    client does; each is reported); creates per second."""
    local = threading.local()
    unsupported = threading.Event()
    retried: list[tuple[int, str]] = []
    retried_lock = threading.Lock()

    def make(number: int) -> tuple[int, int, str]:
        if unsupported.is_set():
            return number, 501, ""
        session = getattr(local, "session", None) or http_session()
        local.session = session
        node = nodes[number % len(nodes)]
        for attempt in range(6):
            try:
                response = session.put(f"{node.base_url}/v1/spins/door-{number:06d}", json={"kind": "door"}, timeout=60)
            except requests.RequestException as error:
                return number, 0, str(error)
            # A 503 with Retry-After promises nothing was made: a client tries again.
            if response.status_code != 503 or "Retry-After" not in response.headers or attempt == 5:
                break
            with retried_lock:
                retried.append((number, response.text[:200]))
            time.sleep(float(response.headers["Retry-After"]))
        if response.status_code == 501:
            unsupported.set()
        # 200: an earlier attempt made it (its answer was a 503 the store sent after the commit).
        return number, 201 if response.status_code == 200 and attempt > 0 else response.status_code, response.text[:200]

    began = time.monotonic()
    failures = []
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for number, status, body in pool.map(make, range(1, count + 1)):
            if status != 201:
                failures.append((number, status, body))
    took = time.monotonic() - began
    if any(status == 501 for _, status, _ in failures):
        raise HarnessError("PUT /v1/spins/{name} answered 501: this build cannot make Spins of a kind at run time "
                           "(run without --kinds)")
    if failures:
        number, status, body = failures[0]
        raise HarnessError(f"{len(failures)} of {count} creates failed; first door-{number:06d}: {status} {body}")
    if retried:
        print(f"  {len(retried)} creates answered 503 with Retry-After and were tried again; first door-{retried[0][0]:06d}: "
              f"{retried[0][1]}", flush=True)
    return count / took


def cluster_view(node: Node) -> dict[str, tuple[bool, int, int | None]] | None:
    """A node's `GET /v1/cluster`: for each node it knows, (live, configured Spins owned,
    partitions held when the build owns Spins by partition)."""
    try:
        view = http_session().get(node.base_url + "/v1/cluster", timeout=10).json()
        return {entry["node"]: (bool(entry.get("live")), len(entry.get("spins", [])),
                                len(entry["partitions"]) if isinstance(entry.get("partitions"), list) else None)
                for entry in view["nodes"]}
    except (requests.RequestException, ValueError, AttributeError, TypeError, KeyError):
        return None


def settled(nodes: list[Node], count: int, kinds: bool) -> tuple[bool, str]:
    """Whether every node sees every node live and they all agree on who owns what, with
    all `count` Spins owned (configured Spins; `GET /v1/cluster` does not list Spins made
    at run time, so with `kinds` the views agreeing is all that is checked), and each
    node's view ("n1: n1 334 (5 partitions), n2 333 (not live), ...; n2: ...")."""
    ok, lines, views = True, [], []
    names = {node.name for node in nodes}
    for node in nodes:
        view = cluster_view(node)
        if view is None:
            ok = False
            lines.append(f"{node.name}: ?")
            continue
        views.append(view)
        live = {name for name, (is_live, _, _) in view.items() if is_live}
        ok = ok and live >= names and (kinds or sum(owned for _, owned, _ in view.values()) == count)
        lines.append(f"{node.name}: " + ", ".join(
            f"{name} {owned}" + (f" ({held} partitions)" if held is not None else "") + ("" if is_live else " (not live)")
            for name, (is_live, owned, held) in sorted(view.items())))
    ok = ok and all(view == views[0] for view in views)
    return ok, "; ".join(lines)


# -- one count -----------------------------------------------------------------------------

def write_config(directory: Path, count: int, kinds: bool) -> Path:
    (directory / "machines").mkdir(parents=True, exist_ok=True)
    (directory / "machines" / "door.json").write_text(json.dumps(DOOR))
    config = {"listen": {"host": "127.0.0.1", "port": 8080, "allowedHosts": []},
              "storage": {"directory": "data", "fsync": "batch"},
              "log": {"level": "warning", "format": "text"},
              "spins": [] if kinds else [{"name": f"door-{i:06d}", "machine": "machines/door.json"}
                                         for i in range(1, count + 1)],
              "gears": []}
    if kinds:
        config["kinds"] = [{"name": "door", "machine": "machines/door.json", "names": "door-*"}]
    path = directory / "spin-server.json"
    path.write_text(json.dumps(config, indent=1))
    return path


def check_config(binary: Path, config: Path, workdir: Path) -> str:
    """`--check-config` when the build has it: its one line, or raises when refused."""
    helped = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=30, env=clean_environment({}))
    if "--check-config" not in helped.stdout + helped.stderr:
        return "(this build has no --check-config)"
    result = subprocess.run([str(binary), "--check-config", "--config", str(config), "--storage", str(workdir / "check")],
                            capture_output=True, text=True, timeout=120, env=clean_environment({}))
    if result.returncode != 0:
        raise HarnessError(f"--check-config refused {config} ({result.returncode}): "
                           f"{(result.stdout + result.stderr).strip()[-2000:]}")
    return (result.stdout + result.stderr).strip().splitlines()[-1] if (result.stdout + result.stderr).strip() else "ok"


def measure(args, binary: Path, database: Database, work: Path, index: int, count: int, nodes_out: list) -> dict:
    name = f"spin_idle_{index}_{count}"
    workdir = work / name
    workdir.mkdir(parents=True)
    config = write_config(workdir, count, args.kinds)
    print(f"\n== {count} Spins ({'made at run time, kind door' if args.kinds else 'configured'}), "
          f"{args.nodes} nodes, lease {args.lease} s, database {name}", flush=True)
    checked = check_config(binary, config, workdir)
    checked = re.sub(r"\((door-\d+, ){3}[^)]*\)", "(door-000001, ...)", checked)   # not every name
    print(f"  check-config: {checked}", flush=True)
    database.query(f"CREATE DATABASE {name}")
    oid = database.query(f"SELECT oid FROM pg_database WHERE datname = '{name}'")[0][0]
    url = database.url(name)

    nodes = [Node(binary, f"n{i}", workdir, config, url, args.lease) for i in range(1, args.nodes + 1)]
    nodes_out[:] = nodes
    began = time.monotonic()
    for node in nodes:
        node.spawn()
    ready = wait_ready(nodes, began, args.ready_timeout)
    print(f"  ready after {ready:.2f} s ({', '.join(f'{n.name} {n.ready_after:.2f} s' for n in nodes)})", flush=True)
    created = None
    if args.kinds:
        created = make_spins(nodes, count)
        print(f"  made {count} doors: {created:.0f} creates/s", flush=True)

    print(f"  settling {args.settle:.0f} s", flush=True)
    time.sleep(args.settle)
    # Then until every node sees the others live and every Spin owned (at most --settle-max
    # more seconds): a cluster still taking leases or recovering Spins is not idle.
    deadline = time.monotonic() + args.settle_max
    is_settled, views = settled(nodes, count, args.kinds)
    while not is_settled and time.monotonic() < deadline:
        time.sleep(2)
        is_settled, views = settled(nodes, count, args.kinds)
    settled_after = time.monotonic() - began if is_settled else None
    if is_settled:
        print(f"  settled after {settled_after:.1f} s from start ({views})", flush=True)
    else:
        print(f"  NOT settled {args.settle + args.settle_max:.0f} s after ready ({views}); measuring anyway",
              flush=True)
    for node in nodes:
        if node.process.poll() is not None:
            raise HarnessError(f"{node.name} exited with {node.process.returncode} ({node.log_path}):\n{node.log_tail()}")
    start_up = database.query(f"SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE dbid = {oid} "
                              f"AND query NOT LIKE '%pg_stat%'")[0][0]

    xact = f"SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datid = {oid}"
    database.query("SELECT pg_stat_statements_reset()")
    window_began = time.monotonic()
    xact_before = int(database.query(xact)[0][0])
    node_cpu_before = {node.name: cpu_seconds(node.process.pid) for node in nodes}
    pg_cpu_before = database.cpu()
    time.sleep(args.seconds)
    rows = database.query(f"SELECT coalesce(sum(calls), 0), coalesce(sum(calls) FILTER (WHERE toplevel), 0) "
                          f"FROM pg_stat_statements WHERE dbid = {oid} AND query NOT LIKE '%pg_stat%'")
    xact_after = int(database.query(xact)[0][0])
    elapsed = time.monotonic() - window_began
    node_cpu_after = {node.name: cpu_seconds(node.process.pid) for node in nodes}
    pg_cpu_after = database.cpu()
    top = database.query(f"SELECT calls, toplevel, left(regexp_replace(query, '\\s+', ' ', 'g'), 100) "
                         f"FROM pg_stat_statements WHERE dbid = {oid} AND query NOT LIKE '%pg_stat%' "
                         f"ORDER BY calls DESC LIMIT 8")
    connections = database.query(f"SELECT count(*) FROM pg_stat_activity WHERE datid = {oid}")[0][0]
    rss = {node.name: rss_mib(node.process.pid) for node in nodes}
    still_settled, ownership = settled(nodes, count, args.kinds)

    statements, top_level = int(rows[0][0]), int(rows[0][1])
    transactions = xact_after - xact_before
    node_cpu = sum((node_cpu_after[n] or 0) - (node_cpu_before[n] or 0) for n in node_cpu_before)
    pg_cpu = sum(pg_cpu_after[pid] - pg_cpu_before[pid] for pid in pg_cpu_after if pid in pg_cpu_before)
    result = {"count": count, "nodes": args.nodes, "ready": ready, "created": created, "seconds": elapsed,
              "statements": statements / elapsed, "top_level": top_level / elapsed,
              "transactions": transactions / elapsed, "rss": rss, "node_cpu": node_cpu / elapsed,
              "pg_cpu": pg_cpu / elapsed, "connections": int(connections), "start_up": int(start_up),
              "settled_after": settled_after, "settled": is_settled and still_settled}

    print(f"  idle {elapsed:.1f} s: {statements} statements ({result['statements']:.1f}/s; top-level "
          f"{result['top_level']:.1f}/s), {transactions} transactions ({result['transactions']:.1f}/s); "
          f"{start_up} statements from start to the end of settling", flush=True)
    print(f"  CPU while idle: nodes {100 * result['node_cpu']:.1f} % of a core together, PostgreSQL "
          f"{100 * result['pg_cpu']:.1f} %; {connections} connections to the database", flush=True)
    print(f"  RSS: {', '.join(f'{n} {v:.1f} MiB' if v is not None else f'{n} ?' for n, v in rss.items())}; "
          f"at the end, GET /v1/cluster on each node: {ownership}"
          + ("" if still_settled else " (NOT settled)"), flush=True)
    print("  top statements by calls (calls, per s, top-level, first 100 characters):", flush=True)
    for calls, toplevel, text in top:
        print(f"    {int(calls):>8} {int(calls) / elapsed:>9.2f}/s {'t' if toplevel == 't' else 'nested':<6} {text}",
              flush=True)
    result["top"] = [(int(calls), text) for calls, _, text in top]

    print(f"  SIGTERM to every node: {stop_all(nodes)}", flush=True)
    nodes_out[:] = []
    try:
        database.query(f"DROP DATABASE {name} WITH (FORCE)")
    except subprocess.SubprocessError as error:
        print(f"  could not drop {name}: {error}", flush=True)
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def table(results: list[dict]) -> None:
    print("\n| Spins | nodes | ready after (s) | statements/s idle | transactions/s idle | statements/s per 1,000 Spins |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['count']:,}{'' if r['settled'] else ' *'} | {r['nodes']} | {r['ready']:.2f} | {r['statements']:.1f} | {r['transactions']:.1f} | "
              f"{r['statements'] / r['count'] * 1000:.1f} |")
    if not all(r["settled"] for r in results):
        print("\n\\* not settled: some node did not see every node live and every Spin owned before or after the "
              "window (GET /v1/cluster), so the cluster was still taking leases or recovering Spins, not idle.")
    print("\n| Spins | settled after (s) | RSS per node (MiB) | nodes' CPU idle (% of a core) | "
          "PostgreSQL CPU idle (% of a core) | connections | top-level statements/s | window (s) |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    for r in results:
        rss = ", ".join(f"{n} {v:.1f}" if v is not None else f"{n} ?" for n, v in r["rss"].items())
        after = f"{r['settled_after']:.1f}" if r["settled_after"] is not None else "no"
        print(f"| {r['count']:,} | {after} | {rss} | {100 * r['node_cpu']:.1f} | {100 * r['pg_cpu']:.1f} | "
              f"{r['connections']} | {r['top_level']:.1f} | {r['seconds']:.1f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary", type=Path, help="the spin-server to run")
    parser.add_argument("--counts", default="100,1000", help="Spin counts, comma-separated (default 100,1000)")
    parser.add_argument("--nodes", type=int, default=3, help="nodes in the cluster (default 3)")
    parser.add_argument("--seconds", type=float, default=30, help="length of the idle window measured (default 30)")
    parser.add_argument("--lease", type=int, default=10, help="SPIN_CLUSTER_LEASE_SECONDS (default 10)")
    parser.add_argument("--settle", type=float, help="seconds between ready and measuring (default 2 lease periods)")
    parser.add_argument("--settle-max", type=float, default=120,
                        help="further seconds to wait for every node live and every Spin owned (default 120)")
    parser.add_argument("--kinds", action="store_true", help="make the Spins with PUT (kind door), not in the config")
    parser.add_argument("--ready-timeout", type=float, default=600, help="seconds the nodes may take to be ready")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directories (logs, configs)")
    args = parser.parse_args()
    if args.settle is None:
        args.settle = 2 * args.lease
    counts = [int(part.replace("_", "")) for part in args.counts.split(",") if part.strip()]
    binary = args.binary.resolve()
    if not os.access(binary, os.X_OK):
        print(f"cluster-idle: {binary} is not an executable (swift build -c release --product spin-server)",
              file=sys.stderr)
        return 2
    for tool in ("psql",):
        if shutil.which(tool) is None:
            print(f"cluster-idle: {tool} is missing (Debian package postgresql)", file=sys.stderr)
            return 2

    # Ctrl-C raises KeyboardInterrupt; SIGTERM and SIGHUP do the same, so that `finally` cleans up.
    def interrupted(number, _frame):
        raise KeyboardInterrupt(f"signal {number}")
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGHUP, interrupted)

    work = Path(tempfile.mkdtemp(prefix="spin-cluster-idle-", dir="/tmp"))
    work.chmod(0o755)   # the database server runs as the postgres user when this runs as root
    database = Database(work / "pg")
    nodes: list[Node] = []
    results: list[dict] = []
    status = 0
    try:
        print(f"spin-server {binary} (modified {time.strftime('%Y-%m-%d %H:%M', time.localtime(binary.stat().st_mtime))}); "
              f"{os.cpu_count()} cores, load {' '.join(Path('/proc/loadavg').read_text().split()[:3])}; work {work}",
              flush=True)
        database.start()
        version = database.query("SHOW server_version")[0][0]
        print(f"PostgreSQL {version} at {database.admin_url} with pg_stat_statements (track all)", flush=True)
        for index, count in enumerate(counts, 1):
            results.append(measure(args, binary, database, work, index, count, nodes))
    except (HarnessError, subprocess.SubprocessError) as error:
        print(f"cluster-idle: {error}", file=sys.stderr, flush=True)
        status = 2
    except KeyboardInterrupt:
        print("cluster-idle: interrupted", file=sys.stderr, flush=True)
        status = 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # a second Ctrl-C must not cut the clean-up short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            stop_all(nodes, timeout=30)
        except Exception as error:  # noqa: BLE001 — clean up the rest regardless
            print(f"cluster-idle: stopping the nodes: {error}", file=sys.stderr)
            for node in nodes:
                if node.process and node.process.poll() is None:
                    node.process.kill()
        if args.keep:
            database.stop()
            print(f"kept {work} (PostgreSQL stopped; Tests/postgres/pg.sh start {work / 'pg'} to look at it)")
        else:
            database.remove()
            shutil.rmtree(work, ignore_errors=True)
    if results:
        table(results)
    return status


if __name__ == "__main__":
    sys.exit(main())
