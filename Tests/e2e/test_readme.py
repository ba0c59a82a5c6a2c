"""The commands of README.md, taken from the README itself and run against a server.

Every `curl` line of the README's shell blocks runs (with localhost:8080 pointed at the
test server), so the README cannot show a command that does not work. The TLS and token
walk-through runs whole: the openssl command makes the certificate, the server starts
with the README's flags and variables, and the README's curl reads the Spins over TLS.
"""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

from spin_e2e import REPO

README = (REPO / "README.md").read_text()


def shell_commands(section_heading: str | None = None) -> list[str]:
    """The commands of the ```sh blocks (continuation lines joined), optionally only
    those under one heading."""
    text = README
    if section_heading:
        start = text.index(section_heading)
        following = re.search(r"\n## ", text[start + len(section_heading):])
        text = text[start:start + len(section_heading) + (following.start() if following else len(text))]
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                commands.append(re.sub(r"\s+#.*$", "", line))
    return commands


def run(command: str, cwd: Path, timeout: float = 10) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_every_curl_command_of_the_readme_works(start_server, tmp_path):
    server = start_server(name="readme")
    server.settled_sequences()
    machine_example = shell_commands(MACHINES_SECTION)
    curls = [c for c in shell_commands() if c.startswith("curl") and "https://" not in c and c not in machine_example]
    assert len(curls) >= 6, curls
    for command in curls:
        command = command.replace("localhost:8080", f"127.0.0.1:{server.port}")
        streaming = " -N " in command
        if streaming:
            command = command.replace("curl -N", "curl -N --max-time 2")
        result = run(command, tmp_path)
        assert result.returncode in ((0, 28) if streaming else (0,)), (command, result.stderr)
        if streaming:
            first = next(line for line in result.stdout.splitlines() if line.startswith("data: "))
            assert json.loads(first[len("data: "):])["type"] == "snapshot"
        else:
            answer = json.loads(result.stdout)
            assert "error" not in answer, (command, answer)


MACHINES_SECTION = "## Machines in JSON"


def test_the_readme_auth_machines_example_runs_as_shown(start_server, tmp_path):
    """The machines section's commands against `Config/examples/auth-machines.json`."""
    serve, *curls = shell_commands(MACHINES_SECTION)
    words = shlex.split(serve)
    flags = words[words.index("spin-server") + 1:]
    assert flags[0] == "--config"
    server = start_server(name="readme-machines", use_config=False, args=["--config", str(REPO / flags[1])])
    assert len(curls) == 3, curls
    for command in curls:
        result = run(command.replace("localhost:8080", f"127.0.0.1:{server.port}"), tmp_path)
        assert result.returncode == 0, (command, result.stderr)
        assert "error" not in json.loads(result.stdout), (command, result.stdout)
    # The router catches the feature's Gear event a moment after the last POST.
    deadline = time.monotonic() + 5
    while server.spin("authRouter")["state"]["value"] != "checkingAuthorization" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.spin("authRouter")["state"] == {"value": "checkingAuthorization",
                                                 "context": {"authorizationChecks": 2}}


def test_the_readme_websocket_client_command_gets_the_snapshot(server, tmp_path):
    command = next(c for c in shell_commands() if c.startswith("python3 -m websockets"))
    command = command.replace("localhost:8080", f"127.0.0.1:{server.port}")
    # The interactive client prints what it receives; keep its stdin open for a moment.
    result = run(f"(sleep 2) | timeout 5 {command}", tmp_path, timeout=15)
    assert '"type":"snapshot"' in result.stdout, (result.stdout, result.stderr)


def test_the_readme_tls_and_token_walkthrough(start_server, tmp_path):
    commands = shell_commands("### TLS and tokens")
    openssl, serve, curl = commands
    assert run(openssl, tmp_path, timeout=60).returncode == 0
    # `SPIN_TOKENS='...' swift run spin-server FLAGS`: the same variables and flags on the built binary.
    words = shlex.split(serve)
    env = dict(word.split("=", 1) for word in words if re.match(r"^SPIN_[A-Z_]+=", word))
    flags = words[words.index("spin-server") + 1:]
    assert flags == ["--tls-certificate", "cert.pem", "--tls-key", "key.pem"]
    # The harness passes exactly these flags for `tls` (and trusts the self-signed certificate).
    readme_tls = SimpleNamespace(certificate=tmp_path / "cert.pem", key=tmp_path / "key.pem", ca=tmp_path / "cert.pem")
    server = start_server(name="readme-tls", tls=readme_tls, env=env)
    result = run(curl.replace("localhost:8080", f"localhost:{server.port}"), tmp_path)
    assert result.returncode == 0, result.stderr
    names = [spin["name"] for spin in json.loads(result.stdout)["spins"]]
    assert names == ["counter", "levels", "feature", "router", "session"]
    anonymous = run(f"curl -s -o /dev/null -w '%{{http_code}}' --cacert cert.pem https://localhost:{server.port}/v1/spins",
                    tmp_path)
    assert anonymous.stdout == "401"
