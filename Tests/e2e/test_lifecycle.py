"""The process: it logs where it listens, picks a free port for --port 0, stops cleanly
on SIGTERM (streams closed with 1001, exit 0) and keeps its Spins' state across restarts."""
from __future__ import annotations

import asyncio
import signal
import time

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from spin_e2e import LOOPBACK, RawWebSocket, recv_json, run_async


def test_log_names_the_address(server):
    assert f"listening on http://{LOOPBACK}:{server.port}" in server.log(), server.log_tail()


def test_port_zero_picks_a_free_port_and_logs_it(start_server):
    picked = start_server(port=0, name="port0")
    assert picked.port != 0
    assert picked.get("/healthz").json() == {"status": "ok"}


def test_sigterm_closes_streams_with_1001_and_exits_0(start_server):
    server = start_server(name="shutdown")

    async def scenario():
        async with connect(server.ws_base + "/v1/spins/levels/stream", open_timeout=5, close_timeout=5,
                           proxy=None) as ws, \
                connect(server.ws_base + "/v1/gears/auth/stream", open_timeout=5, close_timeout=5, proxy=None) as gear:
            assert (await recv_json(ws))["type"] == "snapshot"
            server.send_signal(signal.SIGTERM)
            for stream in (ws, gear):
                try:
                    for _ in range(1000):
                        await asyncio.wait_for(stream.recv(), 10)
                except ConnectionClosed:
                    pass
                assert stream.close_code == 1001, (stream.close_code, stream.close_reason)

    run_async(scenario())
    assert server.terminate() == 0, server.log_tail()


def test_sigterm_with_a_raw_stream_sends_a_close_frame_1001(start_server):
    server = start_server(name="shutdown-raw")
    with RawWebSocket(server.port, "/v1/spins/counter/stream") as ws:
        assert ws.recv_json()["type"] == "snapshot"
        server.send_signal(signal.SIGTERM)
        ws.expect_close(1001, timeout=10)
    assert server.terminate() == 0


def test_sigint_also_stops_cleanly(start_server):
    server = start_server(name="sigint")
    server.send_signal(signal.SIGINT)
    assert server.terminate() == 0, server.log_tail()


def test_sighup_without_jwt_keeps_the_server_running(start_server):
    # A reload signal sent by habit (systemctl reload, kill -HUP) must not end the server:
    # without JWT there is nothing to re-read, and the log says so.
    server = start_server(name="sighup")
    server.process.send_signal(signal.SIGHUP)  # not send_signal: the fixture's SIGTERM must follow
    deadline = time.monotonic() + 5
    while "SIGHUP: nothing to reload" not in server.log():
        assert server.process.poll() is None, "SIGHUP ended the server:\n" + server.log_tail()
        assert time.monotonic() < deadline, server.log_tail()
        time.sleep(0.05)
    assert server.process.poll() is None
    assert server.get("/healthz").json() == {"status": "ok"}


def test_state_survives_a_restart(start_server, tmp_path):
    storage = tmp_path / "durable"
    first = start_server(storage=storage, name="first")
    first.settled_sequences()
    response = first.post_events("levels", [{"type": "set", "left": 77, "right": 77}] * 3, wait=True)
    assert response.status_code == 200
    response = first.post_events("counter", [{"type": "increase"}] * 5, wait=True)
    assert response.status_code == 200
    before = first.settled_sequences()
    states = {name: first.spin(name)["state"] for name in ("levels", "counter")}
    assert first.terminate() == 0

    second = start_server(storage=storage, name="second")
    after = second.settled_sequences()
    assert after["levels"] == before["levels"], (before, after)
    assert after["counter"] == before["counter"], (before, after)
    assert second.spin("levels")["state"] == states["levels"] == {"left": 77, "right": 77}
    assert second.spin("counter")["state"] == states["counter"]
    # And it goes on from there.
    response = second.post_events("levels", {"type": "set", "left": 78, "right": 78})
    assert response.json() == {"accepted": 1, "sequence": before["levels"] + 1}


def test_flag_overrides_environment(start_server):
    from spin_e2e import free_port
    other = free_port()
    server = start_server(env={"SPIN_PORT": str(other), "SPIN_HOST": LOOPBACK}, name="precedence")
    assert server.port != other
    assert server.get("/healthz").status_code == 200
    assert f"listening on http://{LOOPBACK}:{server.port}" in server.log()


def process_environment(pid: int) -> dict[str, str]:
    """The environment a process was executed with (/proc/PID/environ)."""
    with open(f"/proc/{pid}/environ", "rb") as file:
        entries = file.read().decode(errors="replace").split("\0")
    return dict(entry.split("=", 1) for entry in entries if "=" in entry)


def test_the_server_executes_itself_again_with_a_larger_malloc_cache(start_server):
    """glibc reads GLIBC_TUNABLES only at start: spin-server sets a 256-chunk tcache and
    executes itself again, keeping its process ID (the one the supervisor started), and
    its own marker is not reported as an unknown SPIN_ variable."""
    server = start_server(name="malloc-default")
    assert server.get("/healthz").status_code == 200
    environment = process_environment(server.pid)
    assert environment.get("GLIBC_TUNABLES") == "glibc.malloc.tcache_count=256"
    assert environment.get("SPIN_MALLOC_TUNED") == "1"
    assert "SPIN_MALLOC_TUNED" not in server.log()


def test_an_operators_malloc_cache_is_kept(start_server):
    """A GLIBC_TUNABLES that names the tcache size is the operator's: not re-executed."""
    server = start_server(env={"GLIBC_TUNABLES": "glibc.malloc.tcache_count=7"}, name="malloc-own")
    assert server.get("/healthz").status_code == 200
    environment = process_environment(server.pid)
    assert environment.get("GLIBC_TUNABLES") == "glibc.malloc.tcache_count=7"
    assert "SPIN_MALLOC_TUNED" not in environment


def test_environment_port_is_used_without_the_flag(server_bin, tmp_path):
    from spin_e2e import SpinServer, free_port
    port = free_port()
    instance = SpinServer(server_bin, tmp_path / "env-port", env={"SPIN_PORT": str(port)})
    instance.requested_port = instance.port = port
    config = ["--config", str(instance.config_path)] if instance.config_path else []
    instance.command = lambda: [str(server_bin), "--storage", str(instance.storage), *config]  # no --port/--host
    try:
        instance.start()
        assert instance.get("/healthz").json() == {"status": "ok"}
    finally:
        if instance.process is not None:
            assert instance.terminate() == 0


def test_unreadable_config_stops_start_up_naming_the_file(server_bin, tmp_path):
    import subprocess
    bad = tmp_path / "broken.json"
    bad.write_text('{\n  "listen": {"port": 8080,, }\n}')
    result = subprocess.run([str(server_bin), "--config", str(bad), "--check-config"], capture_output=True,
                            text=True, timeout=15, cwd=tmp_path)
    assert result.returncode == 64, result
    assert "broken.json" in result.stderr, result
    assert "line 2, column 27: expected a member name in double quotes" in result.stderr, result
