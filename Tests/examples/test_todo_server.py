"""Examples/TodoServer, run as its README says: it hosts its own kinds by its own config
file, serves events and state, feeds stats over its Gear, and stops with exit 0 on
SIGTERM. (The Swift test HostingReadmeTests checks that the snippets of the DocC article
Hosting are the example packages' code.)"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import urllib.error
import urllib.request

from conftest import TODO_SERVER, wait_for


def request(port, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_todo_server_serves_its_kinds_and_stops_with_exit_0_on_sigterm(todo_server_bin, tmp_path):
    log = tmp_path / "todo-server.log"
    with open(log, "w") as output:
        process = subprocess.Popen([str(todo_server_bin), "--port", "0", "--storage", str(tmp_path / "data")],
                                   cwd=TODO_SERVER, stdout=output, stderr=subprocess.STDOUT)
    try:
        match = wait_for(lambda: re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read_text()))
        port = int(match.group(1))
        for title in ["milk", "tea", "bread"]:
            assert request(port, "POST", "/v1/spins/todos/events", {"type": "add", "title": title})[0] == 202
        status, body = request(port, "GET", "/v1/spins/todos")
        assert status == 200
        assert [item["title"] for item in body["state"]["items"]] == ["milk", "tea", "bread"]
        # Three done items: the feedback archives them, and the Gear tells stats.
        assert request(port, "POST", "/v1/spins/todos/events",
                       [{"type": "toggle", "id": 1}, {"type": "toggle", "id": 2}, {"type": "toggle", "id": 3}])[0] == 202
        todos = wait_for(lambda: (lambda s: s if s["archived"] == 3 else None)(request(port, "GET", "/v1/spins/todos")[1]["state"]))
        assert todos["items"] == []
        wait_for(lambda: request(port, "GET", "/v1/spins/stats")[1]["state"]["archived"] == 3)
        # Stats caught every count durably: nothing pending for it (the reading is a tenth
        # of a second behind at most).
        wait_for(lambda: request(port, "GET", "/v1/gears")[1] ==
                 {"gears": [{"name": "todos", "attached": ["todos", "stats"], "pending": {"stats": 0}}]})
        status, body = request(port, "POST", "/v1/spins/todos/events", {"type": "add"})
        assert status == 422
        assert body["error"]["message"].endswith('title: "add" needs field "title" (a string)')
        # The kind's schemas: its events from eventTypes' fields, its state from its type.
        status, schemas = request(port, "GET", "/v1/spins/todos/schema")
        assert status == 200
        add = schemas["event"]["oneOf"][0]
        assert add["required"] == ["type", "title"] and add["properties"]["title"] == {"type": "string", "minLength": 1}
        assert schemas["state"]["required"] == ["items", "nextID", "archived"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0, log.read_text()
        assert "stopped" in log.read_text()
    finally:
        if process.poll() is None:
            process.kill()

