"""`GET /v1/cluster` and the `cluster.*` settings on a server with the file backend: a
cluster of one node (this one) that owns every hosted Spin; `--node`, `SPIN_NODE`,
`--advertise`, `--lease-seconds` and their errors; the owned-Spins gauge."""
from __future__ import annotations

import json
import socket
import subprocess

from spin_e2e import LOOPBACK, REPO, assert_error, metric_value


def hosted(server) -> list[str]:
    return sorted(spin["name"] for spin in server.get("/v1/spins").json()["spins"])


def test_a_single_server_is_one_live_node_owning_every_spin(server):
    response = server.get("/v1/cluster")
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    body = response.json()
    # The default node name is the host name; the default URL is the listen address.
    assert body == {
        "nodes": [{"node": socket.gethostname(), "advertise": f"http://{LOOPBACK}:{server.port}", "live": True,
                   "spins": hosted(server)}],
        "self": socket.gethostname(),
    }


def test_curl_reads_the_cluster(server):
    result = subprocess.run(["curl", "-sS", "--fail", "--noproxy", "*", "--max-time", "10",
                             f"{server.base_url}/v1/cluster"], capture_output=True, text=True, timeout=15)
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert [node["node"] for node in body["nodes"]] == [body["self"]]


def test_node_and_advertise_come_from_flags_and_environment(start_server):
    by_flag = start_server(name="flagged", args=["--node", "node-a", "--advertise", "http://a.internal:9000/"])
    body = by_flag.get("/v1/cluster").json()
    assert body["self"] == "node-a"
    assert body["nodes"][0]["node"] == "node-a"
    assert body["nodes"][0]["advertise"] == "http://a.internal:9000"
    by_env = start_server(name="env", env={"SPIN_NODE": "node-b", "SPIN_CLUSTER_LEASE_SECONDS": "5"})
    assert by_env.get("/v1/cluster").json()["self"] == "node-b"


def test_metrics_count_the_spins_this_node_owns(server):
    assert metric_value(server.metrics(), "spin_cluster_owned_spins") == len(hosted(server))


def test_cluster_needs_the_read_scope_when_tokens_are_set(start_server):
    secured = start_server(name="tokens", env={"SPIN_TOKENS": "reader:read"})
    assert_error(secured.get("/v1/cluster"), 401, "unauthorized")
    assert secured.get("/v1/cluster", headers={"Authorization": "Bearer reader"}).status_code == 200


def test_bad_cluster_settings_stop_start_up_naming_the_source(server_bin, tmp_path):
    cases = [
        (["--lease-seconds", "0"], {}, "--lease-seconds: cluster.leaseSeconds: must be 1 to 600"),
        (["--advertise", "a.internal:9000"], {}, "--advertise: cluster.advertise:"),
        ([], {"SPIN_NODE": "two words"}, "SPIN_NODE: cluster.node:"),
    ]
    for args, env, message in cases:
        result = subprocess.run([str(server_bin), "--config", str(REPO / "Config" / "spin-server.json"),
                                 "--storage", str(tmp_path / "data"), "--check-config", *args],
                                capture_output=True, text=True, timeout=15, cwd=tmp_path,
                                env={"PATH": "/usr/bin:/bin", **env})
        assert result.returncode == 64, (args, env, result)
        assert message in result.stderr, (args, env, result.stderr)
