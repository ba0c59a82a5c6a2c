"""Examples/Greeter, the smallest program that hosts its own Spin: spin-server's options
(flags and SPIN_* variables), logging bootstrapped before hosting (so with JSON logs
every line is JSON, the kind's own included), its own config file, messages naming the
program, exit 0 on SIGTERM and 64 on a bad configuration."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess

import pytest
import requests

from conftest import GREETER, wait_for


def environment(**variables):
    env = {key: value for key, value in os.environ.items() if not key.startswith("SPIN_")}
    env.update(variables)
    return env


@pytest.mark.parametrize("how", ["--log-format json", "SPIN_LOG_FORMAT=json"])
def test_the_greeter_greets_and_logs_only_json_lines_its_kinds_included(greeter_bin, tmp_path, how):
    arguments = [str(greeter_bin), "--port", "0", "--storage", str(tmp_path / "data")]
    env = environment()
    if how.startswith("--"):
        arguments += how.split()
    else:
        env["SPIN_LOG_FORMAT"] = "json"
    log = tmp_path / "greeter.log"
    with open(log, "w") as output:
        process = subprocess.Popen(arguments, cwd=GREETER, env=env, stdout=output, stderr=subprocess.STDOUT)
    try:
        match = wait_for(lambda: re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read_text()))
        base = f"http://127.0.0.1:{match.group(1)}"
        response = requests.post(f"{base}/v1/spins/greetings/events", json={"type": "greet", "name": "Ada"}, timeout=10)
        assert response.status_code == 202, response.text
        state = requests.get(f"{base}/v1/spins/greetings", timeout=10).json()
        assert state["state"] == {"message": "Hello, Ada!", "count": 1}
        bad = requests.post(f"{base}/v1/spins/greetings/events", json={"type": "greet", "name": ""}, timeout=10)
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_event"
        wait_for(lambda: '"greeted"' in log.read_text())
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"not a JSON line: {line!r} (all: {lines})")
    labelled = {(record["label"], record["message"]) for record in records}
    # The kind's logger, made inside its closure, is labelled with the Spin's name.
    assert ("greetings", "hosting a greeter") in labelled, records
    assert any(record["label"] == "greetings" and record["message"] == "greeted"
               and record.get("greeting") == "Hello, Ada!" for record in records), records
    assert ("greeter", "stopped") in labelled, records
    assert any(record["label"] == "greeter" and record["message"].startswith("configuration greeter.json:")
               for record in records), records


def test_check_config_reads_the_programs_own_config_file_and_warnings_name_the_program(greeter_bin, tmp_path):
    result = subprocess.run([str(greeter_bin), "--check-config", "--storage", str(tmp_path / "data")],
                            cwd=GREETER, env=environment(SPIN_PROT="80"), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("greeter: configuration OK (greeter.json): 1 spin (greetings)"), result.stdout
    assert result.stderr.startswith("greeter: warning: SPIN_PROT is set but greeter does not read it"), result.stderr


def test_a_bad_configuration_is_one_line_naming_the_program_and_exits_64(greeter_bin, tmp_path):
    (tmp_path / "bad.json").write_text('{"spins": [{"name": "greetings", "kind": "gretter"}]}')
    result = subprocess.run([str(greeter_bin), "--config", str(tmp_path / "bad.json")],
                            cwd=GREETER, env=environment(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 64
    assert result.stdout == ""
    assert result.stderr == f'greeter: error: {tmp_path / "bad.json"}: spins[0].kind: unknown kind "gretter" (known: greeter)\n'
    usage = subprocess.run([str(greeter_bin), "--prot", "80"], cwd=GREETER, env=environment(),
                           capture_output=True, text=True, timeout=60)
    assert usage.returncode == 64 and "--prot" in usage.stderr
