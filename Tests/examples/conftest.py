"""The example packages under Examples/: each is built once before any test runs (so the
build does not count against a test's timeout), with `swift build --package-path`."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TODO_SERVER = REPO / "Examples" / "TodoServer"


def pytest_sessionstart(session):
    # Twice at most: a first build has once stopped with a non-zero status and no
    # diagnostic on a loaded machine; a real compile error fails both, with its message.
    for attempt in (1, 2):
        result = subprocess.run(["swift", "build", "--package-path", str(TODO_SERVER)], cwd=REPO, timeout=1800)
        if result.returncode == 0:
            return
        print(f"swift build --package-path Examples/TodoServer: exit status {result.returncode} (attempt {attempt})")
    pytest.exit("swift build --package-path Examples/TodoServer failed", returncode=2)


@pytest.fixture(scope="session")
def todo_server_bin() -> Path:
    output = subprocess.run(["swift", "build", "--package-path", str(TODO_SERVER), "--show-bin-path"],
                            cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    return Path(output) / "TodoServer"
