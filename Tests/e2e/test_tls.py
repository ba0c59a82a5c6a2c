"""TLS 1.2+ through OpenSSL when a certificate is configured (--tls-certificate/--tls-key),
checked with curl, openssl s_client, requests, a wss:// client and testssl.sh: TLS 1.2
offers only ECDHE with AES-GCM or ChaCha20-Poly1305 (no CBC)."""
from __future__ import annotations

import json
import re
import shutil
import ssl
import subprocess
import warnings

import pytest
import requests
from websockets.asyncio.client import connect

from spin_e2e import LOOPBACK, TLSFiles, recv_json, run_async


@pytest.fixture(scope="module")
def tls_server(module_server, tls_files):
    return module_server(tls=tls_files, name="tls")


def test_curl_with_the_ca_gets_healthz_over_https(tls_server, tls_files):
    result = subprocess.run(["curl", "--silent", "--show-error", "--noproxy", "*", "--max-time", "10",
                             "--cacert", str(tls_files.ca), tls_server.base_url + "/healthz"],
                            capture_output=True, text=True, timeout=15)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"status": "ok"}


def test_curl_without_the_ca_refuses_the_certificate(tls_server):
    result = subprocess.run(["curl", "--silent", "--noproxy", "*", "--max-time", "10", tls_server.base_url + "/healthz"],
                            capture_output=True, text=True, timeout=15)
    assert result.returncode == 60, (result.returncode, result.stderr)  # peer certificate cannot be authenticated


def test_openssl_s_client_negotiates_alpn_and_tls_1_2_or_later(tls_server, tls_files):
    result = subprocess.run(["openssl", "s_client", "-connect", f"{LOOPBACK}:{tls_server.port}", "-alpn", "http/1.1",
                             "-CAfile", str(tls_files.ca), "-servername", "localhost"],
                            input="", capture_output=True, text=True, timeout=15)
    output = result.stdout + result.stderr
    assert "ALPN protocol: http/1.1" in output, output
    protocol = re.search(r"Protocol\s*:\s*(TLSv[\d.]+)", output) or re.search(r"New, (TLSv[\d.]+)", output)
    assert protocol and protocol.group(1) in ("TLSv1.2", "TLSv1.3"), output
    assert "Verify return code: 0 (ok)" in output, output


def test_tls_1_1_is_refused(tls_server):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # offering TLS 1.1 on purpose
            context.minimum_version = ssl.TLSVersion.TLSv1
            context.maximum_version = ssl.TLSVersion.TLSv1_1
        context.set_ciphers("ALL:@SECLEVEL=0")
    except (ValueError, ssl.SSLError):
        pytest.skip("this OpenSSL cannot offer TLS 1.1 at all")
    import socket
    with socket.create_connection((LOOPBACK, tls_server.port), timeout=5) as raw:
        with pytest.raises((ssl.SSLError, ConnectionResetError, OSError)):
            with context.wrap_socket(raw) as tls:
                tls.do_handshake()
                pytest.fail(f"the server accepted {tls.version()}")


def test_requests_verifies_and_uses_the_api(tls_server, tls_files):
    response = requests.get(tls_server.base_url + "/v1/spins", verify=str(tls_files.ca), timeout=5)
    assert response.status_code == 200
    assert {"counter", "levels"} <= {spin["name"] for spin in response.json()["spins"]}
    start = tls_server.settled_sequences()["levels"]
    response = tls_server.post_events("levels", {"type": "set", "left": 5, "right": 5}, wait=True)
    assert response.json() == {"sequence": start + 1, "state": {"left": 5, "right": 5},
                               "replies": [{"applied": True}]}


def test_plain_http_to_the_tls_port_gets_no_api_answer(tls_server):
    with pytest.raises(requests.RequestException):
        response = requests.get(f"http://{LOOPBACK}:{tls_server.port}/healthz", timeout=5)
        # A server may answer a plain request with an HTTP 400; it must not serve the API.
        assert response.status_code == 400
        raise requests.RequestException("answered 400")


def test_wss_stream_sends_a_snapshot(tls_server, tls_files):
    context = ssl.create_default_context(cafile=str(tls_files.ca))

    async def scenario():
        async with connect(tls_server.ws_base + "/v1/spins/levels/stream", ssl=context,
                           open_timeout=5, close_timeout=5, proxy=None) as ws:
            snapshot = await recv_json(ws)
            assert snapshot["type"] == "snapshot"
            assert set(snapshot["state"]) == {"left", "right"}

    run_async(scenario())


def test_log_says_https(tls_server):
    assert f"listening on https://{LOOPBACK}:{tls_server.port}" in tls_server.log(), tls_server.log_tail()


def s_client_tls12(port: int, ca, cipher: str) -> subprocess.CompletedProcess:
    return subprocess.run(["openssl", "s_client", "-connect", f"{LOOPBACK}:{port}", "-tls1_2",
                           "-cipher", f"{cipher}@SECLEVEL=0", "-CAfile", str(ca), "-servername", "localhost"],
                          input="", capture_output=True, text=True, timeout=15)


@pytest.mark.parametrize("cipher,served", [
    ("AES128-SHA", False), ("AES256-GCM-SHA384", False), ("ECDHE-RSA-AES128-SHA", False),
    ("ECDHE-RSA-AES256-SHA384", False), ("ECDHE-RSA-AES128-GCM-SHA256", True),
    ("ECDHE-RSA-CHACHA20-POLY1305", True),
])
def test_tls_1_2_with_an_rsa_certificate_offers_only_ecdhe_aead_suites(start_server, tmp_path, cipher, served):
    files = TLSFiles(tmp_path / "rsa", key_type="rsa")
    server = start_server(name="tls-rsa", tls=files)
    result = s_client_tls12(server.port, files.ca, cipher)
    output = result.stdout + result.stderr
    assert (result.returncode == 0) == served, output
    if served:
        assert f"Cipher is {cipher}" in output, output


@pytest.mark.parametrize("cipher,served", [("ECDHE-ECDSA-AES128-SHA", False), ("ECDHE-ECDSA-AES128-GCM-SHA256", True)])
def test_tls_1_2_with_an_ecdsa_certificate_offers_only_aead_suites(tls_server, tls_files, cipher, served):
    result = s_client_tls12(tls_server.port, tls_files.ca, cipher)
    assert (result.returncode == 0) == served, result.stdout + result.stderr


@pytest.mark.timeout(180)
def test_testssl_finds_no_protocol_below_tls_1_2_and_no_cbc_suite(tls_server, tmp_path):
    """testssl.sh (Debian package `testssl.sh`, installed by Tests/setup.sh) probes every
    protocol and every cipher per protocol. Missing, it fails the run: it is a
    conformance check CI must not lose quietly."""
    binary = shutil.which("testssl") or shutil.which("testssl.sh")
    assert binary, "testssl.sh is not installed: run bash Tests/setup.sh (Debian package testssl.sh)"
    report = tmp_path / "testssl.json"
    result = subprocess.run([binary, "--quiet", "--color", "0", "--warnings", "off", "--connect-timeout", "5",
                             "--openssl-timeout", "5", "--jsonfile", str(report), "--protocols", "--cipher-per-proto",
                             f"{LOOPBACK}:{tls_server.port}"], capture_output=True, text=True, timeout=150)
    assert report.exists(), result.stdout[-3000:] + result.stderr[-3000:]
    findings = {entry["id"]: entry["finding"] for entry in json.loads(report.read_text())}
    for protocol in ["SSLv2", "SSLv3", "TLS1", "TLS1_1"]:
        assert findings.get(protocol, "").startswith("not offered"), (protocol, findings.get(protocol))
    assert findings.get("TLS1_2", "").startswith("offered"), findings.get("TLS1_2")
    assert findings.get("TLS1_3", "").startswith("offered"), findings.get("TLS1_3")
    ciphers = {key: value for key, value in findings.items() if key.startswith("cipher-")}
    assert any(key.startswith("cipher-tls1_2_") for key in ciphers), findings
    for key, finding in ciphers.items():
        assert key.startswith(("cipher-tls1_2_", "cipher-tls1_3_")), finding
        columns = finding.split()
        assert "_CBC_" not in finding and ("AESGCM" in columns or "ChaCha20" in columns), finding
        if key.startswith("cipher-tls1_2_"):
            assert columns[3].startswith("ECDHE-"), finding
    print(f"testssl.sh: {len(ciphers)} suites offered, all AEAD: {sorted(f.split()[3] for f in ciphers.values())}")
