"""Fixtures: the shared server of the session and a factory for extra servers.

The server binary is `.build/debug/spin-server` of this checkout (override with
SPIN_SERVER_BIN); when it is missing it is built once, before any test runs (so the
build does not count against a test's timeout).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spin_e2e import REPO, SpinServer, TLSFiles, server_binary  # noqa: E402


def pytest_sessionstart(session):
    binary = server_binary()
    if binary.exists():
        return
    if "SPIN_SERVER_BIN" in os.environ:
        pytest.exit(f"SPIN_SERVER_BIN={binary} does not exist", returncode=2)
    result = subprocess.run(["swift", "build", "--product", "spin-server"], cwd=REPO, timeout=1800)
    if result.returncode != 0 or not binary.exists():
        pytest.exit("swift build --product spin-server failed", returncode=2)


@pytest.fixture(scope="session")
def server_bin() -> Path:
    return server_binary()


@pytest.fixture(scope="session")
def server(server_bin, tmp_path_factory):
    """The server most tests share: default config and flags, fresh storage."""
    instance = SpinServer(server_bin, tmp_path_factory.mktemp("server")).start()
    yield instance
    code = instance.terminate()
    assert code == 0, f"spin-server exited with {code} after SIGTERM:\n{instance.log_tail()}"


@pytest.fixture
def start_server(server_bin, tmp_path):
    """Starts extra servers: `start_server(args=[...], env={...}, tls=..., storage=...,
    config_patch={"limits": {...}})` (the patch is merged into a copy of the config).
    Each is stopped with SIGTERM at the end of the test and must exit 0 (unless the test
    stopped it itself)."""
    started: list[SpinServer] = []

    def start(*, args=None, env=None, tls=None, storage=None, port=None, name=None, use_config=True,
              config_patch=None) -> SpinServer:
        workdir = tmp_path / (name or f"server{len(started)}")
        instance = SpinServer(server_bin, workdir, args=args, env=env, tls=tls, storage=storage,
                              port=port, use_config=use_config, config_patch=config_patch)
        started.append(instance)
        return instance.start()

    yield start
    failures = []
    for instance in started:
        if instance.exit_code is not None or instance.process is None:
            continue
        try:
            code = instance.terminate()
        except AssertionError as error:
            failures.append(str(error))
            continue
        if code != 0:
            failures.append(f"exit code {code} after SIGTERM:\n{instance.log_tail()}")
    assert not failures, "\n".join(failures)


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory) -> TLSFiles:
    return TLSFiles(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def module_server(server_bin, tmp_path_factory):
    """Starts one extra server for a whole test module (a start-up failure is reported
    once per test, without waiting again)."""
    started: list[SpinServer] = []

    def start(*, env=None, tls=None, name="module") -> SpinServer:
        instance = SpinServer(server_bin, tmp_path_factory.mktemp(name), env=env, tls=tls)
        started.append(instance)
        return instance.start()

    yield start
    for instance in started:
        if instance.process is not None and instance.exit_code is None:
            code = instance.terminate()
            assert code == 0, f"exit code {code} after SIGTERM:\n{instance.log_tail()}"
