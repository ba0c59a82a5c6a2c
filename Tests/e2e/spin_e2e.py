"""Support for the end-to-end tests: a running spin-server process, HTTP helpers,
a raw-socket WebSocket client for byte-level checks, and bounded waits.

Every network call has a timeout, every loop is bounded, and only loopback
addresses are used.
"""
from __future__ import annotations

import asyncio
import base64
import gc
import hashlib
import json
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import time
import zlib
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"
HTTP_TIMEOUT = 5.0
READY_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def server_binary() -> Path:
    """The server executable: `SPIN_SERVER_BIN` or the debug build of this checkout."""
    override = os.environ.get("SPIN_SERVER_BIN")
    if override:
        return Path(override).resolve()
    return REPO / ".build" / "debug" / "spin-server"


def merge(target: dict, patch: dict) -> None:
    """Deep-merges `patch` into `target` (objects merge, everything else replaces)."""
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = value


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def clean_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The test process's environment without SPIN_* or proxy variables, plus `extra`."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("SPIN_") and "proxy" not in key.lower()}
    env["NO_PROXY"] = "127.0.0.1,localhost,::1"
    env.update(extra or {})
    return env


class SpinServer:
    """One spin-server process listening on 127.0.0.1 in a temporary directory."""

    def __init__(self, binary: Path, workdir: Path, *, port: int | None = None,
                 args: list[str] | None = None, env: dict[str, str] | None = None,
                 storage: Path | None = None, tls: "TLSFiles | None" = None, use_config: bool = True,
                 config_patch: dict | None = None):
        self.binary = binary
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.requested_port = free_port() if port is None else port
        self.port = self.requested_port
        self.storage = storage or (workdir / "storage")
        self.storage.mkdir(parents=True, exist_ok=True)
        self.tls = tls
        self.extra_args = list(args or [])
        self.env = clean_environment(env)
        self.log_path = workdir / "server.log"
        self.config_path: Path | None = None
        source_config = REPO / "Config" / "spin-server.json"
        if use_config and source_config.exists():
            # Copy the whole Config folder so that paths relative to the file (machines/)
            # still resolve; the copy keeps the checkout untouched.
            copy = workdir / "Config"
            if not copy.exists():
                shutil.copytree(REPO / "Config", copy)
            self.config_path = copy / "spin-server.json"
            if config_patch:
                document = json.loads(self.config_path.read_text())
                merge(document, config_patch)
                self.config_path.write_text(json.dumps(document, indent=2))
        elif config_patch:
            raise AssertionError("config_patch needs Config/spin-server.json in the checkout")
        self.process: subprocess.Popen | None = None
        self.exit_code: int | None = None
        self.signalled = False
        self.http = requests.Session()
        self.http.trust_env = False
        if tls is not None:
            self.http.verify = str(tls.ca)

    # -- lifecycle -------------------------------------------------------------------

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://{LOOPBACK}:{self.port}"

    @property
    def ws_base(self) -> str:
        return f"{'wss' if self.tls else 'ws'}://{LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def command(self) -> list[str]:
        command = [str(self.binary), "--host", LOOPBACK, "--port", str(self.requested_port),
                   "--storage", str(self.storage)]
        if self.config_path is not None:
            command += ["--config", str(self.config_path)]
        if self.tls is not None:
            command += ["--tls-certificate", str(self.tls.certificate), "--tls-key", str(self.tls.key)]
        return command + self.extra_args

    def start(self, ready_timeout: float = READY_TIMEOUT) -> "SpinServer":
        log = open(self.log_path, "ab")
        try:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, cwd=self.workdir, env=self.env)
        finally:
            log.close()
        self.wait_ready(ready_timeout)
        return self

    def wait_ready(self, timeout: float) -> None:
        """Polls `/healthz` until it answers 200, at most `timeout` seconds."""
        deadline = time.monotonic() + timeout
        last_error = "no attempt"
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                raise AssertionError(f"spin-server exited with {code} before serving:\n{self.log_tail()}")
            if self.requested_port == 0:
                match = re.search(r"listening on https?://[^\s:]+:(\d+)", self.log())
                if not match:
                    time.sleep(0.1)
                    continue
                self.port = int(match.group(1))
            try:
                response = self.http.get(self.base_url + "/healthz", timeout=1.0)
                if response.status_code == 200:
                    return
                last_error = f"status {response.status_code}"
            except requests.RequestException as error:
                last_error = repr(error)
            time.sleep(0.1)
        self.kill()
        raise AssertionError(f"spin-server did not answer /healthz within {timeout} s ({last_error}):\n{self.log_tail()}")

    def terminate(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM (unless a signal was sent already), then waits at most `timeout` s;
        returns the exit code (kills and fails the test if the process does not stop in
        time)."""
        if self.exit_code is not None:
            return self.exit_code
        assert self.process is not None
        # No idle keep-alive connection of ours for the server to wait on (responses keep
        # their socket alive through a reference cycle until a collection).
        self.http.close()
        gc.collect()
        if self.process.poll() is None and not self.signalled:
            self.send_signal(signal.SIGTERM)
        try:
            self.exit_code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"spin-server did not exit within {timeout} s of SIGTERM:\n{self.log_tail()}")
        return self.exit_code

    def send_signal(self, number: int) -> None:
        """Signals the server once; `terminate` then only waits (a second SIGTERM means
        "exit now" to the server)."""
        assert self.process is not None
        self.signalled = True
        self.process.send_signal(number)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            try:
                self.exit_code = self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def rss_kib(self) -> int:
        """VmRSS of the server process, in KiB."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        match = re.search(r"^VmRSS:\s+(\d+)\s+kB", status, re.MULTILINE)
        assert match, status
        return int(match.group(1))

    # -- HTTP ------------------------------------------------------------------------

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        kwargs.setdefault("timeout", HTTP_TIMEOUT)
        return self.http.request(method, self.base_url + path, **kwargs)

    def get(self, path: str, **kwargs) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs) -> requests.Response:
        return self.request("POST", path, **kwargs)

    def post_events(self, spin: str, events, *, wait: bool = False, headers: dict | None = None) -> requests.Response:
        """POSTs one event or a batch as JSON."""
        path = f"/v1/spins/{spin}/events" + ("?wait=true" if wait else "")
        return self.post(path, data=json.dumps(events), headers={"Content-Type": "application/json", **(headers or {})})

    def spin(self, name: str, headers: dict | None = None) -> dict:
        response = self.get(f"/v1/spins/{name}", headers=headers)
        assert response.status_code == 200, (response.status_code, response.text)
        return response.json()

    def listed(self, prefix: str = "", limit: int = 1000) -> list[dict]:
        """Every Spin `GET /v1/spins?prefix=` lists, page after page (`limit` each)."""
        spins, after = [], ""
        while True:
            response = self.get(f"/v1/spins?prefix={prefix}&limit={limit}&after={after}")
            assert response.status_code == 200, (response.status_code, response.text)
            page = response.json()
            spins += page["spins"]
            if page["next"] is None:
                return spins
            after = page["next"]

    def sequence(self, name: str, headers: dict | None = None) -> int:
        return self.spin(name, headers)["sequence"]

    def sequences(self, headers: dict | None = None) -> dict[str, int]:
        response = self.get("/v1/spins", headers=headers)
        assert response.status_code == 200, (response.status_code, response.text)
        return {entry["name"]: entry["sequence"] for entry in response.json()["spins"]}

    def settled_sequences(self, timeout: float = 10.0, headers: dict | None = None) -> dict[str, int]:
        """The sequences once no Spin moved for 300 ms (the examples' feedbacks stop by
        themselves): the baseline against which "nothing changed" is checked."""
        deadline = time.monotonic() + timeout
        previous = self.sequences(headers)
        while time.monotonic() < deadline:
            time.sleep(0.3)
            current = self.sequences(headers)
            if current == previous:
                return current
            previous = current
        raise AssertionError(f"the Spins did not settle within {timeout} s: {previous}")

    def metrics(self, headers: dict | None = None) -> str:
        response = self.get("/metrics", headers=headers)
        assert response.status_code == 200, (response.status_code, response.text)
        return response.text


class TLSFiles:
    """A CA and a server certificate for 127.0.0.1/localhost made with the openssl CLI:
    ECDSA P-256 keys, or RSA 2048 with `key_type="rsa"`."""

    def __init__(self, directory: Path, key_type: str = "ec"):
        directory.mkdir(parents=True, exist_ok=True)
        self.ca = directory / "ca.pem"
        self.certificate = directory / "server.pem"
        self.key = directory / "server.key"
        ca_key = directory / "ca.key"
        csr = directory / "server.csr"
        extensions = directory / "server.ext"
        extensions.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                              "extendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n")
        ec = (["-newkey", "rsa:2048", "-nodes"] if key_type == "rsa"
              else ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"])
        run = lambda *args: subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=30)
        run("req", "-x509", *ec, "-keyout", str(ca_key), "-out", str(self.ca), "-days", "2",
            "-subj", "/CN=spin-e2e-ca", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        run("req", *ec, "-keyout", str(self.key), "-out", str(csr), "-subj", "/CN=localhost")
        run("x509", "-req", "-in", str(csr), "-CA", str(self.ca), "-CAkey", str(ca_key), "-CAcreateserial",
            "-out", str(self.certificate), "-days", "2", "-extfile", str(extensions))


# -- errors -----------------------------------------------------------------------------

def assert_error(response: requests.Response, status: int, code: str, *, message_contains: str | None = None) -> dict:
    """The response is `status` with `{"error":{"code":code,"message":..}}` as JSON."""
    assert response.status_code == status, f"expected {status} {code}, got {response.status_code}: {response.text[:500]}"
    content_type = response.headers.get("Content-Type", "")
    assert content_type.startswith("application/json"), f"error Content-Type is {content_type!r}"
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"].get("message"), str) and body["error"]["message"], body
    if message_contains is not None:
        assert message_contains in body["error"]["message"], body
    return body


# -- metrics -----------------------------------------------------------------------------

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)(?:\s+-?\d+)?\s*$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Samples of a Prometheus text exposition: (name, labels, value)."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        assert match, f"not a Prometheus sample line: {line!r}"
        labels = dict(_LABEL.findall(match.group(2) or ""))
        samples.append((match.group(1), labels, float(match.group(3))))
    return samples


def metric_value(text: str, name: str, **labels: str) -> float:
    """The value of the sample `name{labels}`, 0 when absent (a counter not yet seen)."""
    for sample_name, sample_labels, value in parse_metrics(text):
        if sample_name == name and all(sample_labels.get(k) == v for k, v in labels.items()):
            return value
    return 0.0


# -- raw WebSocket client ------------------------------------------------------------------

class RawWebSocket:
    """A WebSocket client at the byte level (RFC 6455), for what the real libraries refuse
    to send: unmasked frames, invalid UTF-8, oversized messages, or not reading at all."""

    def __init__(self, port: int, path: str, *, headers: dict[str, str] | None = None,
                 receive_buffer: int | None = None, timeout: float = HTTP_TIMEOUT):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer is not None:
            # Before connect, so that the advertised window stays small.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.sock.settimeout(timeout)
        self.sock.connect((LOOPBACK, port))
        self.buffer = b""
        self.last_rsv1 = False
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [f"GET {path} HTTP/1.1", f"Host: {LOOPBACK}:{port}", "Upgrade: websocket",
                 "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = self._read_until(b"\r\n\r\n", limit=16384)
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        self.status = int(status_line.split()[1])
        self.headers = {}
        for line in header_lines:
            if ":" in line:
                name, value = line.split(":", 1)
                self.headers[name.strip().lower()] = value.strip()
        self.deflate = "permessage-deflate" in self.headers.get("sec-websocket-extensions", "")
        # One inflater for the connection: the server may keep its compression context
        # from message to message (RFC 7692 §7.2.3.1).
        self.inflater = zlib.decompressobj(-15)
        if self.status == 101:
            expected = base64.b64encode(hashlib.sha1(key.encode() + WS_GUID).digest()).decode()
            assert self.headers.get("sec-websocket-accept") == expected, self.headers

    def _read_until(self, marker: bytes, limit: int) -> bytes:
        while marker not in self.buffer:
            assert len(self.buffer) < limit, f"no {marker!r} in {len(self.buffer)} bytes"
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError(f"closed before {marker!r}; got {self.buffer[:200]!r}")
            self.buffer += chunk
        head, self.buffer = self.buffer.split(marker, 1)
        return head

    def _fill(self, count: int) -> None:
        """Reads until the buffer holds `count` bytes, consuming nothing (so that a
        timeout leaves the stream intact)."""
        while len(self.buffer) < count:
            chunk = self.sock.recv(max(65536, count - len(self.buffer)))
            if not chunk:
                raise ConnectionError("closed in the middle of a frame")
            self.buffer += chunk

    @staticmethod
    def frame(opcode: int, payload: bytes, *, fin: bool = True, mask: bool = True,
              declared_length: int | None = None) -> bytes:
        length = len(payload) if declared_length is None else declared_length
        head = bytes([(0x80 if fin else 0) | opcode])
        mask_bit = 0x80 if mask else 0
        if length < 126:
            head += bytes([mask_bit | length])
        elif length < 1 << 16:
            head += bytes([mask_bit | 126]) + struct.pack("!H", length)
        else:
            head += bytes([mask_bit | 127]) + struct.pack("!Q", length)
        if not mask:
            return head + payload
        key = os.urandom(4)
        return head + key + mask_bytes(payload, key)

    def send_frame(self, opcode: int, payload: bytes, **kwargs) -> None:
        self.sock.sendall(self.frame(opcode, payload, **kwargs))

    def send_text(self, text: str) -> None:
        self.send_frame(0x1, text.encode())

    def send_json(self, value) -> None:
        self.send_text(json.dumps(value))

    def recv_frame(self, timeout: float = HTTP_TIMEOUT) -> tuple[bool, int, bytes]:
        """One server frame: (fin, opcode, payload). Server frames are never masked."""
        self.sock.settimeout(timeout)
        self._fill(2)
        first, second = self.buffer[0], self.buffer[1]
        assert second & 0x80 == 0, "the server masked a frame"
        allowed = 0x40 if self.deflate else 0
        assert first & 0x70 & ~allowed == 0, f"RSV bits set without an extension: {first:#x}"
        self.last_rsv1 = bool(first & 0x40)
        length, offset = second & 0x7F, 2
        if length == 126:
            self._fill(4)
            length, offset = struct.unpack("!H", self.buffer[2:4])[0], 4
        elif length == 127:
            self._fill(10)
            length, offset = struct.unpack("!Q", self.buffer[2:10])[0], 10
        self._fill(offset + length)
        payload = self.buffer[offset:offset + length]
        self.buffer = self.buffer[offset + length:]
        return bool(first & 0x80), first & 0x0F, payload

    def recv_message(self, timeout: float = HTTP_TIMEOUT, max_frames: int = 10000):
        """The next data message ("text"/"binary", payload) or ("close", (code, reason));
        answers pings on the way."""
        parts: list[bytes] = []
        kind = None
        compressed = False
        for _ in range(max_frames):
            fin, opcode, payload = self.recv_frame(timeout)
            if opcode in (0x1, 0x2):
                compressed = self.last_rsv1
            if opcode == 0x8:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                return "close", (code, payload[2:].decode("utf-8", "replace"))
            if opcode == 0x9:
                self.send_frame(0xA, payload)
                continue
            if opcode == 0xA:
                continue
            if opcode in (0x1, 0x2):
                kind = "text" if opcode == 0x1 else "binary"
            parts.append(payload)
            if fin:
                data = b"".join(parts)
                if compressed:  # RFC 7692 §7.2.2: append the empty stored block back
                    data = self.inflater.decompress(data + b"\x00\x00\xff\xff")
                return kind, data
        raise AssertionError(f"no complete message in {max_frames} frames")

    def recv_json(self, timeout: float = HTTP_TIMEOUT) -> dict:
        kind, payload = self.recv_message(timeout)
        assert kind == "text", (kind, payload)
        return json.loads(payload)

    def expect_close(self, code: int, timeout: float = HTTP_TIMEOUT, max_messages: int = 100000) -> str:
        """Reads until the server's close frame; asserts its code, then that the TCP
        connection ends. Returns the reason."""
        for _ in range(max_messages):
            try:
                kind, payload = self.recv_message(timeout)
            except (ConnectionError, OSError) as error:
                raise AssertionError(f"connection ended without a close frame (expected {code}): {error!r}")
            if kind == "close":
                received, reason = payload
                assert received == code, f"close code {received} ({reason!r}), expected {code}"
                self.assert_eof(timeout)
                return reason
        raise AssertionError(f"no close frame within {max_messages} messages")

    def assert_eof(self, timeout: float = HTTP_TIMEOUT) -> None:
        self.sock.settimeout(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                return
            except socket.timeout:
                raise AssertionError(f"the server did not close the connection within {timeout} s")
            if not chunk:
                return
        raise AssertionError(f"the server did not close the connection within {timeout} s")

    def readable(self, wait: float = 0.0) -> bool:
        if self.buffer:
            return True
        ready, _, _ = select.select([self.sock], [], [], wait)
        return bool(ready)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def deflate_message(data: bytes) -> bytes:
    """A permessage-deflate payload (RFC 7692 §7.2.1): raw deflate, sync-flushed, without
    the trailing 00 00 ff ff."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    out = compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)
    assert out.endswith(b"\x00\x00\xff\xff")
    return out[:-4]


def mask_bytes(payload: bytes, key: bytes) -> bytes:
    if not payload:
        return b""
    repeated = (key * (len(payload) // 4 + 1))[:len(payload)]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(len(payload), "big")


# -- raw HTTP ------------------------------------------------------------------------------

def raw_exchange(port: int, data: bytes, *, timeout: float = HTTP_TIMEOUT, read_limit: int = 1 << 20) -> tuple[bytes, bool]:
    """Sends `data` on a fresh connection and reads until the server closes or goes
    silent for `timeout`. Returns (bytes received, whether the server closed)."""
    with socket.create_connection((LOOPBACK, port), timeout=timeout) as sock:
        sock.sendall(data)
        received = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(received) < read_limit:
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                return received, False
            except ConnectionResetError:
                return received, True
            if not chunk:
                return received, True
            received += chunk
        return received, False


def parse_response_head(data: bytes) -> tuple[str, int, dict[str, str], bytes]:
    """(status line, status, lower-cased headers, rest) of the first response in `data`."""
    assert b"\r\n\r\n" in data, f"no complete response head in {data[:300]!r}"
    head, rest = data.split(b"\r\n\r\n", 1)
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status_line, int(status_line.split()[1]), headers, rest


# -- asyncio helpers -----------------------------------------------------------------------

def run_async(coroutine, timeout: float = 45.0):
    """Runs a coroutine with an overall deadline."""
    async def bounded():
        return await asyncio.wait_for(coroutine, timeout)
    return asyncio.run(bounded())


async def recv_json(ws, timeout: float = HTTP_TIMEOUT) -> dict:
    message = await asyncio.wait_for(ws.recv(), timeout)
    assert isinstance(message, str), f"expected a text frame, got {type(message)}"
    return json.loads(message)


async def recv_until(ws, predicate, *, timeout: float = 10.0, max_messages: int = 100000) -> tuple[dict, list[dict]]:
    """Receives until `predicate(message)`; returns it and every message received."""
    seen: list[dict] = []
    deadline = asyncio.get_running_loop().time() + timeout
    for _ in range(max_messages):
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            break
        try:
            message = await recv_json(ws, remaining)
        except asyncio.TimeoutError:
            break
        seen.append(message)
        if predicate(message):
            return message, seen
    raise AssertionError(f"no matching message within {timeout} s; received {seen[-10:]}")
