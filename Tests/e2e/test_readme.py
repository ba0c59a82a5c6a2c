"""The commands of README.md and docs/*.md, taken from the documents themselves and run
against a server; and the documents' links, the default config's Spins and the lock types
they list, checked against the files.

Every `curl` line of the shell blocks of README.md, docs/PROTOCOL.md and
docs/OPERATIONS.md runs (with localhost:8080 pointed at the test server), so no document
shows a command that does not work. The TLS and token walk-through of docs/OPERATIONS.md
runs whole: the openssl command makes the certificate, the server starts with its flags
and variables, and its curl reads the Spins over TLS. The machines example of
docs/MACHINES.md runs against its own config.
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
PROTOCOL = (REPO / "docs/PROTOCOL.md").read_text()
OPERATIONS = (REPO / "docs/OPERATIONS.md").read_text()
MACHINES = (REPO / "docs/MACHINES.md").read_text()
ARCHITECTURE = (REPO / "docs/ARCHITECTURE.md").read_text()


def prose_lines(text: str) -> list[tuple[str, bool]]:
    """Each line of `text`, with whether it is outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
            lines.append((line, False))
        else:
            lines.append((line, not fenced))
    return lines


def section(text: str, heading: str) -> str:
    """The lines from `heading` up to the next heading of the same or a higher level
    (outside code blocks, whose `# ` lines are comments)."""
    level = len(heading) - len(heading.lstrip("#"))
    taken: list[str] = []
    for line, prose in prose_lines(text):
        if taken and prose and re.match(r"#{1,%d} " % level, line):
            break
        if taken or (prose and line == heading):
            taken.append(line)
    assert taken, f"no heading {heading!r}"
    return "\n".join(taken)


def shell_commands(text: str = README, section_heading: str | None = None) -> list[str]:
    """The commands of the ```sh blocks of `text` (continuation lines joined), optionally
    only those under one heading."""
    if section_heading:
        text = section(text, section_heading)
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
    documented = shell_commands(README) + shell_commands(PROTOCOL) + shell_commands(OPERATIONS)
    curls = [c for c in documented if c.startswith("curl") and "https://" not in c]
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


def test_the_readme_auth_machines_example_runs_as_shown(start_server, tmp_path):
    """docs/MACHINES.md's commands against `Config/examples/auth-machines.json`."""
    serve, *curls = shell_commands(MACHINES)
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
    command = next(c for c in shell_commands(README) if c.startswith("python3 -m websockets"))
    command = command.replace("localhost:8080", f"127.0.0.1:{server.port}")
    # The interactive client prints what it receives; keep its stdin open for a moment.
    result = run(f"(sleep 2) | timeout 5 {command}", tmp_path, timeout=15)
    assert '"type":"snapshot"' in result.stdout, (result.stdout, result.stderr)


def test_the_readme_tls_and_token_walkthrough(start_server, tmp_path):
    commands = shell_commands(OPERATIONS, "## TLS and tokens")
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
    assert names == ["counter", "feature", "levels", "router", "session"]  # by name
    anonymous = run(f"curl -s -o /dev/null -w '%{{http_code}}' --cacert cert.pem https://localhost:{server.port}/v1/spins",
                    tmp_path)
    assert anonymous.stdout == "401"


# -- the documents themselves -----------------------------------------------------------

LINKED_DOCUMENTS = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file: lower case, punctuation
    dropped, spaces as hyphens, a repeated one numbered."""
    seen: dict[str, int] = {}
    for line, prose in prose_lines(path.read_text()):
        heading = re.match(r"#{1,6} (.*)", line) if prose else None
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        yield slug if count == 0 else f"{slug}-{count}"


def relative_links(path: Path) -> list[str]:
    text = "\n".join(line for line, prose in prose_lines(path.read_text()) if prose)
    text = re.sub(r"`[^`]*`", "", text)
    return [target for target in re.findall(r"\]\(([^)\s]+)\)", text)
            if not re.match(r"[a-z]+:", target)]


def test_every_relative_link_of_the_documents_resolves():
    broken = []
    checked = 0
    for document in LINKED_DOCUMENTS:
        for target in relative_links(document):
            checked += 1
            file_part, _, anchor = target.partition("#")
            destination = (document.parent / file_part).resolve() if file_part else document
            if not destination.exists():
                broken.append(f"{document.relative_to(REPO)}: {target} (no such file)")
            elif anchor and (destination.suffix != ".md" or anchor not in set(anchors(destination))):
                broken.append(f"{document.relative_to(REPO)}: {target} (no such heading)")
    assert checked > 40, checked
    assert not broken, broken


def test_the_readmes_example_spins_are_the_default_configs():
    """The README's table of example Spins lists exactly what Config/spin-server.json hosts."""
    table = section(README, "## The example Spins")
    documented = re.findall(r"^\| `([^`]+)` \|", table, flags=re.M)
    config = json.loads((REPO / "Config/spin-server.json").read_text())
    hosted = [spin["name"] for spin in config["spins"]]
    assert documented == hosted
    count = ["no", "one", "two", "three", "four", "five", "six", "seven"][len(hosted)]
    assert f"hosts these {count}" in table
    assert f"hosts the {count} examples" in OPERATIONS


# Types that guard or wait: each must be named in docs/ARCHITECTURE.md's "Locks", and (but
# for the two used everywhere) every source file that uses one.
LOCK_TYPES = r"\b(Protected|NSLock|NSRecursiveLock|NSCondition|NSConditionLock|Mutex|DispatchSemaphore|" \
             r"DispatchGroup|os_unfair_lock|OSAllocatedUnfairLock|pthread_mutex_t|pthread_rwlock_t|Atomic|ManagedAtomic)\b"
EVERYWHERE = {"Protected", "Atomic"}


def test_every_lock_type_in_the_sources_is_documented():
    locks = section(ARCHITECTURE, "## Locks")
    undocumented = []
    for source in sorted((REPO / "Sources").rglob("*.swift")):
        code = "\n".join(line.split("//", 1)[0] for line in source.read_text().splitlines())
        for lock in sorted(set(re.findall(LOCK_TYPES, code))):
            if lock == "pthread_mutex_t" and source.name == "Protected.swift":
                continue  # Protected's own mutex
            if f"`{lock}`" not in locks or (lock not in EVERYWHERE and f"`{source.name}`" not in locks):
                undocumented.append(f"{source.relative_to(REPO)}: {lock}")
    assert not undocumented, f"not in docs/ARCHITECTURE.md, Locks: {undocumented}"


# The Swift code blocks of the documents, each held verbatim by a Swift test that runs
# it (but for `private`/`static` at file or type scope, and the values named here that a
# test must choose itself): (document, which blocks, test file, substitutions).
SWIFT_EXCERPTS = [
    ("Sources/SpinCore/SpinCore.docc/GettingStarted.md", "Levels", "Tests/SpinCoreTests/ReadmeTests.swift", {}),
    ("Sources/SpinCore/SpinCore.docc/Feedbacks.md", "Feedback.react", "Tests/SpinCoreTests/ReadmeTests.swift", {}),
    ("Sources/SpinCore/SpinCore.docc/TransitionTables.md", "TransitionTable<", "Tests/SpinCoreTests/TransitionTableReadmeTests.swift",
     {"table: table, environment: World(": "table: ReadmeLogin.table, environment: ReadmeLogin.World("}),
    ("Sources/SpinCore/SpinCore.docc/GettingStarted.md", "SpinTester", "Tests/SpinExamplesTests/CounterTests.swift",
     {"func counter_CountsTo10()": "func withATick_EachStepWaitsForTheClock()"}),
    ("docs/PROTOCOL.md", "SpinClient(", "Tests/SpinClientTests/ReadmeTests.swift",
     {'"http://127.0.0.1:8080"': '"http://127.0.0.1:\\(port)"'}),
    ("docs/MACHINES.md", "MachineDefinition(", "Tests/SpinMachinesTests/MachinesReadmeTests.swift",
     {'"Config/machines/door.json"': "path"}),
]


def swift_blocks(text: str) -> list[str]:
    return re.findall(r"```swift\n(.*?)```", text, flags=re.S)


def test_the_documents_swift_excerpts_are_the_code_of_their_tests():
    def normalized(line: str) -> str:
        return re.sub(r"^(private |fileprivate |static )+", "", line.strip())

    for document, marker, test_file, substitutions in SWIFT_EXCERPTS:
        blocks = [block for block in swift_blocks((REPO / document).read_text()) if marker in block]
        assert blocks, (document, marker)
        tested = {normalized(line) for line in (REPO / test_file).read_text().splitlines()}
        for block in blocks:
            for old, new in substitutions.items():
                block = block.replace(old, new)
            missing = [line for line in map(normalized, block.splitlines()) if line and line not in tested]
            assert not missing, f"{document}: lines not in {test_file}: {missing}"
