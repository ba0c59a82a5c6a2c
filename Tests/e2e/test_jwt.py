"""Bearer JWTs (auth.jwt) minted by PyJWT with keys made by `cryptography` for the run:
HS256, RS256, ES256 and EdDSA accepted; forgeries, `alg: none`, algorithm confusion,
expired, not-yet-valid, wrong issuer or audience, oversized, malformed and unknown-kid
tokens refused 401 with a message naming why; static tokens beside them; the JWKS file
replaced on disk (or SIGHUP) takes a new key without a restart."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import signal
import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from spin_e2e import assert_error

SECRET = "e2e-hs256-secret-that-is-long-enough-0123456789"
ISSUER = "https://id.spin.test"
AUDIENCE = "spin-e2e"
LEEWAY = 30


def public_pem(key) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


class Keys:
    """Private keys of the run: never written anywhere but the test's memory."""

    def __init__(self):
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.ed = ed25519.Ed25519PrivateKey.generate()
        self.ec_rotated = ec.generate_private_key(ec.SECP256R1())
        self.ed_jwks = ed25519.Ed25519PrivateKey.generate()


def jwk(key, kid: str) -> dict:
    algorithm = {ec.EllipticCurvePrivateKey: ECAlgorithm, ed25519.Ed25519PrivateKey: OKPAlgorithm}
    for kind, cls in algorithm.items():
        if isinstance(key, kind):
            entry = json.loads(cls.to_jwk(key.public_key()))
            break
    else:
        entry = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    entry["kid"] = kid
    entry["use"] = "sig"
    return entry


def write_jwks(path: Path, keys: list[dict]) -> None:
    """Replaces the file at once (a rename), as a key-rotation job would."""
    staged = path.with_suffix(".staged")
    staged.write_text(json.dumps({"keys": keys}))
    os.replace(staged, path)


def claims(**extra) -> dict:
    now = int(time.time())
    base = {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 600, "scope": "read write"}
    base.update(extra)
    return {key: value for key, value in base.items() if value is not None}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hand_made(header: dict, payload: dict, key: bytes | None) -> str:
    """A token signed with HMAC-SHA256 by the standard library (PyJWT refuses to use a PEM
    as an HMAC secret, which is the attack), or unsigned."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(payload).encode())}"
    signature = b64(hmac.new(key, signing_input.encode(), hashlib.sha256).digest()) if key else ""
    return f"{signing_input}.{signature}"


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys()


@pytest.fixture(scope="module")
def jwt_server(server_bin, tmp_path_factory, keys):
    from spin_e2e import SpinServer

    directory = tmp_path_factory.mktemp("jwt-keys")
    (directory / "rs.pem").write_bytes(public_pem(keys.rsa))
    (directory / "ec.pem").write_bytes(public_pem(keys.ec))
    (directory / "ed.pem").write_bytes(public_pem(keys.ed))
    jwks = directory / "jwks.json"
    write_jwks(jwks, [jwk(keys.ed_jwks, "ed-jwks")])
    patch = {"auth": {"jwt": {
        "keys": [
            {"alg": "HS256", "secretEnv": "E2E_JWT_SECRET"},
            {"alg": "RS256", "publicKeyFile": str(directory / "rs.pem")},
            {"alg": "ES256", "publicKeyFile": str(directory / "ec.pem"), "kid": "ec-1"},
            {"alg": "EdDSA", "publicKeyFile": str(directory / "ed.pem")},
        ],
        "jwksFile": str(jwks), "issuer": ISSUER, "audience": [AUDIENCE, "other"], "leewaySeconds": LEEWAY,
    }}}
    instance = SpinServer(server_bin, tmp_path_factory.mktemp("jwt"), config_patch=patch,
                          env={"E2E_JWT_SECRET": SECRET, "SPIN_TOKENS": "static-reader:read"})
    instance.jwks = jwks
    instance.start()
    yield instance
    code = instance.terminate()
    assert code == 0, f"exit code {code} after SIGTERM:\n{instance.log_tail()}"


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def refused(server, token: str, reason: str) -> None:
    assert_error(server.get("/v1/spins", headers=bearer(token)), 401, "unauthorized", message_contains=reason)


@pytest.mark.parametrize("algorithm", ["HS256", "RS256", "ES256", "EdDSA"])
def test_each_algorithm_is_accepted(jwt_server, keys, algorithm):
    key = {"HS256": SECRET, "RS256": keys.rsa, "ES256": keys.ec, "EdDSA": keys.ed}[algorithm]
    headers = {"kid": "ec-1"} if algorithm == "ES256" else None
    token = jwt.encode(claims(), key, algorithm=algorithm, headers=headers)
    response = jwt_server.get("/v1/spins", headers=bearer(token))
    assert response.status_code == 200, response.text
    # The scope claim is the token's scopes: read and write, not admin.
    assert_error(jwt_server.post("/v1/spins/counter/resume", headers=bearer(token)), 403, "forbidden")


def test_a_token_of_the_query_parameter_is_verified_on_streams(jwt_server):
    token = jwt.encode(claims(exp=int(time.time()) - 3600), SECRET, algorithm="HS256")
    response = jwt_server.get(f"/v1/spins/counter/stream?access_token={token}", stream=True,
                            headers={"Accept": "text/event-stream"})
    assert_error(response, 401, "unauthorized", message_contains="expired")


def test_static_tokens_still_work_beside_jwt(jwt_server):
    assert jwt_server.get("/v1/spins", headers=bearer("static-reader")).status_code == 200
    refused(jwt_server, "static-wrong", "the bearer token is not valid")


def test_a_forged_signature_is_refused(jwt_server, keys):
    token = jwt.encode(claims(scope="admin"), ec.generate_private_key(ec.SECP256R1()), algorithm="ES256",
                       headers={"kid": "ec-1"})
    refused(jwt_server, token, "signature does not verify")
    good = jwt.encode(claims(), SECRET, algorithm="HS256").split(".")
    tampered = ".".join([good[0], b64(json.dumps(claims(scope="admin")).encode()), good[2]])
    refused(jwt_server, tampered, "signature does not verify")


def test_alg_none_is_refused(jwt_server):
    refused(jwt_server, hand_made({"alg": "none", "typ": "JWT"}, claims(scope="admin"), None), "unsigned")


def test_an_rs256_public_key_used_as_an_hs256_secret_is_refused(jwt_server, keys):
    token = hand_made({"alg": "HS256", "typ": "JWT"}, claims(scope="admin"), public_pem(keys.rsa))
    refused(jwt_server, token, "signature does not verify")


def test_expiry_and_not_before_allow_the_leeway_and_no_more(jwt_server):
    now = int(time.time())
    refused(jwt_server, jwt.encode(claims(exp=now - LEEWAY - 60), SECRET, algorithm="HS256"), "expired at")
    refused(jwt_server, jwt.encode(claims(nbf=now + LEEWAY + 60), SECRET, algorithm="HS256"), "not valid before")
    within = jwt.encode(claims(exp=now - LEEWAY // 3, nbf=now + LEEWAY // 3), SECRET, algorithm="HS256")
    assert jwt_server.get("/v1/spins", headers=bearer(within)).status_code == 200


def test_wrong_issuer_and_audience_are_refused(jwt_server):
    refused(jwt_server, jwt.encode(claims(iss="https://evil.test"), SECRET, algorithm="HS256"),
            'issuer (iss) "https://evil.test"')
    refused(jwt_server, jwt.encode(claims(aud="billing"), SECRET, algorithm="HS256"), 'audience (aud) "billing"')
    refused(jwt_server, jwt.encode(claims(aud=None), SECRET, algorithm="HS256"), "no audience")
    assert jwt_server.get("/v1/spins", headers=bearer(
        jwt.encode(claims(aud=["billing", "other"]), SECRET, algorithm="HS256"))).status_code == 200


def test_an_oversized_token_is_refused(jwt_server):
    token = jwt.encode(claims(padding="x" * 9000), SECRET, algorithm="HS256")
    refused(jwt_server, token, "more than the 8192 accepted")


@pytest.mark.parametrize("token,reason", [
    ("eyJhbGciOiJIUzI1NiJ9.e30.!!!", "not base64url"),
    ("eyJub3QganNvbg.e30.c2ln", "header is not a JSON object"),
    ("eyJ0eXAiOiJKV1QifQ.e30.c2ln", 'no "alg"'),
])
def test_a_malformed_token_is_refused(jwt_server, token, reason):
    refused(jwt_server, token, reason)


def test_a_claim_of_the_wrong_shape_is_malformed(jwt_server):
    token = jwt.encode(claims(spin=["counter"]), SECRET, algorithm="HS256")
    refused(jwt_server, token, 'the claim "spin" must be an object')


def test_an_unknown_kid_is_refused(jwt_server, keys):
    token = jwt.encode(claims(), keys.ec, algorithm="ES256", headers={"kid": "ec-9"})
    refused(jwt_server, token, 'key id (kid) "ec-9"')


def test_a_replaced_jwks_file_takes_a_new_key_without_a_restart(jwt_server, keys):
    token = jwt.encode(claims(), keys.ec_rotated, algorithm="ES256", headers={"kid": "ec-rotated"})
    refused(jwt_server, token, 'key id (kid) "ec-rotated"')
    write_jwks(jwt_server.jwks, [jwk(keys.ed_jwks, "ed-jwks"), jwk(keys.ec_rotated, "ec-rotated")])
    deadline = time.monotonic() + 5
    while jwt_server.get("/v1/spins", headers=bearer(token)).status_code != 200:
        assert time.monotonic() < deadline, f"the new key was not taken within 5 s:\n{jwt_server.log_tail()}"
        time.sleep(0.2)
    # A broken file keeps the keys in use.
    jwt_server.jwks.write_text('{"keys": [')
    time.sleep(1.5)
    assert jwt_server.get("/v1/spins", headers=bearer(token)).status_code == 200
    assert "JWT keys not reloaded" in jwt_server.log()


def test_sighup_reloads_the_jwks(jwt_server, keys):
    token = jwt.encode(claims(), keys.ed_jwks, algorithm="EdDSA", headers={"kid": "ed-jwks"})
    write_jwks(jwt_server.jwks, [])  # no usable key: refused, the keys in use stay
    jwt_server.process.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    assert jwt_server.get("/v1/spins", headers=bearer(token)).status_code == 200
    rotated = ed25519.Ed25519PrivateKey.generate()
    # Written in place: the same inode; SIGHUP does not wait for the change check.
    jwt_server.jwks.write_text(json.dumps({"keys": [jwk(rotated, "ed-jwks")]}))
    jwt_server.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 5
    new_token = jwt.encode(claims(), rotated, algorithm="EdDSA", headers={"kid": "ed-jwks"})
    while jwt_server.get("/v1/spins", headers=bearer(new_token)).status_code != 200:
        assert time.monotonic() < deadline, jwt_server.log_tail()
        time.sleep(0.1)
    refused(jwt_server, token, "signature does not verify")
    assert jwt_server.process.poll() is None, "SIGHUP ended the server"
    assert "SIGHUP: reloading the JWT keys" in jwt_server.log()


def test_a_bad_jwt_config_stops_check_config_with_64(server_bin, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"auth": {"jwt": {"keys": [{"alg": "RS256", "publicKeyFile": "missing.pem"}]}}}))
    import subprocess
    result = subprocess.run([str(server_bin), "--config", str(config), "--check-config"], capture_output=True,
                            text=True, timeout=30, env={"PATH": os.environ.get("PATH", "")})
    assert result.returncode == 64, result
    assert "auth.jwt.keys[0].publicKeyFile" in result.stderr
    assert "missing.pem" in result.stderr
