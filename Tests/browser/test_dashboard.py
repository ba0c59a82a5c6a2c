"""Browser test of the dashboard served at `GET /` (docs/PROTOCOL.md).

Starts the real `spin-server` binary (`.build/debug/spin-server`; `SPIN_SERVER_BIN`
overrides) on a free loopback port with a temporary `--storage`, drives the page in
headless Chromium through Selenium and checks what a user would see: live states over the
stream protocol, events sent through the form (answers and errors), the transitions log,
the Gear traffic of the auth-routing example, per-Spin history, the timeline of a Spin's
kept history (`GET /v1/spins/{name}/history`), reconnection after a
server restart, and bearer tokens (header for fetch, `access_token` for WebSockets).

Needs: Debian `chromium` and `chromium-driver`, pip `-r Tests/browser/requirements.txt`.
`SPIN_DASHBOARD_URL` points the page tests at an already running server instead (the
restart and token tests are then skipped). A screenshot lands in
Tests/browser/output/dashboard.png. Every wait is bounded (WAIT seconds).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

selenium = pytest.importorskip("selenium")
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = Path(__file__).resolve().parent / "output"
WAIT = 30  # seconds any single expectation may take


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_binary():
    path = Path(os.environ.get("SPIN_SERVER_BIN", ROOT / ".build" / "debug" / "spin-server"))
    if not path.is_file():
        pytest.fail(f"server binary {path} not found: run `swift build --product spin-server` or set SPIN_SERVER_BIN")
    return path


class Server:
    """One spin-server process on loopback; stop() sends SIGTERM, then SIGKILL after 10 s."""

    def __init__(self, port, storage, env_extra=None):
        self.port, self.storage = port, storage
        env = dict(os.environ)
        for key in [k for k in env if k.startswith("SPIN_") and k not in ("SPIN_SERVER_BIN",)]:
            del env[key]
        env.update(env_extra or {})
        self.log = open(Path(storage).parent / f"server-{port}-{time.time_ns()}.log", "wb")
        self.process = subprocess.Popen(
            [str(server_binary()), "--host", "127.0.0.1", "--port", str(port), "--storage", str(storage)],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"spin-server exited with {self.process.returncode}: {self.log_text()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"spin-server not ready on port {port} within {WAIT} s: {self.log_text()}")

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def log_text(self):
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-2000:]

    def stop(self):
        """SIGTERM, then SIGKILL after 10 s; safe to call twice."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.log.close()


def make_driver():
    chromium = os.environ.get("CHROMIUM_BIN") or shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = os.environ.get("CHROMEDRIVER_BIN") or shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.fail("chromium and chromedriver are needed: apt-get install -y chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1050", "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(WAIT)
    return driver


@pytest.fixture(scope="module")
def workdir():
    path = Path(tempfile.mkdtemp(prefix="spin-dashboard-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def server(workdir):
    if os.environ.get("SPIN_DASHBOARD_URL"):
        yield None
        return
    s = Server(free_port(), workdir / "storage")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def base_url(server):
    return os.environ.get("SPIN_DASHBOARD_URL", "").rstrip("/") or server.url


@pytest.fixture(scope="module")
def driver():
    d = make_driver()
    yield d
    d.quit()


# ---- page helpers ---------------------------------------------------------------------

def wait_for(driver, predicate, what, timeout=WAIT, on_timeout=None):
    """Waits until predicate(driver) is truthy; the failure names what was expected (and
    what `on_timeout` says)."""
    last = {}

    def probe(d):
        try:
            value = predicate(d)
        except Exception as error:  # the page may be re-rendering
            last["error"] = repr(error)
            return False
        return value

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1).until(probe)
    except Exception:
        seen = on_timeout(driver) if on_timeout else ""
        raise AssertionError(f"timed out after {timeout} s waiting for {what} {last.get('error', '')} {seen}")


def spin_card(driver, name):
    return driver.find_element(By.CSS_SELECTOR, f'.spin[data-spin="{name}"]')


def spin_view(driver, name):
    """(sequence, state) as the card shows them, or (None, None) before the snapshot."""
    card = spin_card(driver, name)
    seq = card.get_attribute("data-sequence")
    text = card.find_element(By.CSS_SELECTOR, ".state-json").get_attribute("textContent")
    if not seq or not text:
        return None, None
    return int(seq), json.loads(text)


def select_spin(driver, name):
    Select(driver.find_element(By.ID, "spin-select")).select_by_value(name)
    wait_for(driver, lambda d: "selected" in spin_card(d, name).get_attribute("class"), f"{name} selected")


def send(driver, text):
    """Types text into the editor, presses Send, returns the result box after it changed."""
    result = driver.find_element(By.ID, "result")
    before = result.get_attribute("textContent")
    driver.execute_script("document.getElementById('result').textContent = ''; document.getElementById('result').className = '';")
    editor = driver.find_element(By.ID, "event-input")
    editor.clear()
    editor.send_keys(text)
    driver.find_element(By.ID, "send").click()
    wait_for(driver, lambda d: d.find_element(By.ID, "result").get_attribute("textContent"), f"an answer to {text} (was {before!r})")
    return driver.find_element(By.ID, "result")


def transitions(driver, spin):
    rows = driver.find_elements(By.CSS_SELECTOR, f'#transitions tbody tr[data-spin="{spin}"]')
    out = []
    for row in rows:
        cells = [c.get_attribute("textContent") for c in row.find_elements(By.TAG_NAME, "td")]
        out.append({"sequence": int(cells[2]), "event": cells[3], "state": cells[4].lstrip("→ ").strip()})
    return out


def open_page(driver, url):
    driver.get(url + "/")
    wait_for(driver, lambda d: spin_view(d, "counter")[0] is not None, "the counter's snapshot on the page")


# ---- tests ----------------------------------------------------------------------------

def test_served_as_html_utf8(base_url):
    with urllib.request.urlopen(base_url + "/", timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].replace(" ", "").lower() == "text/html;charset=utf-8"
        body = r.read().decode("utf-8")
    assert body.lstrip().lower().startswith("<!doctype html>")
    # Self-contained: nothing fetched from another origin.
    for marker in ("http://", "https://", "//cdn", "@import", "<link"):
        assert marker not in body.replace("http://www.w3.org", ""), marker
    # Server data is rendered as text only.
    assert "innerHTML" not in body and "insertAdjacentHTML" not in body and "document.write" not in body


def test_lists_every_spin_and_shows_live_state(driver, base_url):
    open_page(driver, base_url)
    with urllib.request.urlopen(base_url + "/v1/spins", timeout=10) as r:
        names = [s["name"] for s in json.load(r)["spins"]]
    assert {"counter", "levels", "feature", "router"} <= set(names)
    wait_for(driver, lambda d: all(spin_view(d, n)[0] is not None for n in names), "a snapshot for every Spin")
    shown = [c.get_attribute("data-spin") for c in driver.find_elements(By.CSS_SELECTOR, "#spins .spin")]
    assert shown == names
    # The counter counts to 10 by itself; the page follows without reloading.
    wait_for(driver, lambda d: spin_view(d, "counter")[1] == {"value": 10}, "counter at 10")
    wait_for(driver, lambda d: d.find_element(By.ID, "conn-text").text.startswith(f"{len(names) + 1}/"), "streams counted")
    wait_for(driver, lambda d: "live" in spin_card(d, "counter").find_element(By.CSS_SELECTOR, ".status").text, "counter stream live")


def test_cluster_panel_shows_this_node_serving_every_spin(driver, base_url):
    open_page(driver, base_url)
    with urllib.request.urlopen(base_url + "/v1/cluster", timeout=10) as r:
        cluster = json.load(r)
    node = cluster["self"]
    selector = f'#cluster .node[data-node="{node}"]'
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, selector), "this node in the cluster panel")
    card = driver.find_element(By.CSS_SELECTOR, selector)
    assert card.get_attribute("data-live") == "true"
    assert "(this node)" in card.text
    for spin in cluster["nodes"][0]["spins"]:
        assert spin in card.text
    assert driver.find_element(By.ID, "node-count").text == "(1)"


def test_reset_through_the_form_changes_the_page(driver, base_url):
    open_page(driver, base_url)
    wait_for(driver, lambda d: spin_view(d, "counter")[1] == {"value": 10}, "counter at 10")
    sequence_before, _ = spin_view(driver, "counter")
    select_spin(driver, "counter")
    result = send(driver, '{"type":"reset"}')
    assert result.get_attribute("class") == "ok", result.text
    assert result.text.startswith("202"), result.text
    answered = json.loads(result.text.split("← ", 1)[1])
    assert answered["accepted"] == 1 and answered["sequence"] > sequence_before
    # The reset shows up in the log as value 0, then the counter counts back to 10.
    wait_for(driver, lambda d: any('"reset"' in t["event"] and json.loads(t["state"]) == {"value": 0}
                                   and t["sequence"] > sequence_before for t in transitions(d, "counter")),
             "the reset transition in the log")
    wait_for(driver, lambda d: spin_view(d, "counter")[0] >= sequence_before + 11 and spin_view(d, "counter")[1] == {"value": 10},
             "the counter back at 10 with 11 more events")
    values = [json.loads(t["state"])["value"] for t in transitions(driver, "counter")]
    assert all(0 <= v <= 10 for v in values)
    # The event is remembered for this Spin (localStorage) and offered for re-sending.
    history = [b.text for b in driver.find_elements(By.CSS_SELECTOR, "#history button")]
    assert history[0] == '{"type":"reset"}'


def test_the_timeline_shows_any_kept_sequence_its_event_and_what_changed(driver, base_url):
    open_page(driver, base_url)
    select_spin(driver, "counter")
    wait_for(driver, lambda d: spin_view(d, "counter")[1] == {"value": 10}, "counter at 10")
    result = send(driver, '{"type":"reset"}')
    assert result.text.startswith("202"), result.text
    reset_at = json.loads(result.text.split("← ", 1)[1])["sequence"]
    history = json.loads(urllib.request.urlopen(f"{base_url}/v1/spins/counter/history?from={reset_at - 1}&limit=3",
                                                timeout=10).read())["entries"]
    wait_for(driver, lambda d: int(d.find_element(By.ID, "timeline").get_attribute("max")) >= reset_at,
             "the timeline reaching the reset")

    def scrub(to):
        driver.execute_script("const s = document.getElementById('timeline'); s.value = arguments[0];"
                              "s.dispatchEvent(new Event('input'));", str(to))
        wait_for(driver, lambda d: d.find_element(By.ID, "timeline-seq").text == f"seq {to}"
                 and d.find_element(By.ID, "timeline-state").text not in ("", "–"), f"the timeline at {to}")
    scrub(reset_at)
    wait_for(driver, lambda d: json.loads(d.find_element(By.ID, "timeline-state").text) == {"value": 0}, "the reset's state")
    entry = driver.find_element(By.ID, "timeline-entry").text
    assert '{"type":"reset"}' in entry and "time not recorded" not in entry, entry
    change = driver.find_element(By.ID, "timeline-change").text
    assert change == f"/value: {history[0]['state']['value']} → 0", change
    # The counter's own step after it: no sender, one more.
    scrub(reset_at + 1)
    wait_for(driver, lambda d: json.loads(d.find_element(By.ID, "timeline-state").text) == history[2]["state"], "the next state")
    assert "from the Spin itself" in driver.find_element(By.ID, "timeline-entry").text
    assert driver.find_element(By.ID, "timeline-change").text == "/value: 0 → 1"


def test_the_timeline_restores_the_spin_and_forks_a_new_one(driver, base_url):
    # door-1 exists with a history before the page opens (doors are made on their first event).
    def post(path, body):
        request = urllib.request.Request(base_url + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        return json.loads(urllib.request.urlopen(request, timeout=10).read())
    post("/v1/spins/door-1/events", [{"type": "LOCK"}, {"type": "UNLOCK", "code": "1234"}])
    open_page(driver, base_url)
    select_spin(driver, "session")
    start, _ = spin_view(driver, "session")
    for event in ('{"type":"login"}', '{"type":"loginOK"}'):
        assert send(driver, event).text.startswith("202")
    wait_for(driver, lambda d: spin_view(d, "session")[1]["value"] == "loggedIn", "logged in")

    def scrub(to):
        wait_for(driver, lambda d: int(d.find_element(By.ID, "timeline").get_attribute("max")) >= to, f"the timeline reaching {to}")
        driver.execute_script("const s = document.getElementById('timeline'); s.value = arguments[0];"
                              "s.dispatchEvent(new Event('input'));", str(to))
        wait_for(driver, lambda d: d.find_element(By.ID, "timeline-seq").text == f"seq {to}", f"the timeline at {to}")
    scrub(start)
    driver.find_element(By.ID, "timeline-restore").click()
    wait_for(driver, lambda d: d.find_element(By.ID, "timeline-action").text.startswith(f"restored to sequence {start}: now sequence {start + 3}"),
             "the restore's answer")
    # The Spin's card and current state follow (its stream's new snapshot), and the timeline shows the restore.
    wait_for(driver, lambda d: spin_view(d, "session") == (start + 3, {"value": "loggedOut", "context": {}}), "the session restored")
    wait_for(driver, lambda d: d.find_element(By.ID, "timeline-seq").text == f"seq {start + 3}"
             and '{"type":"spin.restored","at":' + str(start) + '}' in d.find_element(By.ID, "timeline-entry").text,
             "the restore on the timeline")
    # No token, no subject: the server's own event, not the Spin's.
    assert "recorded by the server" in driver.find_element(By.ID, "timeline-entry").text
    assert json.loads(driver.find_element(By.ID, "selected-state").text)["value"] == "loggedOut"
    # A configured machine's kind is not made at run time: the error is shown, nothing made.
    driver.find_element(By.ID, "timeline-fork-name").send_keys("session-2")
    driver.find_element(By.ID, "timeline-fork").click()
    wait_for(driver, lambda d: "409 state_not_restorable" in d.find_element(By.ID, "timeline-action").text, "the fork refused")
    # A door is: forked at its first event, locked.
    select_spin(driver, "door-1")
    scrub(1)
    name = driver.find_element(By.ID, "timeline-fork-name")
    name.clear()
    name.send_keys("door-41")
    driver.find_element(By.ID, "timeline-fork").click()
    wait_for(driver, lambda d: d.find_element(By.ID, "timeline-action").text == "made door-41 (door) in the state of sequence 1",
             "the fork's answer")
    forked = json.loads(urllib.request.urlopen(base_url + "/v1/spins/door-41", timeout=10).read())
    assert forked["sequence"] == 1 and forked["state"]["value"] == "locked", forked


def test_levels_set_converges_on_the_page(driver, base_url):
    open_page(driver, base_url)
    select_spin(driver, "levels")
    assert driver.find_element(By.ID, "spin-select").get_attribute("value") == "levels"
    sequence_before, _ = spin_view(driver, "levels")
    result = send(driver, '{"type":"set","left":2,"right":40}')
    assert result.get_attribute("class") == "ok", result.text
    wait_for(driver, lambda d: any(json.loads(t["state"]) == {"left": 2, "right": 40} for t in transitions(d, "levels")),
             "the set transition")
    wait_for(driver, lambda d: spin_view(d, "levels")[1]["left"] == spin_view(d, "levels")[1]["right"]
             and spin_view(d, "levels")[0] > sequence_before + 1, "levels converged again")
    # The selected Spin's pretty state follows too.
    shown = json.loads(driver.find_element(By.ID, "selected-state").text)
    assert shown == spin_view(driver, "levels")[1]


def example_buttons(driver):
    return [b.get_attribute("textContent") for b in driver.find_elements(By.CSS_SELECTOR, "#examples button")]


def test_example_events_come_from_each_spins_schema(driver, base_url):
    open_page(driver, base_url)
    select_spin(driver, "levels")
    wait_for(driver, lambda d: len(example_buttons(d)) == 5, "the five levels examples")
    examples = [json.loads(text) for text in example_buttons(driver)]
    assert examples[0] == {"type": "increaseLeft"}
    assert examples[-1] == {"type": "set", "left": 0, "right": 0}
    # A machine's examples are the types of its on tables.
    select_spin(driver, "session")
    wait_for(driver, lambda d: "loginOK" in "".join(example_buttons(d)), "the session examples")
    assert {json.loads(text)["type"] for text in example_buttons(driver)} == \
        {"forceLogout", "login", "loginOK", "logout", "logoutOK"}
    # A click puts the example in the editor, and it is accepted as it is.
    driver.find_element(By.CSS_SELECTOR, "#examples button").click()
    assert json.loads(driver.find_element(By.ID, "event-input").get_attribute("value")) == {"type": "forceLogout"}
    driver.find_element(By.ID, "send").click()
    wait_for(driver, lambda d: d.find_element(By.ID, "result").get_attribute("class") == "ok", "the example accepted")


def test_errors_show_code_and_message(driver, base_url):
    open_page(driver, base_url)
    select_spin(driver, "levels")
    result = send(driver, '{"type":"set","left":1}')
    assert result.get_attribute("class") == "err"
    assert result.text.startswith("422 invalid_event:"), result.text
    assert "right" in result.text
    result = send(driver, '{"type":')
    assert result.get_attribute("class") == "err"
    assert "not JSON" in result.text


def test_gear_traffic_of_the_auth_routing_example(driver, base_url):
    open_page(driver, base_url)
    wait_for(driver, lambda d: "live" in d.find_element(By.CSS_SELECTOR, '.gear[data-gear="auth"] .status').text, "Gear auth stream live")
    wait_for(driver, lambda d: spin_view(d, "router")[1]["route"] == "home", "router at home")
    checks_before = spin_view(driver, "router")[1]["authorizationChecks"]
    select_spin(driver, "router")
    assert send(driver, '{"type":"logout"}').get_attribute("class") == "ok"
    wait_for(driver, lambda d: spin_view(d, "router")[1]["route"] == "login", "router at login")
    select_spin(driver, "feature")
    assert send(driver, '{"type":"load"}').get_attribute("class") == "ok"

    def gear_rows(d):
        return [(r.get_attribute("data-gear"), r.get_attribute("data-from"), r.find_elements(By.TAG_NAME, "td")[3].text)
                for r in d.find_elements(By.CSS_SELECTOR, "#gear-log tbody tr")]

    wait_for(driver, lambda d: any(g == "auth" and f == "feature" and "authorizationIssueHappened" in e for g, f, e in gear_rows(d)),
             "authorizationIssueHappened from feature on Gear auth")
    wait_for(driver, lambda d: spin_view(d, "feature")[1]["status"] == "unauthorized", "feature unauthorized")
    wait_for(driver, lambda d: spin_view(d, "router")[1]["authorizationChecks"] == checks_before + 1
             and spin_view(d, "router")[1]["route"] == "login", "router re-checked and at login")
    assert any('"checkAuthorization"' in t["event"] for t in transitions(driver, "router"))
    OUTPUT.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(OUTPUT / "dashboard.png"))


def post_event(base_url, spin, event):
    request = urllib.request.Request(f"{base_url}/v1/spins/{spin}/events", data=json.dumps(event).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as r:
        return r.status


def lit_states(driver, spin):
    return [g.get_attribute("data-path") for g in
            driver.find_elements(By.CSS_SELECTOR, f'.spin[data-spin="{spin}"] .chart g.state.current')]


def test_a_machine_is_drawn_as_a_state_chart_with_its_current_state_lit(driver, base_url):
    open_page(driver, base_url)
    with urllib.request.urlopen(base_url + "/v1/spins/session", timeout=10) as r:
        if json.load(r)["state"]["value"] != "loggedOut":
            post_event(base_url, "session", {"type": "forceLogout"})
    chart = '.spin[data-spin="session"] .chart'
    wait_for(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, chart + " g.state")) == 4, "four states in session's chart")
    states = driver.find_elements(By.CSS_SELECTOR, chart + " g.state")
    assert [g.get_attribute("data-state") for g in states] == ["loggedOut", "loggingIn", "loggedIn", "loggingOut"]
    assert all(g.find_element(By.TAG_NAME, "title").get_attribute("textContent") for g in states)
    labels = [t.get_attribute("textContent") for t in driver.find_elements(By.CSS_SELECTOR, chart + " .chart-label")]
    assert "login" in labels and "after 500 ms" in labels
    assert len(driver.find_elements(By.CSS_SELECTOR, chart + " .chart-initial")) == 1
    # The counter is a Swift Spin: no chart.
    assert not driver.find_elements(By.CSS_SELECTOR, '.spin[data-spin="counter"] .chart svg')
    wait_for(driver, lambda d: lit_states(d, "session") == ["loggedOut"], "loggedOut lit")
    # Every change of the lit state is recorded in the page, so that the short-lived
    # loggingIn cannot slip between two polls.
    driver.execute_script("""
        const chart = document.querySelector(arguments[0]);
        window.litHistory = [];
        new MutationObserver(() => {
          const lit = [...chart.querySelectorAll("g.state.current")].map(g => g.getAttribute("data-path")).join(",");
          const h = window.litHistory;
          if (!h.length || h[h.length - 1].lit !== lit) h.push({lit: lit, at: performance.now()});
        }).observe(chart, {subtree: true, attributes: true, attributeFilter: ["class"]});
    """, chart)
    assert post_event(base_url, "session", {"type": "login"}) == 202
    wait_for(driver, lambda d: lit_states(d, "session") == ["loggedIn"], "loggedIn lit after the 500 ms timer")
    history = driver.execute_script("return window.litHistory")
    lit = [h["lit"] for h in history if h["lit"]]
    assert lit[-2:] == ["loggingIn", "loggedIn"], history
    # The timer, not the login itself, moved it on: loggedIn came a while after loggingIn.
    at = {h["lit"]: h["at"] for h in history}
    assert at["loggedIn"] - at["loggingIn"] >= 250, history
    OUTPUT.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(OUTPUT / "chart.png"))


def test_reconnects_after_a_server_restart(driver, server, workdir):
    if server is None:
        pytest.skip("SPIN_DASHBOARD_URL set: the server is not ours to restart")
    port, storage = free_port(), workdir / "restart-storage"
    first = Server(port, storage)
    try:
        open_page(driver, first.url)
        wait_for(driver, lambda d: spin_view(d, "counter")[1] == {"value": 10}, "counter at 10")
        sequence, _ = spin_view(driver, "counter")
        first.stop()
        wait_for(driver, lambda d: "retry in" in spin_card(d, "counter").find_element(By.CSS_SELECTOR, ".status").text,
                 "the counter shown as disconnected with a retry delay")
        second = Server(port, storage)
        try:
            wait_for(driver, lambda d: spin_card(d, "counter").find_element(By.CSS_SELECTOR, ".status").text == "live",
                     "the counter live again after the restart")
            assert spin_view(driver, "counter") == (sequence, {"value": 10})  # durable state, same sequence
            select_spin(driver, "counter")
            assert send(driver, '{"type":"decrease"}').get_attribute("class") == "ok"
            wait_for(driver, lambda d: spin_view(d, "counter")[0] > sequence, "new transitions after the restart")
        finally:
            second.stop()
    finally:
        first.stop()  # idempotent


def test_token_goes_to_fetch_and_websockets(driver, server, workdir):
    if server is None:
        pytest.skip("SPIN_DASHBOARD_URL set: cannot start a server with tokens")
    secured = Server(free_port(), workdir / "token-storage", {"SPIN_TOKENS": "s3cret-tok:write"})
    try:
        driver.get(secured.url + "/")
        driver.execute_script("sessionStorage.clear()")
        driver.get(secured.url + "/")
        wait_for(driver, lambda d: "401" in d.find_element(By.ID, "banner").text, "the 401 shown without a token")
        assert not driver.find_elements(By.CSS_SELECTOR, ".spin")
        field = driver.find_element(By.ID, "token")
        field.send_keys("s3cret-tok")
        driver.find_element(By.ID, "token-apply").click()
        # Fetch (Authorization header) lists the Spins; WebSockets (access_token) stream them.
        wait_for(driver, lambda d: spin_view(d, "counter")[0] is not None, "the counter's snapshot with the token")
        wait_for(driver, lambda d: "live" in d.find_element(By.CSS_SELECTOR, '.gear[data-gear="auth"] .status').text, "Gear stream live with the token")
        assert driver.execute_script("return sessionStorage.getItem('spin.token')") == "s3cret-tok"
        assert driver.execute_script("return localStorage.getItem('spin.token')") is None
        assert not driver.find_element(By.ID, "banner").is_displayed()
    finally:
        driver.execute_script("sessionStorage.clear()")
        secured.stop()


def test_a_suspended_spin_is_marked_and_resumed_from_the_page(driver, server, workdir):
    """The runaway guard on the page: `levels` set far apart is suspended (badge, Resume
    button, 409 for events); Resume runs it again and a settling `set` gets in."""
    if server is None:
        pytest.skip("SPIN_DASHBOARD_URL set: cannot start a server with a small budget")
    config = json.loads((ROOT / "Config" / "spin-server.json").read_text())
    config.pop("kinds", None)  # written elsewhere: its machine paths would not resolve
    config["limits"]["feedbackBudget"] = 2000
    # Machine files are read relative to the config file, which is written elsewhere.
    for entry in config["spins"]:
        if "machine" in entry:
            entry["machine"] = str(ROOT / "Config" / entry["machine"])
    config_path = workdir / "runaway.json"
    config_path.write_text(json.dumps(config))
    runaway = Server(free_port(), workdir / "runaway-storage", {"SPIN_CONFIG": str(config_path)})
    try:
        open_page(driver, runaway.url)
        select_spin(driver, "levels")
        assert send(driver, '{"type":"set","left":-1000000000,"right":1000000000}').get_attribute("class") == "ok"
        wait_for(driver, lambda d: spin_card(d, "levels").get_attribute("data-status") == "suspended", "levels marked suspended")
        card = spin_card(driver, "levels")
        assert card.find_element(By.CSS_SELECTOR, ".suspended").is_displayed()
        assert send(driver, '{"type":"increaseLeft"}').text.startswith("409 spin_suspended")
        # Resume carries the editor's event, applied before the feedbacks run again.
        editor = driver.find_element(By.ID, "event-input")
        editor.clear()
        editor.send_keys('{"type":"set","left":4,"right":4}')
        card.find_element(By.CSS_SELECTOR, "button.resume").click()
        wait_for(driver, lambda d: "resumed with" in d.find_element(By.ID, "result").text, "the resume answered")
        wait_for(driver, lambda d: spin_view(d, "levels")[1] == {"left": 4, "right": 4}
                 and spin_card(d, "levels").get_attribute("data-status") == "running",
                 "levels settled and running", on_timeout=lambda d: (spin_card(d, "levels").text, runaway.log_text()))
        assert not spin_card(driver, "levels").find_element(By.CSS_SELECTOR, ".suspended").is_displayed()
    finally:
        runaway.stop()


def machine_server(workdir: Path, file: str, spin: str, machine: dict, port: int | None = None) -> Server:
    """A server of its own hosting `machine` (written to `<file>.json`) as the Spin `spin`
    (on `port`, else a free one; its storage is the file's, kept between servers)."""
    (workdir / (file + ".json")).write_text(json.dumps(machine))
    config = json.loads((ROOT / "Config" / "spin-server.json").read_text())
    config.pop("kinds", None)  # written elsewhere: its machine paths would not resolve
    config["spins"] = [{"name": spin, "machine": str(workdir / (file + ".json"))}]
    config["gears"] = []
    config_path = workdir / (file + "-config.json")
    config_path.write_text(json.dumps(config))
    return Server(port or free_port(), workdir / (file + "-storage"), {"SPIN_CONFIG": str(config_path)})


def test_a_machine_that_completes_is_marked_done(driver, server, workdir):
    """A machine in a top-level final state is done (XState v5, final.test.ts): its card
    says so as soon as its stream brings the state, and the API agrees. Its chart marks
    its history state."""
    if server is None:
        pytest.skip("SPIN_DASHBOARD_URL set: cannot start a server with another machine")
    machine = {"initial": "working", "context": {"go": False}, "states": {
        "working": {"id": "w", "initial": "one", "on": {"END": "finished", "PAUSE": "paused"},
                    "states": {"one": {"always": {"target": "two", "guard": {"eq": ["context.go", True]}}}, "two": {},
                               "hist": {"type": "history", "history": "deep"}}},
        "paused": {"on": {"RESUME": "#w.hist"}},
        "finished": {"type": "final"}}}
    finishing = machine_server(workdir, "finishing", "job", machine)
    try:
        driver.get(finishing.url + "/")
        wait_for(driver, lambda d: spin_card(d, "job").get_attribute("data-status") == "running", "job running")
        assert not spin_card(driver, "job").find_element(By.CSS_SELECTOR, ".done-badge").is_displayed()
        # A history state is drawn marked as one (H*: deep), with a dashed box.
        wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, '.spin[data-spin="job"] .chart g.state.history'),
                 "the history state in the chart")
        history = driver.find_element(By.CSS_SELECTOR, '.spin[data-spin="job"] .chart g.state.history')
        assert history.get_attribute("aria-label") == "state working.hist (deep history)"
        assert history.find_element(By.CSS_SELECTOR, "text").get_attribute("textContent") == "H* hist"
        # Edges of #id targets and of always transitions are drawn too.
        edges = {(g.get_attribute("data-from"), g.get_attribute("data-to")) for g in
                 driver.find_elements(By.CSS_SELECTOR, '.spin[data-spin="job"] .chart g.transition')}
        assert ("paused", "working.hist") in edges and ("working.one", "working.two") in edges, edges
        assert post_event(finishing.url, "job", {"type": "END"}) == 202
        wait_for(driver, lambda d: spin_card(d, "job").get_attribute("data-status") == "done", "job marked done",
                 on_timeout=lambda d: (spin_card(d, "job").text, finishing.log_text()))
        assert spin_card(driver, "job").find_element(By.CSS_SELECTOR, ".done-badge").is_displayed()
        with urllib.request.urlopen(finishing.url + "/v1/spins/job", timeout=10) as r:
            assert json.load(r)["status"] == "done"
    finally:
        finishing.stop()


def test_many_spins_are_shown_a_page_at_a_time_and_found_by_name(driver, server, workdir):
    """With more Spins than a page (100), the dashboard shows the first page, loads the
    next one on "More Spins", and a name prefix typed in the filter shows just those Spins
    (their cards live), asking the server for that prefix rather than for every Spin."""
    if server is None:
        pytest.skip("SPIN_DASHBOARD_URL set: cannot start a server with other Spins")
    machine = {"initial": "idle", "states": {"idle": {"on": {"GO": "busy"}}, "busy": {"on": {"STOP": "idle"}}}}
    (workdir / "lamp.json").write_text(json.dumps(machine))
    config = json.loads((ROOT / "Config" / "spin-server.json").read_text())
    config.pop("kinds", None)  # written elsewhere: its machine paths would not resolve
    config["spins"] = [{"name": f"lamp-{i:03d}", "machine": str(workdir / "lamp.json")} for i in range(130)]
    config["gears"] = []
    config_path = workdir / "lamps-config.json"
    config_path.write_text(json.dumps(config))
    lamps = Server(free_port(), workdir / "lamps-storage", {"SPIN_CONFIG": str(config_path)})
    try:
        driver.get(lamps.url + "/")
        cards = lambda d: [c.get_attribute("data-spin") for c in d.find_elements(By.CSS_SELECTOR, "#spins .spin")]
        wait_for(driver, lambda d: len(cards(d)) == 100, "the first page of 100 Spins",
                 on_timeout=lambda d: len(cards(d)))
        assert cards(driver) == [f"lamp-{i:03d}" for i in range(100)]
        more = driver.find_element(By.ID, "spins-more")
        assert more.is_displayed()
        assert driver.find_element(By.ID, "spin-count").text == "(100+)"
        more.click()
        wait_for(driver, lambda d: len(cards(d)) == 130, "the second page", on_timeout=lambda d: len(cards(d)))
        wait_for(driver, lambda d: not d.find_element(By.ID, "spins-more").is_displayed(), "no more pages")
        assert driver.find_element(By.ID, "spin-count").text == "(130)"
        driver.find_element(By.ID, "spin-filter").send_keys("lamp-12")
        wait_for(driver, lambda d: cards(d) == [f"lamp-{i}" for i in range(120, 130)], "the Spins named lamp-12…",
                 on_timeout=cards)
        assert post_event(lamps.url, "lamp-125", {"type": "GO"}) == 202
        wait_for(driver, lambda d: spin_view(d, "lamp-125") == (1, {"value": "busy", "context": {}}),
                 "lamp-125's live state", on_timeout=lambda d: spin_view(d, "lamp-125"))
        filter_box = driver.find_element(By.ID, "spin-filter")
        filter_box.clear()
        filter_box.send_keys("nothing")
        wait_for(driver, lambda d: cards(d) == [] and "No Spin's name starts with" in d.find_element(By.ID, "spins").text,
                 "no Spin matches", on_timeout=lambda d: d.find_element(By.ID, "spins").text)
    finally:
        lamps.stop()


def sorted_lit_states(spin):
    """What `spin`'s chart lights, in path order, as a probe for wait_for."""
    return lambda d: sorted(lit_states(d, spin))


def chart_regions(driver, base_url, spin):
    """Opens the page and waits for `spin`'s chart to draw its regions: the chart's
    selector and the regions' labels, in the order drawn."""
    chart = f'.spin[data-spin="{spin}"] .chart'
    driver.get(base_url + "/")
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, chart + " g.state.region"), "the regions in the chart")
    return chart, [g.get_attribute("aria-label") for g in driver.find_elements(By.CSS_SELECTOR, chart + " g.state.region")]


def test_a_parallel_machine_is_drawn_with_its_regions_each_lit(driver, server, workdir):
    """A parallel state's regions are drawn inside its box, dashed lines between them (as
    statecharts draw them), and the active state of every region is lit; the root's `on`
    edges leave from a box for the machine."""
    if server is None:
        pytest.skip("SPIN_DASHBOARD_URL set: cannot start a server with another machine")
    machine = {"id": "editor", "initial": "word", "on": {"RESET": "#word"}, "states": {
        "word": {"id": "word", "type": "parallel", "states": {
            "bold": {"initial": "off", "states": {"off": {"on": {"TOGGLE": "on"}}, "on": {"on": {"TOGGLE": "off"}}}},
            "list": {"initial": "none", "states": {"none": {"on": {"BULLETS": "bullets"}}, "bullets": {}}}}}}}
    parallel = machine_server(workdir, "parallel", "editor", machine)
    lit = sorted_lit_states("editor")
    try:
        chart, regions = chart_regions(driver, parallel.url, "editor")
        assert regions == ["state word.bold (region)", "state word.list (region)"]
        assert len(driver.find_elements(By.CSS_SELECTOR, chart + ' line.chart-region[data-region-of="word"]')) == 1
        edges = {(g.get_attribute("data-from"), g.get_attribute("data-to")) for g in
                 driver.find_elements(By.CSS_SELECTOR, chart + " g.transition")}
        assert ("", "word") in edges and ("word.bold.off", "word.bold.on") in edges, edges
        wait_for(driver, lambda d: lit(d) == ["word", "word.bold", "word.bold.off", "word.list", "word.list.none"],
                 "every region's state lit", on_timeout=lit)
        assert post_event(parallel.url, "editor", {"type": "TOGGLE"}) == 202
        wait_for(driver, lambda d: lit(d) == ["word", "word.bold", "word.bold.on", "word.list", "word.list.none"],
                 "the toggled region lit, the other still", on_timeout=lit)
    finally:
        parallel.stop()


def test_a_parallel_root_is_drawn_as_the_machines_box_with_its_regions(driver, server, workdir):
    """A machine parallel at its root: the machine's box holds the top-level regions with
    dashed lines between them, a target list draws an arc to each target, and the
    regions' states are lit from the value (the object of regions itself)."""
    if server is None:
        pytest.skip("SPIN_DASHBOARD_URL set: cannot start a server with another machine")
    machine = {"id": "menus", "type": "parallel", "states": {
        "Pages": {"initial": "About", "states": {"About": {}, "Dashboard": {"id": "Dashboard"}}},
        "Menu": {"initial": {"target": "Closed", "actions": []}, "states": {
            "Closed": {"on": {"toggle": "Opened"}},
            "Opened": {"id": "Opened", "on": {"go": {"target": ["#Dashboard", "#Opened"]}}}}}}}
    parallel = machine_server(workdir, "parallelroot", "menus", machine)
    lit = sorted_lit_states("menus")
    try:
        chart, regions = chart_regions(driver, parallel.url, "menus")
        assert regions == ["state Pages (region)", "state Menu (region)"]
        root = driver.find_element(By.CSS_SELECTOR, chart + " g.state.machine-root")
        assert root.get_attribute("aria-label") == "machine menus (parallel) (machine)"
        assert len(driver.find_elements(By.CSS_SELECTOR, chart + ' line.chart-region[data-region-of=""]')) == 1
        # The initial transition written as an object still marks Menu's initial state.
        initial = driver.find_element(By.CSS_SELECTOR, chart + ' g.state[data-path="Menu.Closed"]')
        assert initial.get_attribute("aria-label") == "state Menu.Closed (initial)"
        edges = {(g.get_attribute("data-from"), g.get_attribute("data-to")) for g in
                 driver.find_elements(By.CSS_SELECTOR, chart + " g.transition")}
        assert {("Menu.Opened", "Pages.Dashboard"), ("Menu.Opened", "Menu.Opened")} <= edges, edges
        wait_for(driver, lambda d: lit(d) == ["Menu", "Menu.Closed", "Pages", "Pages.About"],
                 "every region's state lit", on_timeout=lit)
        assert post_event(parallel.url, "menus", {"type": "toggle"}) == 202
        assert post_event(parallel.url, "menus", {"type": "go"}) == 202
        wait_for(driver, lambda d: lit(d) == ["Menu", "Menu.Opened", "Pages", "Pages.Dashboard"],
                 "both targets lit", on_timeout=lit)
    finally:
        parallel.stop()


# ---- a cluster: the dashboard of one node shows Spins another node serves ------------------

def _have_postgres():
    return any(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")) and shutil.which("psql") is not None


@pytest.mark.skipif(not _have_postgres(), reason="PostgreSQL is not installed (Debian package postgresql)")
def test_a_nodes_dashboard_streams_a_spin_another_node_serves(driver, workdir):
    pg = ROOT / "Tests" / "postgres" / "pg.sh"
    pg_dir = Path(tempfile.mkdtemp(prefix="spin-browser-pg-", dir="/tmp"))
    url = subprocess.run([str(pg), "start", str(pg_dir)], check=True, capture_output=True, text=True,
                         timeout=120).stdout.strip()
    nodes = []
    try:
        env = {"SPIN_STORAGE_BACKEND": "postgres", "SPIN_DATABASE_URL": url, "SPIN_CLUSTER_LEASE_SECONDS": "2"}
        for name in ("browser-a", "browser-b"):
            nodes.append(Server(free_port(), workdir / f"storage-{name}", env_extra=env | {"SPIN_NODE": name}))

        def owner_of_counter():
            with urllib.request.urlopen(nodes[0].url + "/v1/cluster", timeout=5) as r:
                view = json.load(r)
            owners = {spin: n["node"] for n in view["nodes"] if n["live"] for spin in n["spins"]}
            live = sorted(n["node"] for n in view["nodes"] if n["live"])
            return owners.get("counter") if live == ["browser-a", "browser-b"] and len(owners) == 5 else None

        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline and owner_of_counter() is None:
            time.sleep(0.2)
        owner = owner_of_counter()
        assert owner is not None, "the two nodes did not share the Spins"
        # The page of the node that does not serve the counter.
        page = nodes[1] if owner == "browser-a" else nodes[0]
        open_page(driver, page.url)
        wait_for(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#cluster .node")) == 2, "two nodes in the panel")
        card = driver.find_element(By.CSS_SELECTOR, f'#cluster .node[data-node="{owner}"]')
        assert "counter" in card.text
        wait_for(driver, lambda d: spin_view(d, "counter")[1] == {"value": 10}, "counter at 10, streamed through the relay")
        before = spin_view(driver, "counter")[0]
        request = urllib.request.Request(page.url + "/v1/spins/counter/events", data=b'{"type":"increase"}',
                                         headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=10) as r:
            assert r.status == 202
        wait_for(driver, lambda d: spin_view(d, "counter") == (before + 1, {"value": 11}), "the page follows the owner")
    finally:
        for node in nodes:
            node.stop()
        subprocess.run([str(pg), "remove", str(pg_dir)], capture_output=True, timeout=60)


def test_a_large_state_updated_by_deltas_shows_as_the_server_has_it(driver, server, workdir):
    """The dashboard opens its streams with ?delta=json-patch: a 2,000-item list whose items
    are changed, inserted and removed arrives as patches and must show exactly."""
    if server is None:
        pytest.skip("SPIN_DASHBOARD_URL set: the server is not ours to configure")
    config = workdir / "delta-config"
    shutil.copytree(ROOT / "Config", config)
    items = [{"id": i, "name": f"item {i}"} for i in range(2000)]
    (config / "machines" / "catalog.json").write_text(json.dumps({
        "id": "catalog", "initial": "open", "context": {"items": items},
        "states": {"open": {"on": {"SET_ITEMS": {"actions": [
            {"type": "assign", "set": {"items": {"from": "event.items"}}}]}}}}}))
    document = json.loads((config / "spin-server.json").read_text())
    document["spins"].append({"name": "catalog", "machine": "machines/catalog.json"})
    (config / "spin-server.json").write_text(json.dumps(document))
    s = Server(free_port(), workdir / "delta-storage", env_extra={"SPIN_CONFIG": str(config / "spin-server.json")})
    try:
        open_page(driver, s.url)
        wait_for(driver, lambda d: spin_view(d, "catalog")[0] == 0, "the catalog's snapshot")
        for n in range(6):
            if n % 3 == 0:
                items[1000 + n]["name"] = f"renamed {n}"
            elif n % 3 == 1:
                items.insert(500, {"id": 5000 + n, "name": "inserted"})
            else:
                del items[1500]
            assert post_event(s.url, "catalog", {"type": "SET_ITEMS", "items": items}) == 202
        with urllib.request.urlopen(s.url + "/v1/spins/catalog", timeout=10) as r:
            expected = json.load(r)
        assert expected["state"]["context"]["items"] == items
        wait_for(driver, lambda d: spin_view(d, "catalog") == (6, expected["state"]),
                 "the catalog at sequence 6 exactly as GET shows it")
    finally:
        s.stop()


def test_a_machine_spin_shows_its_version_and_the_chart_of_it_across_a_migration(driver, server, workdir):
    """A machine Spin's card says which version of its file it runs ("v1"), and its chart
    is that version's. Restarted on version 2 (`green` renamed `go`), the page, still open,
    reconnects and lists the Spin again: the card says "v2", and the chart is redrawn with
    `go` lit where `green` was, at the migration's sequence."""
    if server is None:
        pytest.skip("SPIN_DASHBOARD_URL set: cannot start a server with another machine")
    light = {"id": "light", "initial": "green", "context": {"cycles": 0},
             "states": {"green": {"on": {"NEXT": "yellow"}}, "yellow": {"on": {"NEXT": "red"}},
                        "red": {"on": {"NEXT": "green"}}}}
    port = free_port()
    first = machine_server(workdir, "versioned", "light", light, port=port)
    try:
        driver.get(first.url + "/")
        version = lambda d: spin_card(d, "light").find_element(By.CSS_SELECTOR, ".version").text
        wait_for(driver, lambda d: version(d) == "v1", "v1 on the card")
        wait_for(driver, lambda d: lit_states(d, "light") == ["green"], "green lit")
        for _ in range(3):
            assert post_event(first.url, "light", {"type": "NEXT"}) == 202
        wait_for(driver, lambda d: spin_view(d, "light")[0] == 3, "sequence 3 on the page")
        first.stop()
        renamed = json.loads(json.dumps(light).replace('"green"', '"go"'))
        renamed["version"] = 2
        renamed["migrations"] = {"1": {"states": {"green": "go"}}}
        second = machine_server(workdir, "versioned", "light", renamed, port=port)
        try:
            wait_for(driver, lambda d: version(d) == "v2", "v2 on the card after the migration",
                     on_timeout=lambda d: spin_card(d, "light").text)
            wait_for(driver, lambda d: lit_states(d, "light") == ["go"], "go lit in the redrawn chart",
                     on_timeout=lambda d: lit_states(d, "light"))
            states = [g.get_attribute("data-path") for g in
                      driver.find_elements(By.CSS_SELECTOR, '.spin[data-spin="light"] .chart g.state')]
            assert "green" not in states and "go" in states, states
            assert spin_view(driver, "light")[0] == 4   # the migration, at the next sequence
        finally:
            second.stop()
    finally:
        first.stop()
