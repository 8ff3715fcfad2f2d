"""`env create --listen`: the SCRAM verifier, the passfile, the checks (no server needed)."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import pytest

from pgrig.errors import PgrigError
from pgrig.provision.server import remote_access


def test_verifier_matches_rfc_7677_derivation() -> None:
    v = remote_access.scram_verifier("pencil", iterations=4096)
    head, keys = v.split("$", 1)[1].split("$")
    iterations, salt_b64 = head.split(":")
    stored_b64, server_b64 = keys.split(":")
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", base64.b64decode(salt_b64), 4096)
    client = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    assert base64.b64decode(stored_b64) == hashlib.sha256(client).digest()
    server = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
    assert base64.b64decode(server_b64) == server
    assert iterations == "4096"
    assert "pencil" not in v
    remote_access.check_listen("10.231.0.11", v)


def test_listen_needs_an_address_and_a_verifier() -> None:
    with pytest.raises(PgrigError, match="IP address"):
        remote_access.check_listen("db1; rm", remote_access.scram_verifier("x"))
    with pytest.raises(PgrigError, match="verifier"):
        remote_access.check_listen("10.0.0.1", "plain-password")
    with pytest.raises(PgrigError, match="verifier"):
        remote_access.check_listen("10.0.0.1", None)


def test_passfile_is_private_and_escaped(tmp_path: Path) -> None:
    f = tmp_path / "pgpass"
    remote_access.write_passfile(f, "10.0.0.1", 5432, "postgres", "a:b\\c")
    assert f.stat().st_mode & 0o777 == 0o600
    assert f.read_text() == "10.0.0.1:5432:*:postgres:a\\:b\\\\c\n"
