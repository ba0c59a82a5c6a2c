"""Config/spin-server.schema.json (JSON Schema 2020-12, for editors and CI linting of
config files) agrees with the server: every config file in the repository validates,
its keys are the documented keys (SpinServerConfiguration+Loading.swift's table), and
configs it refuses `spin-server --check-config` refuses too (exit 64), and the reverse."""
from __future__ import annotations

import json
import re
import subprocess

import pytest
from jsonschema import Draft202012Validator

from spin_e2e import REPO, clean_environment

SCHEMA = json.loads((REPO / "Config" / "spin-server.schema.json").read_text())
VALIDATOR = Draft202012Validator(SCHEMA)


def documented_keys() -> set[str]:
    source = (REPO / "Sources" / "SpinServer" / "Config" / "SpinServerConfiguration+Loading.swift").read_text()
    return set(re.findall(r"^/// \| `([A-Za-z.]+)` \|", source, flags=re.MULTILINE))


def schema_keys() -> set[str]:
    """`section.key` for the keys of object sections (`section.key.sub` a level deeper),
    `section` for list sections."""
    def walk(prefix: str, definition: dict) -> set[str]:
        properties = definition.get("properties")
        if properties is None or "array" in definition.get("type", []):
            return {prefix}
        keys = set()
        for key, child in properties.items():
            keys |= walk(f"{prefix}.{key}", child)
        return keys
    keys = set()
    for section, definition in SCHEMA["properties"].items():
        if section != "$schema":
            keys |= walk(section, definition)
    return keys


def test_the_schema_is_valid_json_schema():
    Draft202012Validator.check_schema(SCHEMA)


def test_the_schema_has_exactly_the_documented_keys():
    assert schema_keys() == documented_keys()


@pytest.mark.parametrize("path", [
    "Config/spin-server.json", *[str(p.relative_to(REPO)) for p in sorted((REPO / "Config" / "examples").glob("*.json"))],
    "Tests/cluster/chaos-config.json",
])
def test_every_config_file_of_the_repository_validates(path):
    errors = [f"{'.'.join(map(str, e.path))}: {e.message}" for e in VALIDATOR.iter_errors(json.loads((REPO / path).read_text()))]
    assert errors == []


CASES = [
    ({"listen": {"port": 70000}}, False),
    ({"limits": {"inbox": 0}}, False),
    ({"lmits": {}}, False),
    ({"auth": {"tokens": [{"token": "a"}]}}, False),
    ({"auth": {"tokens": [{"token": "a", "spin": {"write": ["x*"]}}]}}, True),
    ({"auth": {"tokens": [{"token": "a", "spin": {"delete": ["x"]}}]}}, False),
    ({"auth": {"rules": [{"subject": "d-*"}]}}, False),
    ({"auth": {"rules": [{"subject": "d-*", "gear": {"read": ["auth"]}}]}}, True),
    ({"storage": {"fsync": "sometimes"}}, False),
    ({"storage": {"history": "all", "snapshotEvery": 100}}, True),
    ({"storage": {"history": {"days": 30}}}, True),
    ({"storage": {"history": {"days": 0}}}, False),
    ({"storage": {"history": {"weeks": 1}}}, False),
    ({"storage": {"history": "everything"}}, False),
    ({"storage": {"snapshotEvery": 5}}, False),
    ({"log": {"level": "info", "format": "json"}}, True),
    ({"cluster": {"leaseSeconds": 0}}, False),
    ({"spins": [{"name": "c", "kind": "counter"}]}, True),
    ({"spins": [{"name": "c d", "kind": "counter"}]}, False),
    ({"$schema": "spin-server.schema.json"}, True),
    ({"auth": {"jwt": {"keys": [{"alg": "HS256", "secret": "x" * 32}], "leewaySeconds": 5}}}, True),
    ({"auth": {"jwt": {"keys": [{"alg": "none", "secret": "x" * 32}]}}}, False),
    ({"auth": {"jwt": {"keys": [{"alg": "HS256", "secret": "short"}]}}}, False),
    ({"auth": {"jwt": {"keys": [{"alg": "RS256", "secret": "x" * 32}]}}}, False),
    ({"auth": {"jwt": {"keys": [{"alg": "HS256", "secret": "x" * 32}], "leewaySeconds": 301}}}, False),
]


@pytest.mark.parametrize("config,valid", CASES)
def test_the_schema_and_the_server_agree(config, valid, server_bin, tmp_path):
    assert VALIDATOR.is_valid(config) == valid
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = subprocess.run([str(server_bin), "--config", str(path), "--check-config"], capture_output=True,
                            text=True, timeout=30, env=clean_environment(), cwd=tmp_path)
    assert result.returncode == (0 if valid else 64), result.stderr
