/// The web dashboard served at `GET /` (DESIGN.md §3): one self-contained HTML document.
///
/// Everything is inline (CSS and JavaScript; no CDN, no external fonts, no build step) so
/// the page works on an air-gapped host and is served from memory with
/// `Content-Type: text/html; charset=utf-8`. What the page does:
/// - lists the hosted Spins (`GET /v1/spins`) with their sequence and live state, one
///   WebSocket per Spin on `/v1/spins/{name}/stream` (snapshot first, then state
///   messages), reconnecting with capped, jittered exponential back-off and showing the
///   connection status of each stream;
/// - sends events to the selected Spin (`POST /v1/spins/{name}/events`, JSON editor,
///   optional `?wait=true`), shows the answer or the error code and message, and keeps
///   the last events sent per Spin in `localStorage` to click and re-send;
/// - logs transitions as they arrive (time, Spin, sequence, event → state; sequence gaps
///   from a conflated stream are marked);
/// - shows Gear traffic (`GET /v1/gears`, then `/v1/gears/{name}/stream`);
/// - marks a Spin suspended by its runaway guard, with a Resume button
///   (`POST /v1/spins/{name}/resume`, admin scope); the list is read again every 3 s
///   and after a 409, since streams carry states and not the status;
/// - works with bearer tokens: the token lives in `sessionStorage` only, goes out as
///   `Authorization: Bearer` on fetches and, because browsers cannot set headers on a
///   WebSocket, as the `access_token` query parameter on stream URLs.
///
/// Invariant: the script never assigns server data to `innerHTML`; all text is set through
/// `textContent` / `createTextNode`, so the page cannot be scripted by a Spin's state.
package enum Dashboard {
    /// The `Content-Type` header value to serve `html` with.
    package static let contentType = "text/html; charset=utf-8"

    /// The dashboard document (UTF-8 text).
    package static let html: String = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Spin server</title>
<style>
:root {
  --bg: #f4f5f7; --panel: #ffffff; --ink: #1d2330; --muted: #667085; --line: #e3e6ec;
  --accent: #3b5bdb; --accent-ink: #ffffff; --ok: #2b8a3e; --warn: #e67700; --bad: #c92a2a;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
}
* { box-sizing: border-box; }
html, body { margin: 0; padding: 0; }
body { background: var(--bg); color: var(--ink); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header { display: flex; align-items: center; gap: 16px; flex-wrap: wrap; padding: 10px 20px; background: #1d2330; color: #fff; }
header h1 { font-size: 17px; margin: 0; font-weight: 600; letter-spacing: .2px; }
.grow { flex: 1; }
header label { color: #c5cad6; font-size: 12px; }
header input { width: 190px; }
#conn-summary { display: inline-flex; align-items: center; gap: 6px; font-size: 12px; color: #dfe3ea; }
main { display: grid; grid-template-columns: minmax(280px, 360px) minmax(0, 1fr); gap: 16px; padding: 16px 20px; max-width: 1400px; margin: 0 auto; }
section.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; min-width: 0; }
section.panel > h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .6px; color: var(--muted); margin: 0 0 10px; font-weight: 600; display: flex; align-items: center; gap: 8px; }
section.panel > h2 .count { font-weight: 400; text-transform: none; letter-spacing: 0; }
.col { display: flex; flex-direction: column; gap: 16px; min-width: 0; }
.spin { border: 1px solid var(--line); border-radius: 7px; padding: 8px 10px; margin-bottom: 8px; cursor: pointer; background: #fbfbfd; transition: border-color .15s, box-shadow .15s; }
.spin:hover { border-color: #b8c2d9; }
.spin.selected { border-color: var(--accent); box-shadow: 0 0 0 2px rgba(59, 91, 219, .15); background: #fff; }
.spin .top { display: flex; align-items: center; gap: 8px; }
.spin .name { font-weight: 600; font-size: 15px; }
.spin .kind { color: var(--muted); font-size: 12px; }
.spin .seq { margin-left: auto; font-family: var(--mono); font-size: 12px; color: var(--muted); }
.spin .fields { display: flex; flex-wrap: wrap; gap: 5px; margin-top: 6px; }
.spin.flash { animation: flash .6s ease-out; }
@keyframes flash { from { background: #e7edff; } to { background: #fbfbfd; } }
.chip { display: inline-flex; gap: 5px; align-items: baseline; border-radius: 5px; background: #eef1f6; padding: 1px 7px; font-size: 12px; max-width: 100%; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.chip .k { color: var(--muted); }
.chip .v { font-family: var(--mono); font-weight: 600; }
.dot { display: inline-block; width: 9px; height: 9px; border-radius: 50%; background: #adb5bd; flex: none; }
.dot.live { background: var(--ok); }
.dot.connecting { background: var(--warn); }
.dot.down { background: var(--bad); }
.status { font-size: 11px; color: var(--muted); }
.status.down { color: var(--bad); }
.suspended { font-size: 11px; font-weight: 600; color: #fff; background: var(--bad); border-radius: 4px; padding: 0 6px; }
input, textarea, select, button { font: inherit; }
input[type=password], input[type=text], select { border: 1px solid #c3c9d5; border-radius: 5px; padding: 4px 7px; background: #fff; color: var(--ink); }
textarea { width: 100%; min-height: 110px; border: 1px solid #c3c9d5; border-radius: 6px; padding: 8px; font-family: var(--mono); font-size: 13px; resize: vertical; }
textarea:focus, input:focus, select:focus { outline: 2px solid rgba(59, 91, 219, .35); border-color: var(--accent); }
button { border: 1px solid #c3c9d5; background: #fff; border-radius: 5px; padding: 4px 11px; cursor: pointer; color: var(--ink); }
button:hover { background: #f1f3f8; }
button.primary { background: var(--accent); color: var(--accent-ink); border-color: var(--accent); font-weight: 600; padding: 5px 16px; }
button.primary:hover { background: #2f4ac0; }
button.small { font-size: 12px; padding: 1px 8px; }
button.link { border: none; background: #eef1f6; font-family: var(--mono); font-size: 12px; padding: 2px 8px; max-width: 100%; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; text-align: left; }
button.link:hover { background: #dfe5f2; }
.row { display: flex; align-items: center; gap: 10px; flex-wrap: wrap; }
.row.space { justify-content: space-between; }
.hint { color: var(--muted); font-size: 12px; }
pre.json { margin: 0; background: #f6f7f9; border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; font-family: var(--mono); font-size: 12.5px; white-space: pre-wrap; word-break: break-word; max-height: 220px; overflow: auto; }
#result { margin-top: 8px; padding: 7px 10px; border-radius: 6px; font-family: var(--mono); font-size: 12.5px; white-space: pre-wrap; word-break: break-word; display: none; }
#result.ok { display: block; background: #ebfbee; border: 1px solid #b2f2bb; color: #1b5e20; }
#result.err { display: block; background: #fff5f5; border: 1px solid #ffc9c9; color: #8b1a1a; }
.editor-grid { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 14px; }
.sub { font-size: 12px; color: var(--muted); margin: 10px 0 5px; font-weight: 600; }
.list { display: flex; flex-wrap: wrap; gap: 5px; }
table.log { width: 100%; border-collapse: collapse; font-size: 12.5px; table-layout: fixed; }
table.log th { text-align: left; color: var(--muted); font-weight: 600; font-size: 11px; text-transform: uppercase; letter-spacing: .4px; border-bottom: 1px solid var(--line); padding: 4px 6px; }
table.log td { border-bottom: 1px solid #f0f1f4; padding: 4px 6px; vertical-align: top; font-family: var(--mono); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
table.log td.wrap { white-space: normal; overflow-wrap: anywhere; }
table.log tr.gap td { color: var(--warn); }
table.log tr.new { animation: rowin .8s ease-out; }
@keyframes rowin { from { background: #fff9db; } to { background: transparent; } }
.logbox { max-height: 300px; overflow: auto; }
.arrow { color: var(--muted); }
.empty { color: var(--muted); font-style: italic; padding: 6px 0; }
.gear { display: flex; align-items: center; gap: 8px; padding: 3px 0; }
.gear .name { font-weight: 600; }
#banner { display: none; background: #fff4e6; color: #7a3d00; border-bottom: 1px solid #ffd8a8; padding: 6px 20px; font-size: 13px; }
#banner.show { display: block; }
@media (max-width: 900px) { main { grid-template-columns: 1fr; } .editor-grid { grid-template-columns: 1fr; } }
</style>
</head>
<body>
<header>
  <h1>Spin server</h1>
  <span id="conn-summary"><span class="dot" id="conn-dot"></span><span id="conn-text">connecting…</span></span>
  <span class="grow"></span>
  <label for="token">Bearer token</label>
  <input id="token" type="password" autocomplete="off" placeholder="none (open server)">
  <button id="token-apply" class="small" type="button">Apply</button>
  <button id="token-clear" class="small" type="button">Clear</button>
</header>
<div id="banner" role="alert"></div>
<main>
  <div class="col">
    <section class="panel" id="spins-panel">
      <h2>Spins <span class="count" id="spin-count"></span></h2>
      <div id="spins"><div class="empty">Loading…</div></div>
    </section>
    <section class="panel" id="gears-panel">
      <h2>Gears <span class="count" id="gear-count"></span></h2>
      <div id="gears"><div class="empty">Loading…</div></div>
    </section>
  </div>
  <div class="col">
    <section class="panel" id="editor-panel">
      <h2>Send an event to <select id="spin-select" aria-label="Spin"></select></h2>
      <div class="editor-grid">
        <div>
          <textarea id="event-input" spellcheck="false" aria-label="Event JSON">{"type":"increase"}</textarea>
          <div class="row space" style="margin-top:6px">
            <div class="row">
              <button id="send" class="primary" type="button">Send</button>
              <label class="hint"><input id="wait" type="checkbox"> wait for the new state</label>
            </div>
            <span class="hint">Ctrl+Enter sends · one event or an array</span>
          </div>
          <div id="result" aria-live="polite"></div>
          <div class="sub">Examples</div>
          <div class="list" id="examples"></div>
          <div class="sub">Recently sent</div>
          <div class="list" id="history"></div>
        </div>
        <div>
          <div class="row space"><span class="sub" style="margin-top:0">Current state</span><span class="status" id="selected-status"></span></div>
          <pre class="json" id="selected-state">–</pre>
        </div>
      </div>
    </section>
    <section class="panel" id="transitions-panel">
      <h2>Transitions <span class="count" id="transition-count"></span> <span class="grow"></span><button id="clear-transitions" class="small" type="button">Clear</button></h2>
      <div class="logbox">
        <table class="log" id="transitions">
          <colgroup><col style="width:104px"><col style="width:90px"><col style="width:70px"><col><col></colgroup>
          <thead><tr><th>time</th><th>spin</th><th>seq</th><th>event</th><th>new state</th></tr></thead>
          <tbody></tbody>
        </table>
      </div>
    </section>
    <section class="panel" id="gear-traffic-panel">
      <h2>Gear traffic <span class="count" id="gear-traffic-count"></span></h2>
      <div class="logbox">
        <table class="log" id="gear-log">
          <colgroup><col style="width:104px"><col style="width:90px"><col style="width:110px"><col></colgroup>
          <thead><tr><th>time</th><th>gear</th><th>from</th><th>event</th></tr></thead>
          <tbody></tbody>
        </table>
      </div>
    </section>
  </div>
</main>
<script>
"use strict";
(function () {
  // ---- settings -------------------------------------------------------------------
  const BACKOFF_BASE_MS = 500;      // first retry after 0.25..0.5 s
  const BACKOFF_CAP_MS = 15000;     // never wait more than 15 s between tries
  const MAX_LOG_ROWS = 200;         // transitions and gear rows kept on screen
  const MAX_HISTORY = 8;            // events remembered per Spin
  const TOKEN_KEY = "spin.token";   // sessionStorage only: gone with the tab
  const HISTORY_KEY = "spin.history.";
  const EXAMPLES = {
    counter: [{type: "increase"}, {type: "decrease"}, {type: "reset"}],
    levels: [{type: "set", left: 0, right: 30}, {type: "increaseLeft"}, {type: "decreaseRight"}],
    feature: [{type: "load"}, {type: "unauthorizedResponse"}, {type: "loaded", items: 3}],
    router: [{type: "logout"}, {type: "login"}, {type: "checkAuthorization"}]
  };

  // ---- state ----------------------------------------------------------------------
  const spins = new Map();   // name -> {name, kind, sequence, state, card, socket, status}
  const gears = new Map();   // name -> {name, attached, row, socket, status}
  let selected = null;
  let transitionCount = 0;
  let gearTrafficCount = 0;
  let listAttempt = 0;
  let listTimer = null;

  // ---- helpers: data becomes text nodes only ---------------------------------------
  function el(tag, props, children) {
    const node = document.createElement(tag);
    if (props) {
      for (const key of Object.keys(props)) {
        if (key === "text") node.textContent = props[key];
        else if (key === "cls") node.className = props[key];
        else if (key.startsWith("on")) node.addEventListener(key.slice(2), props[key]);
        else node.setAttribute(key, props[key]);
      }
    }
    for (const child of children || []) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function compact(value) { try { return JSON.stringify(value); } catch (e) { return String(value); } }
  function pretty(value) { try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); } }
  function clock() {
    const d = new Date();
    const p = (n, w) => String(n).padStart(w || 2, "0");
    return p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds()) + "." + p(d.getMilliseconds(), 3);
  }
  function token() { try { return sessionStorage.getItem(TOKEN_KEY) || ""; } catch (e) { return ""; } }
  function headers(extra) {
    const h = Object.assign({Accept: "application/json"}, extra || {});
    const t = token();
    if (t) h.Authorization = "Bearer " + t;
    return h;
  }
  function wsURL(path) {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    let url = scheme + "//" + location.host + path;
    const t = token();
    if (t) url += "?access_token=" + encodeURIComponent(t);
    return url;
  }
  /// Full-jitter exponential back-off: uniform in [d/2, d], d = min(cap, base * 2^attempt).
  function backoff(attempt) {
    const d = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * Math.pow(2, Math.min(attempt, 16)));
    return Math.round(d / 2 + Math.random() * d / 2);
  }
  async function api(method, path, body) {
    const init = {method: method, headers: headers(body === undefined ? {} : {"Content-Type": "application/json"}), cache: "no-store"};
    if (body !== undefined) init.body = body;
    const response = await fetch(path, init);
    const text = await response.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch (e) { json = null; }
    return {status: response.status, ok: response.ok, json: json, text: text, headers: response.headers};
  }
  function errorText(r) {
    if (r.json && r.json.error) return r.status + " " + (r.json.error.code || "error") + ": " + (r.json.error.message || "");
    return r.status + " " + (r.text || "").slice(0, 300);
  }
  function banner(message) {
    const b = document.getElementById("banner");
    b.textContent = message || "";
    b.classList.toggle("show", !!message);
  }

  // ---- connection summary ---------------------------------------------------------
  function updateSummary() {
    const all = [...spins.values(), ...gears.values()];
    const live = all.filter(x => x.status === "live").length;
    const dot = document.getElementById("conn-dot");
    const text = document.getElementById("conn-text");
    if (all.length === 0) { dot.className = "dot connecting"; text.textContent = listTimer ? "server unreachable, retrying…" : "connecting…"; return; }
    dot.className = "dot " + (live === all.length ? "live" : live === 0 ? "down" : "connecting");
    text.textContent = live + "/" + all.length + " streams live";
  }
  function setStatus(item, status, detail) {
    item.status = status;
    item.statusDetail = detail || status;
    if (item.dot) item.dot.className = "dot " + (status === "live" ? "live" : status === "connecting" ? "connecting" : "down");
    if (item.statusNode) {
      item.statusNode.textContent = item.statusDetail;
      item.statusNode.className = "status" + (status === "down" ? " down" : "");
    }
    if (item === spins.get(selected)) renderSelected();
    updateSummary();
  }

  // ---- one reconnecting WebSocket ---------------------------------------------------
  /// Opens `path`, calls onMessage for each JSON text frame, reconnects with back-off.
  function stream(item, path, onOpen, onMessage) {
    item.attempt = item.attempt || 0;
    item.closed = false;
    function connect() {
      if (item.closed) return;
      setStatus(item, "connecting", item.attempt ? "reconnecting…" : "connecting…");
      let ws;
      try { ws = new WebSocket(wsURL(path)); } catch (e) { schedule(); return; }
      item.socket = ws;
      ws.onopen = function () { onOpen(); };
      ws.onmessage = function (message) {
        let data;
        try { data = JSON.parse(message.data); } catch (e) { return; }
        item.attempt = 0;
        onMessage(data);
      };
      ws.onclose = function (event) {
        if (item.socket !== ws) return;
        item.socket = null;
        if (item.closed) return;
        schedule(event.code);
      };
      ws.onerror = function () { /* onclose follows */ };
    }
    function schedule(code) {
      const delay = backoff(item.attempt++);
      const why = code === 1008 || code === 4401 || code === 4403 ? "refused (token?)" : "disconnected";
      setStatus(item, "down", why + ", retry in " + (delay / 1000).toFixed(1) + " s");
      clearTimeout(item.timer);
      item.timer = setTimeout(function () {
        // A restarted server may host other Spins: refresh the lists now and then.
        if (item.attempt >= 2) refreshLists();
        connect();
      }, delay);
    }
    item.stop = function () {
      item.closed = true;
      clearTimeout(item.timer);
      if (item.socket) { const s = item.socket; item.socket = null; s.close(1000); }
    };
    connect();
  }

  // ---- Spins -------------------------------------------------------------------------
  function renderFields(container, state) {
    clear(container);
    if (state && typeof state === "object" && !Array.isArray(state)) {
      for (const key of Object.keys(state)) {
        const value = state[key];
        container.appendChild(el("span", {cls: "chip", "data-field": key}, [
          el("span", {cls: "k", text: key}),
          el("span", {cls: "v", text: typeof value === "string" ? value : compact(value)})
        ]));
      }
    } else if (state !== undefined) {
      container.appendChild(el("span", {cls: "chip"}, [el("span", {cls: "v", text: compact(state)})]));
    }
  }
  function renderSpin(spin) {
    spin.seqNode.textContent = "seq " + (spin.sequence === undefined ? "–" : spin.sequence);
    spin.card.setAttribute("data-sequence", String(spin.sequence === undefined ? "" : spin.sequence));
    spin.stateNode.textContent = spin.state === undefined ? "" : compact(spin.state);
    renderFields(spin.fields, spin.state);
    const suspended = spin.runStatus === "suspended";
    spin.card.setAttribute("data-status", spin.runStatus || "running");
    spin.suspendedNode.hidden = !suspended;
    spin.resumeButton.hidden = !suspended;
    if (spin.name === selected) renderSelected();
  }
  async function resume(name) {
    // The editor's event (a correcting `set`) goes with the resume and is applied before
    // the feedbacks run again, so the runaway cannot spend its budget first.
    let body;
    const text = document.getElementById("event-input").value.trim();
    if (name === selected && text) {
      try { JSON.parse(text); body = text; } catch (e) { body = undefined; }
    }
    try {
      const r = await api("POST", "/v1/spins/" + encodeURIComponent(name) + "/resume", body);
      showResult(r.ok, r.ok ? r.status + " " + name + " resumed" + (body ? " with " + body : "") : errorText(r));
    } catch (e) {
      showResult(false, "network error: " + e.message);
    }
    refreshLists();
  }
  function renderSelected() {
    const spin = spins.get(selected);
    const stateNode = document.getElementById("selected-state");
    const statusNode = document.getElementById("selected-status");
    if (!spin) { stateNode.textContent = "–"; statusNode.textContent = ""; return; }
    stateNode.textContent = spin.state === undefined ? "(waiting for the snapshot)" : pretty(spin.state);
    statusNode.textContent = "seq " + (spin.sequence === undefined ? "–" : spin.sequence) + " · " + (spin.statusDetail || "");
  }
  function addSpin(info) {
    const name = String(info.name);
    let spin = spins.get(name);
    if (spin) { spin.kind = info.kind; spin.runStatus = info.status; if (spin.sequence === undefined) spin.sequence = info.sequence; spin.kindNode.textContent = info.kind || ""; renderSpin(spin); return; }
    spin = {name: name, kind: info.kind, sequence: info.sequence, state: undefined, runStatus: info.status};
    spin.dot = el("span", {cls: "dot"});
    spin.kindNode = el("span", {cls: "kind", text: info.kind ? String(info.kind) : ""});
    spin.seqNode = el("span", {cls: "seq"});
    spin.fields = el("div", {cls: "fields"});
    spin.stateNode = el("span", {cls: "state-json", hidden: "hidden"});
    spin.statusNode = el("div", {cls: "status"});
    // Suspended by the runaway guard: say so, and offer POST .../resume (admin scope).
    spin.suspendedNode = el("span", {cls: "suspended", text: "suspended", title: "its feedbacks ran past limits.feedbackBudget; events get 409 until resumed"});
    spin.resumeButton = el("button", {cls: "small resume", type: "button", text: "Resume",
      title: "resume; the event in the editor, if this Spin is selected, is applied first",
      onclick: function (e) { e.stopPropagation(); resume(name); }});
    spin.card = el("div", {cls: "spin", "data-spin": name, tabindex: "0", role: "button",
      onclick: function () { select(name); },
      onkeydown: function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); select(name); } }
    }, [
      el("div", {cls: "top"}, [spin.dot, el("span", {cls: "name", text: name}), spin.kindNode, spin.suspendedNode, spin.resumeButton, spin.seqNode]),
      spin.fields, spin.stateNode, spin.statusNode
    ]);
    spins.set(name, spin);
    renderSpin(spin);
    openSpinStream(spin);
  }
  function openSpinStream(spin) {
    stream(spin, "/v1/spins/" + encodeURIComponent(spin.name) + "/stream", function () {
      setStatus(spin, "connecting", "waiting for the snapshot…");
    }, function (message) { onSpinMessage(spin, message); });
  }
  function onSpinMessage(spin, message) {
    if (message.type === "snapshot") {
      spin.sequence = message.sequence;
      spin.state = message.state;
      setStatus(spin, "live", "live");
      renderSpin(spin);
    } else if (message.type === "state") {
      const previous = spin.sequence;
      const gap = typeof previous === "number" && typeof message.sequence === "number" && message.sequence > previous + 1;
      spin.sequence = message.sequence;
      spin.state = message.state;
      renderSoon(spin);
      logTransition(spin.name, message, gap ? message.sequence - previous - 1 : 0);
    } else if (message.type === "error") {
      showResult(false, "stream error: " + compact(message.error));
    }
  }
  // A busy Spin (a runaway sends thousands of states a second) is drawn once per frame,
  // not once per message: a flash restarts its animation with a forced layout.
  const dirty = new Set();
  let renderTimer = null;
  function renderSoon(spin) {
    dirty.add(spin);
    if (renderTimer === null) renderTimer = setTimeout(renderDirty, 16);
  }
  function renderDirty() {
    renderTimer = null;
    for (const spin of dirty) {
      renderSpin(spin);
      spin.card.classList.remove("flash"); void spin.card.offsetWidth; spin.card.classList.add("flash");
    }
    dirty.clear();
  }
  function logTransition(name, message, skipped) {
    const body = document.querySelector("#transitions tbody");
    const eventText = message.event === undefined ? "(conflated)" : compact(message.event);
    const row = el("tr", {cls: "new" + (skipped ? " gap" : ""), "data-spin": name, "data-sequence": String(message.sequence)}, [
      el("td", {text: clock()}),
      el("td", {text: name}),
      el("td", {text: String(message.sequence)}),
      el("td", {cls: "wrap", title: eventText, text: (skipped ? "(+" + skipped + " conflated) " : "") + eventText}),
      el("td", {cls: "wrap"}, [el("span", {cls: "arrow", text: "→\u00a0"}), compact(message.state)])
    ]);
    body.insertBefore(row, body.firstChild);
    while (body.children.length > MAX_LOG_ROWS) body.removeChild(body.lastChild);
    transitionCount++;
    document.getElementById("transition-count").textContent = "(" + transitionCount + ")";
  }
  function select(name) {
    if (!spins.has(name)) return;
    selected = name;
    for (const spin of spins.values()) spin.card.classList.toggle("selected", spin.name === name);
    const sel = document.getElementById("spin-select");
    if (sel.value !== name) sel.value = name;
    renderSelected();
    renderExamples();
    renderHistory();
    try { localStorage.setItem("spin.selected", name); } catch (e) { /* private mode */ }
  }
  function rebuildSelect() {
    const sel = document.getElementById("spin-select");
    clear(sel);
    for (const name of spins.keys()) sel.appendChild(el("option", {value: name, text: name}));
    if (selected) sel.value = selected;
  }

  // ---- Gears -------------------------------------------------------------------------
  function addGear(info) {
    const name = String(info.name);
    const attached = Array.isArray(info.attached) ? info.attached.map(String) : [];
    let gear = gears.get(name);
    if (gear) { gear.attachedNode.textContent = attached.length ? "↔ " + attached.join(", ") : ""; return; }
    gear = {name: name};
    gear.dot = el("span", {cls: "dot"});
    gear.attachedNode = el("span", {cls: "hint", text: attached.length ? "↔ " + attached.join(", ") : ""});
    gear.statusNode = el("span", {cls: "status"});
    gear.row = el("div", {cls: "gear", "data-gear": name}, [gear.dot, el("span", {cls: "name", text: name}), gear.attachedNode, el("span", {cls: "grow"}), gear.statusNode]);
    gears.set(name, gear);
    const container = document.getElementById("gears");
    if (gears.size === 1) clear(container);
    container.appendChild(gear.row);
    document.getElementById("gear-count").textContent = "(" + gears.size + ")";
    openGearStream(gear);
  }
  function openGearStream(gear) {
    stream(gear, "/v1/gears/" + encodeURIComponent(gear.name) + "/stream", function () {
      gear.attempt = 0;
      setStatus(gear, "live", "live");
    }, function (message) { if (message.type === "gear") logGear(message); });
  }
  function logGear(message) {
    const body = document.querySelector("#gear-log tbody");
    const row = el("tr", {cls: "new", "data-gear": String(message.gear), "data-from": String(message.from)}, [
      el("td", {text: clock()}),
      el("td", {text: String(message.gear)}),
      el("td", {text: String(message.from)}),
      el("td", {cls: "wrap", text: compact(message.event)})
    ]);
    body.insertBefore(row, body.firstChild);
    while (body.children.length > MAX_LOG_ROWS) body.removeChild(body.lastChild);
    gearTrafficCount++;
    document.getElementById("gear-traffic-count").textContent = "(" + gearTrafficCount + ")";
  }

  // ---- lists -------------------------------------------------------------------------
  let refreshing = false;
  async function refreshLists() {
    if (refreshing) return;
    refreshing = true;
    try {
      const r = await api("GET", "/v1/spins");
      if (!r.ok || !r.json || !Array.isArray(r.json.spins)) {
        banner("GET /v1/spins: " + errorText(r) + (r.status === 401 || r.status === 403 ? " — set a token above" : ""));
        scheduleList();
        return;
      }
      banner("");
      listAttempt = 0;
      clearTimeout(listTimer); listTimer = null;
      const container = document.getElementById("spins");
      if (spins.size === 0) clear(container);
      const before = spins.size;
      for (const info of r.json.spins) {
        const had = spins.has(String(info.name));
        addSpin(info);
        if (!had) container.appendChild(spins.get(String(info.name)).card);
      }
      if (spins.size === 0) container.appendChild(el("div", {cls: "empty", text: "No Spin is hosted."}));
      document.getElementById("spin-count").textContent = "(" + spins.size + ")";
      if (spins.size !== before) rebuildSelect();
      if (!selected || !spins.has(selected)) {
        let remembered = null;
        try { remembered = localStorage.getItem("spin.selected"); } catch (e) { remembered = null; }
        const first = spins.keys().next().value;
        if (remembered && spins.has(remembered)) select(remembered); else if (first) select(first);
      }
      const g = await api("GET", "/v1/gears");
      if (g.ok && g.json && Array.isArray(g.json.gears)) {
        if (g.json.gears.length === 0 && gears.size === 0) {
          const c = document.getElementById("gears"); clear(c); c.appendChild(el("div", {cls: "empty", text: "No Gear."}));
        }
        for (const info of g.json.gears) addGear(info);
      }
    } catch (e) {
      banner("Server unreachable: " + e.message);
      scheduleList();
    } finally {
      refreshing = false;
      updateSummary();
    }
  }
  function scheduleList() {
    const delay = backoff(listAttempt++);
    clearTimeout(listTimer);
    listTimer = setTimeout(refreshLists, delay);
    updateSummary();
  }

  // ---- sending -----------------------------------------------------------------------
  function showResult(ok, text) {
    const node = document.getElementById("result");
    node.className = ok ? "ok" : "err";
    node.textContent = text;
  }
  function historyOf(name) {
    try {
      const list = JSON.parse(localStorage.getItem(HISTORY_KEY + name) || "[]");
      return Array.isArray(list) ? list.filter(x => typeof x === "string") : [];
    } catch (e) { return []; }
  }
  function remember(name, text) {
    const list = historyOf(name).filter(x => x !== text);
    list.unshift(text);
    try { localStorage.setItem(HISTORY_KEY + name, JSON.stringify(list.slice(0, MAX_HISTORY))); } catch (e) { /* full or private */ }
    renderHistory();
  }
  function renderHistory() {
    const container = document.getElementById("history");
    clear(container);
    const list = selected ? historyOf(selected) : [];
    if (list.length === 0) { container.appendChild(el("span", {cls: "hint", text: "nothing sent yet"})); return; }
    for (const text of list) {
      container.appendChild(el("button", {cls: "link", type: "button", title: "click: put in the editor · double-click: send again", text: text,
        onclick: function () { document.getElementById("event-input").value = text; },
        ondblclick: function () { document.getElementById("event-input").value = text; send(); }
      }));
    }
  }
  function renderExamples() {
    const container = document.getElementById("examples");
    clear(container);
    const spin = spins.get(selected);
    const list = spin ? (EXAMPLES[spin.kind] || EXAMPLES[spin.name] || []) : [];
    if (list.length === 0) { container.appendChild(el("span", {cls: "hint", text: "none for this kind"})); return; }
    for (const example of list) {
      const text = JSON.stringify(example);
      container.appendChild(el("button", {cls: "link", type: "button", text: text,
        onclick: function () { document.getElementById("event-input").value = text; }
      }));
    }
  }
  async function send() {
    const name = selected;
    if (!name) { showResult(false, "no Spin selected"); return; }
    const text = document.getElementById("event-input").value.trim();
    try { JSON.parse(text); } catch (e) { showResult(false, "not JSON: " + e.message); return; }
    const wait = document.getElementById("wait").checked;
    const button = document.getElementById("send");
    button.disabled = true;
    remember(name, text);
    try {
      const r = await api("POST", "/v1/spins/" + encodeURIComponent(name) + "/events" + (wait ? "?wait=true" : ""), text);
      if (r.ok) showResult(true, r.status + " " + name + " ← " + (r.json ? compact(r.json) : r.text));
      else {
        if (r.status === 409) refreshLists();
        const retry = r.headers.get("Retry-After");
        showResult(false, errorText(r) + (retry ? " (retry after " + retry + " s)" : ""));
      }
    } catch (e) {
      showResult(false, "network error: " + e.message);
    } finally {
      button.disabled = false;
    }
  }

  // ---- token -------------------------------------------------------------------------
  function reconnectAll() {
    for (const item of [...spins.values(), ...gears.values()]) {
      if (item.stop) item.stop();
      item.attempt = 0;
    }
    for (const spin of spins.values()) openSpinStream(spin);
    for (const gear of gears.values()) openGearStream(gear);
    refreshLists();
  }
  function applyToken(value) {
    try {
      if (value) sessionStorage.setItem(TOKEN_KEY, value); else sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* storage disabled */ }
    reconnectAll();
  }

  // ---- wiring --------------------------------------------------------------------------
  document.getElementById("token").value = token();
  document.getElementById("token-apply").addEventListener("click", function () { applyToken(document.getElementById("token").value.trim()); });
  document.getElementById("token").addEventListener("keydown", function (e) { if (e.key === "Enter") applyToken(this.value.trim()); });
  document.getElementById("token-clear").addEventListener("click", function () { document.getElementById("token").value = ""; applyToken(""); });
  document.getElementById("spin-select").addEventListener("change", function () { select(this.value); });
  document.getElementById("send").addEventListener("click", send);
  document.getElementById("event-input").addEventListener("keydown", function (e) {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); send(); }
  });
  document.getElementById("clear-transitions").addEventListener("click", function () {
    clear(document.querySelector("#transitions tbody"));
    transitionCount = 0;
    document.getElementById("transition-count").textContent = "";
  });
  renderHistory();
  renderExamples();
  refreshLists();
  // Streams carry states, not the running/suspended status: re-read the list for it.
  setInterval(function () { if (spins.size && !listTimer) refreshLists(); }, 3000);
})();
</script>
</body>
</html>
"""#
}
