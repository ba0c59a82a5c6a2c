"""Per-Spin JSON Schemas: `GET /v1/spins/{name}/schema` describes what each Spin takes and
shows, for the default config and the machines example config; events made from the
schema are accepted, states validate against it; and schemathesis (`--checks all`)
finds nothing in the OpenAPI document built from the hosted Spins."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from spin_e2e import REPO, assert_error

HERE = Path(__file__).resolve().parent
MACHINES_CONFIG = REPO / "Config" / "examples" / "auth-machines.json"


def example_of(schema):
    """A value of `schema`, as the dashboard makes its example events: a const or the
    first enum value, the first oneOf branch, an object of its required members."""
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("oneOf"):
        return example_of(schema["oneOf"][0])
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {key: example_of(properties.get(key, {})) for key in schema.get("required", [])}
    if kind in ("integer", "number"):
        return min(max(0, schema.get("minimum", 0)), schema.get("maximum", 0) if "maximum" in schema else 0)
    if kind == "string":
        return "x" * max(1, schema.get("minLength", 0))
    if kind == "boolean":
        return False
    return None


def event_examples(schema):
    """One event per branch that names its type (not the machines' "any other type")."""
    branches = schema.get("oneOf", [schema])
    return [example_of(branch) for branch in branches if "not" not in branch.get("properties", {}).get("type", {})]


def machines_server(start_server):
    return start_server(use_config=False, args=["--config", str(MACHINES_CONFIG)], name="machines")


@pytest.fixture(params=["default", "machines"])
def configured(request, start_server):
    """A server of its own (the examples it sends would change the shared one's Spins)."""
    return start_server(name="default") if request.param == "default" else machines_server(start_server)


def test_every_spin_links_schemas_its_states_and_example_events_satisfy(configured):
    names = [spin["name"] for spin in configured.get("/v1/spins").json()["spins"]]
    assert names
    for name in names:
        spin = configured.spin(name)
        assert spin["schema"] == f"/v1/spins/{name}/schema"
        response = configured.get(spin["schema"])
        assert response.status_code == 200, response.text
        schemas = response.json()
        Draft202012Validator.check_schema(schemas["event"])
        Draft202012Validator.check_schema(schemas["state"])
        state_schema = Draft202012Validator(schemas["state"])
        event_schema = Draft202012Validator(schemas["event"])
        state_schema.validate(spin["state"])
        examples = event_examples(schemas["event"])
        assert examples, f"{name}: no example event in {schemas['event']}"
        for event in examples:
            event_schema.validate(event)
            reply = configured.post_events(name, event, wait=True)
            assert reply.status_code in (200, 409), f"{name}: {event} -> {reply.status_code} {reply.text}"
            if reply.status_code == 200:
                state_schema.validate(reply.json()["state"])
        # The OpenAPI document carries the same schemas.
        components = configured.get("/openapi.json").json()["components"]["schemas"]
        assert components[f"Spin.{name}.Event"] == schemas["event"]
        assert components[f"Spin.{name}.State"] == schemas["state"]


def test_an_event_outside_a_swift_spins_schema_is_refused(server):
    schema = server.get("/v1/spins/counter/schema").json()["event"]
    validator = Draft202012Validator(schema)
    for event in [{"type": ""}, {"type": "jump"}, {"kind": "increase"}]:
        assert not validator.is_valid(event)
        assert_error(server.post_events("counter", event), 422, "invalid_event")
    levels = Draft202012Validator(server.get("/v1/spins/levels/schema").json()["event"])
    too_far = {"type": "set", "left": 2_000_000_000, "right": 0}
    assert not levels.is_valid(too_far)
    assert_error(server.post_events("levels", too_far), 422, "invalid_event")


def test_a_machine_accepts_any_type_as_its_schema_says(start_server):
    server = machines_server(start_server)
    schema = Draft202012Validator(server.get("/v1/spins/authRouter/schema").json()["event"])
    for event in [{"type": ""}, {"type": "NOPE"}]:
        assert schema.is_valid(event)
        reply = server.post_events("authRouter", event, wait=True)
        assert reply.status_code == 200 and reply.json()["replies"] == [{"applied": False, "reason": "no_transition"}]
    assert not schema.is_valid({"type": 1})
    assert_error(server.post_events("authRouter", {"type": 1}), 422, "invalid_event")


def schemathesis_command() -> str:
    beside = Path(sys.executable).parent / "schemathesis"
    found = str(beside) if beside.exists() else shutil.which("schemathesis")
    if found is None:
        pytest.fail("schemathesis is not installed (Tests/setup.sh installs Tests/e2e/requirements.txt)")
    return found


@pytest.mark.timeout(600)
@pytest.mark.parametrize("config", ["default", "machines"])
def test_schemathesis_finds_nothing(config, start_server, tmp_path):
    server = start_server(name="fuzzed") if config == "default" else machines_server(start_server)
    command = [schemathesis_command(), "--config-file", str(HERE / "schemathesis.toml"), "run",
               f"{server.base_url}/openapi.json", "--checks", "all", "--max-examples", "40", "--seed", "1",
               "--no-color", "--workers", "1"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=540, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
