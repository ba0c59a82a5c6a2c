"""The example packages under Examples/: each is built once before any test runs (so the
build does not count against a test's timeout), with `swift build --package-path`, into
one scratch directory they share (`.build-examples`, as .ci/run builds them): the second
package reuses what the first built of this package and its dependencies."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TODO_SERVER = REPO / "Examples" / "TodoServer"
GREETER = REPO / "Examples" / "Greeter"
EXAMPLES = [TODO_SERVER, GREETER]
SCRATCH = REPO / ".build-examples"


def swift_build(package: Path, *arguments: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(["swift", "build", "--package-path", str(package), "--scratch-path", str(SCRATCH), *arguments],
                          cwd=REPO, **kwargs)


def pytest_sessionstart(session):
    for package in EXAMPLES:
        # Twice at most: a first build has once stopped with a non-zero status and no
        # diagnostic on a loaded machine; a real compile error fails both, with its message.
        for attempt in (1, 2):
            result = swift_build(package, timeout=1800)
            if result.returncode == 0:
                break
            print(f"swift build --package-path {package.relative_to(REPO)}: exit status {result.returncode} (attempt {attempt})")
        else:
            pytest.exit(f"swift build --package-path {package.relative_to(REPO)} failed", returncode=2)


def bin_path(package: Path) -> Path:
    return Path(swift_build(package, "--show-bin-path", capture_output=True, text=True, check=True).stdout.strip())


@pytest.fixture(scope="session")
def todo_server_bin() -> Path:
    return bin_path(TODO_SERVER) / "TodoServer"


@pytest.fixture(scope="session")
def greeter_bin() -> Path:
    return bin_path(GREETER) / "greeter"


def wait_for(predicate, timeout=15):
    """The first truthy value of `predicate`, polled until `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")
