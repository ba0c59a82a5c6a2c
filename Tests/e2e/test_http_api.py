"""The HTTP API of docs/PROTOCOL.md through `requests`: every route, every error status with
its code, and that a rejected request changes nothing."""
from __future__ import annotations

import itertools
import json
import re

import pytest
from openapi_spec_validator import validate as validate_openapi

from spin_e2e import assert_error, metric_value, parse_metrics

EXAMPLES = {"counter", "levels", "feature", "router"}
_unique = itertools.count(1000)


def unique_level() -> int:
    """A value no other test sets: `set` with left == right leaves the levels converged,
    so no feedback adds events behind the test's back."""
    return next(_unique)


def settle_levels(server) -> int:
    value = unique_level()
    response = server.post_events("levels", {"type": "set", "left": value, "right": value}, wait=True)
    assert response.status_code == 200, response.text
    return response.json()["sequence"]


# -- the routes -------------------------------------------------------------------------

def test_healthz_answers_ok(server):
    response = server.get("/healthz")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    assert response.json() == {"status": "ok"}


def test_readyz_answers_ready_once_the_spins_run(server):
    response = server.get("/readyz")
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "ready"}


def test_spins_lists_the_hosted_examples_with_sequence_and_kind(server):
    response = server.get("/v1/spins")
    assert response.status_code == 200
    spins = response.json()["spins"]
    names = [spin["name"] for spin in spins]
    assert EXAMPLES <= set(names), names
    assert len(names) == len(set(names)), names
    for spin in spins:
        assert set(spin) >= {"name", "sequence", "kind"}, spin
        assert isinstance(spin["sequence"], int) and spin["sequence"] >= 0, spin
        assert isinstance(spin["kind"], str) and spin["kind"], spin


def test_each_example_spin_answers_its_state(server):
    server.settled_sequences()
    counter = server.spin("counter")
    assert counter["name"] == "counter"
    assert set(counter["state"]) == {"value"}
    assert counter["state"]["value"] >= 10, "the counter counts to 10 at start-up"
    levels = server.spin("levels")
    assert set(levels["state"]) == {"left", "right"}
    assert levels["state"]["left"] == levels["state"]["right"], "the levels converge"
    feature = server.spin("feature")
    assert set(feature["state"]) == {"status", "items"}
    assert feature["state"]["status"] in {"idle", "loading", "loaded", "unauthorized"}
    router = server.spin("router")
    assert set(router["state"]) == {"route", "authorizationChecks"}
    assert router["state"]["route"] in {"launching", "checkingAuthorization", "home", "login"}


def test_fresh_server_counts_to_ten_converges_levels_and_routes_home(start_server):
    fresh = start_server(name="fresh")
    fresh.settled_sequences()
    assert fresh.spin("counter")["state"] == {"value": 10}
    assert fresh.spin("counter")["sequence"] == 10
    assert fresh.spin("levels")["state"] == {"left": 15, "right": 15}
    assert fresh.spin("router")["state"] == {"route": "home", "authorizationChecks": 1}
    assert fresh.spin("feature")["state"]["status"] == "idle"


def test_gears_lists_auth_attached_to_feature_and_router(server):
    response = server.get("/v1/gears")
    assert response.status_code == 200
    gears = {gear["name"]: gear for gear in response.json()["gears"]}
    assert "auth" in gears, gears
    assert sorted(gears["auth"]["attached"]) == ["feature", "router"]


def test_dashboard_is_an_html_page(server):
    response = server.get("/")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/html"), response.headers
    assert "<html" in response.text.lower()


def test_post_event_answers_202_after_applying_it(server):
    before = settle_levels(server)
    value = unique_level()
    response = server.post_events("levels", {"type": "set", "left": value, "right": value})
    assert response.status_code == 202, response.text
    assert response.json() == {"accepted": 1, "sequence": before + 1}
    # 202 comes after the event is applied: a read right after sees it.
    assert server.spin("levels") == {"name": "levels", "sequence": before + 1, "status": "running",
                                     "state": {"left": value, "right": value},
                                     "schema": "/v1/spins/levels/schema"}


def test_wait_true_answers_200_with_the_state_after_the_last_event(server):
    before = settle_levels(server)
    value = unique_level()
    response = server.post_events("levels", [{"type": "set", "left": value, "right": value}], wait=True)
    assert response.status_code == 200, response.text
    assert response.json() == {"sequence": before + 1, "state": {"left": value, "right": value},
                               "replies": [{"applied": True}]}


def test_batch_is_applied_in_order(server):
    before = settle_levels(server)
    values = [unique_level() for _ in range(5)]
    batch = [{"type": "set", "left": v, "right": v} for v in values]
    response = server.post_events("levels", batch, wait=True)
    assert response.status_code == 200, response.text
    assert response.json() == {"sequence": before + 5, "state": {"left": values[-1], "right": values[-1]},
                               "replies": [{"applied": True}] * 5}
    # And without wait: accepted counts the events, sequence is the last one's.
    response = server.post_events("levels", list(reversed(batch)))
    assert response.status_code == 202
    assert response.json() == {"accepted": 5, "sequence": before + 10}
    assert server.spin("levels")["state"] == {"left": values[0], "right": values[0]}


def test_batch_of_mixed_events_moves_the_counter_in_order(server):
    server.settled_sequences()
    start = server.spin("counter")
    assert start["state"]["value"] >= 10
    batch = [{"type": "increase"}, {"type": "increase"}, {"type": "decrease"}, {"type": "increase"}]
    response = server.post_events("counter", batch, wait=True)
    assert response.status_code == 200, response.text
    assert response.json() == {"sequence": start["sequence"] + 4, "state": {"value": start["state"]["value"] + 2},
                               "replies": [{"applied": True}] * 4}


def test_content_type_with_charset_is_accepted(server):
    before = settle_levels(server)
    value = unique_level()
    response = server.post("/v1/spins/levels/events", data=json.dumps({"type": "set", "left": value, "right": value}),
                           headers={"Content-Type": "application/json; charset=utf-8"})
    assert response.status_code == 202, response.text
    assert response.json()["sequence"] == before + 1


# -- errors: each with its code, and nothing changes ---------------------------------------------

def _unchanged(server, baseline):
    assert server.settled_sequences() == baseline, "a rejected request changed a Spin"


def test_malformed_json_is_400_and_changes_nothing(server):
    settle_levels(server)
    baseline = server.settled_sequences()
    for body in ['{"type":', "not json", "", "[{\"type\":\"increaseLeft\"},"]:
        response = server.post("/v1/spins/levels/events", data=body, headers={"Content-Type": "application/json"})
        assert_error(response, 400, "malformed_json")
    _unchanged(server, baseline)


@pytest.mark.parametrize("body,path", [
    ('{"type":"set","left":1,"right":2,"left":3}', "left"),
    ('[{"type":"increaseLeft"},{"type":"set","left":1,"right":2,"right":9}]', "[1].right"),
    ('{"type":"increaseLeft","type":"decreaseLeft"}', "type"),
])
def test_a_repeated_key_is_400_malformed_json_naming_it_and_changes_nothing(server, body, path):
    settle_levels(server)
    baseline = server.settled_sequences()
    response = server.post("/v1/spins/levels/events", data=body, headers={"Content-Type": "application/json"})
    assert_error(response, 400, "malformed_json", message_contains=f"at {path}")
    _unchanged(server, baseline)


def test_unknown_spin_is_404_spin_not_found(server):
    baseline = server.settled_sequences()
    assert_error(server.get("/v1/spins/nope"), 404, "spin_not_found", message_contains="nope")
    assert_error(server.post_events("nope", {"type": "increase"}), 404, "spin_not_found")
    assert_error(server.get("/v1/spins/nope/stream"), 404, "spin_not_found")
    _unchanged(server, baseline)


def test_unknown_gear_and_route_are_404(server):
    assert_error(server.get("/v1/gears/nope/stream"), 404, "gear_not_found", message_contains="nope")
    assert_error(server.get("/v1/nothing/here"), 404, "not_found")
    assert_error(server.get("/healthz/extra"), 404, "not_found")


@pytest.mark.parametrize("method,path,allowed", [
    ("PATCH", "/v1/spins/levels", "GET"),
    ("PUT", "/v1/spins/levels/events", "POST"),
    ("GET", "/v1/spins/levels/events", "POST"),
    ("POST", "/healthz", "GET"),
    ("POST", "/v1/spins", "GET"),
    ("PATCH", "/v1/gears", "GET"),
])
def test_wrong_method_is_405_with_allow(server, method, path, allowed):
    baseline = server.settled_sequences()
    response = server.request(method, path, data=json.dumps({"type": "increaseLeft"}),
                              headers={"Content-Type": "application/json"})
    assert_error(response, 405, "method_not_allowed")
    allow = [item.strip() for item in response.headers.get("Allow", "").split(",")]
    assert allowed in allow, response.headers
    _unchanged(server, baseline)


def test_body_over_the_limit_is_413_and_changes_nothing(server):
    settle_levels(server)
    baseline = server.settled_sequences()
    # 2 MiB of valid events: only the size is wrong.
    event = {"type": "set", "left": 1, "right": 1}
    count = (2 << 20) // len(json.dumps(event)) + 1
    body = json.dumps([event] * count)
    assert len(body) > 2 << 20
    response = server.post("/v1/spins/levels/events", data=body, headers={"Content-Type": "application/json"},
                           timeout=15)
    assert_error(response, 413, "body_too_large")  # the code docs/PROTOCOL.md documents
    _unchanged(server, baseline)
    assert server.get("/healthz").status_code == 200


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_wrong_content_type_is_415_and_changes_nothing(server, content_type):
    baseline = server.settled_sequences()
    headers = {"Content-Type": content_type} if content_type else {}
    response = server.post("/v1/spins/levels/events", data=json.dumps({"type": "increaseLeft"}).encode(), headers=headers)
    assert_error(response, 415, "unsupported_media_type")
    _unchanged(server, baseline)


@pytest.mark.parametrize("spin,body,field", [
    ("levels", {"type": "set", "left": 1}, "right"),
    ("levels", [{"type": "increaseLeft"}, {"type": "set", "left": 1}], "[1].right"),
    ("levels", {"type": "jump"}, "type"),
    ("levels", {"left": 1}, "type"),
    ("levels", {"type": "set", "left": "one", "right": 2}, "left"),
    ("feature", {"type": "loaded"}, "items"),
    ("counter", [{"type": "increase"}, {"type": "increase"}, {"type": "fly"}], "[2]"),
    ("counter", 42, ""),
])
def test_invalid_event_is_422_naming_the_field_and_changes_nothing(server, spin, body, field):
    baseline = server.settled_sequences()
    response = server.post_events(spin, body)
    assert_error(response, 422, "invalid_event", message_contains=field)
    _unchanged(server, baseline)


def test_bad_wait_parameter_is_400_and_changes_nothing(server):
    baseline = server.settled_sequences()
    response = server.post("/v1/spins/levels/events?wait=maybe", data=json.dumps({"type": "increaseLeft"}),
                           headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "bad_request"
    _unchanged(server, baseline)


# -- metrics ------------------------------------------------------------------------------------

FAMILIES = {
    "spin_events_applied_total": "counter",
    "spin_sequence": "gauge",
    "spin_http_requests_total": "counter",
    "spin_event_apply_seconds": "histogram",
    "spin_event_stage_seconds": "histogram",
}


def test_metrics_expose_the_documented_families(server):
    response = server.get("/metrics")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain"), response.headers
    text = response.text
    for family, kind in FAMILIES.items():
        assert f"# TYPE {family} {kind}" in text, f"no {kind} {family} in /metrics"
    samples = parse_metrics(text)
    names = {name for name, _, _ in samples}
    assert {"spin_event_apply_seconds_bucket", "spin_event_apply_seconds_sum", "spin_event_apply_seconds_count"} <= names
    for spin in EXAMPLES:
        assert any(n == "spin_sequence" and labels.get("spin") == spin for n, labels, _ in samples), spin
        assert any(n == "spin_events_applied_total" and labels.get("spin") == spin for n, labels, _ in samples), spin
    assert any(labels.get("le") == "+Inf" for n, labels, _ in samples if n == "spin_event_apply_seconds_bucket")


def test_metrics_count_the_requests_and_events(server):
    settle_levels(server)
    server.settled_sequences()
    before = server.metrics()
    for _ in range(5):
        assert server.get("/healthz").status_code == 200
    for _ in range(3):
        assert server.get("/v1/spins/nope").status_code == 404
    value = unique_level()
    assert server.post_events("levels", [{"type": "set", "left": value, "right": value}] * 4).status_code == 202
    after = server.metrics()

    def delta(name, **labels):
        return metric_value(after, name, **labels) - metric_value(before, name, **labels)

    assert delta("spin_http_requests_total", route="/healthz", status="200") == 5
    assert sum(value for name, labels, value in parse_metrics(after)
               if name == "spin_http_requests_total" and labels.get("status") == "404") \
        - sum(value for name, labels, value in parse_metrics(before)
              if name == "spin_http_requests_total" and labels.get("status") == "404") == 3
    assert delta("spin_events_applied_total", spin="levels") == 4
    assert delta("spin_sequence", spin="levels") == 4
    assert metric_value(after, "spin_sequence", spin="levels") == server.sequence("levels")
    assert delta("spin_event_apply_seconds_count") >= 1
    # The one accepted POST is timed in each of its five stages; the GETs and 404s are not.
    for stage in ("parse", "admit", "apply", "journal", "ack"):
        assert delta("spin_event_stage_seconds_count", stage=stage) == 1, stage


# -- OpenAPI -------------------------------------------------------------------------------------

def test_openapi_document_is_valid_openapi_3_1(server):
    response = server.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    document = response.json()
    assert str(document.get("openapi", "")).startswith("3.1"), document.get("openapi")
    validate_openapi(document)


def test_every_openapi_path_answers(server):
    document = server.get("/openapi.json").json()
    paths = document["paths"]
    # A Spin's routes are listed once per hosted Spin, each with its own schemas.
    for required in ["/healthz", "/readyz", "/v1/spins", "/v1/spins/levels", "/v1/spins/levels/events",
                     "/v1/spins/levels/stream", "/v1/spins/levels/schema", "/v1/spins/session/events",
                     "/v1/gears", "/v1/gears/{name}/stream", "/metrics", "/openapi.json"]:
        assert required in paths, f"{required} missing from openapi.json"
    # A kind's routes are listed once, on a path of its names (/v1/spins/door-{key}): one
    # Spin of each kind is made for them first, and deleted at the end.
    made = []
    for template in paths:
        match = re.fullmatch(r"/v1/spins/([A-Za-z0-9._-]+)-\{key\}", template)
        if match:
            name = f"{match.group(1)}-openapi"
            answer = server.request("PUT", f"/v1/spins/{name}", data=json.dumps({"kind": match.group(1)}),
                                    headers={"Content-Type": "application/json"})
            assert answer.status_code in (200, 201), answer.text
            made.append(name)
    assert made, "no kind is documented"
    checked = 0
    for template, item in paths.items():
        path = template.replace("{name}", "auth" if template.startswith("/v1/gears/") else "levels")
        path = path.replace("{key}", "openapi")
        assert "{" not in path, f"unknown path parameter in {template}"
        for method in ("get", "post", "put", "delete", "patch"):
            if method not in item or (method == "delete" and "{key}" in template):
                continue
            kwargs = {"stream": True, "timeout": 5}
            if method == "post":
                value = unique_level()
                kwargs.update(data=json.dumps({"type": "set", "left": value, "right": value}),
                              headers={"Content-Type": "application/json"})
            response = server.request(method.upper(), path, **kwargs)
            try:
                assert response.status_code != 404 and response.status_code < 500, \
                    f"{method.upper()} {path} answered {response.status_code}"
            finally:
                response.close()
            checked += 1
    assert checked >= 10
    for name in made:
        assert server.request("DELETE", f"/v1/spins/{name}").status_code == 200
