"""A managed server that other hosts reach: `env create --listen ADDRESS`.

The server then also listens on ADDRESS, and pg_hba.conf gets one line after initdb's
`trust` lines for 127.0.0.1 and the socket: `host all all all scram-sha-256`. The superuser's
password is set from a SCRAM verifier (scram_verifier(password) computes one): the control
machine generates the password, keeps it in a 0600 libpq passfile and sends only the verifier,
which is kept in <env dir>/scram-verifier (0600) so that `env repair` can set it again. The
password itself is never in argv, logs, env.json or the archive.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import os
import re
import secrets
from pathlib import Path

from pgrig.errors import PgrigError
from pgrig.provision.state.environment import Environment

HBA_LINE = "host all all all scram-sha-256  # pgrig: --listen (load from other hosts)"
_VERIFIER = re.compile(r"^SCRAM-SHA-256\$\d+:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$")
VERIFIER_FILE = "scram-verifier"


def check_address(listen: str) -> None:
    try:
        ipaddress.ip_address(listen)
    except ValueError:
        raise PgrigError(f"--listen {listen!r}: expected an IP address of this host") from None


def check_listen(listen: str, verifier: str | None) -> None:
    check_address(listen)
    if verifier is None or not _VERIFIER.match(verifier):
        raise PgrigError("--listen needs a SCRAM-SHA-256 verifier on stdin (--password-stdin)")


def generate_password() -> str:
    return secrets.token_urlsafe(24)


def scram_verifier(password: str, iterations: int = 4096) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL stores for `password` (RFC 5802/7677)."""
    salt = secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()

    def b64(b: bytes) -> str:
        return base64.b64encode(b).decode()

    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


def _verifier_file(env: Environment) -> Path:
    return env.dir / VERIFIER_FILE


def save_verifier(env: Environment, verifier: str) -> None:
    f = _verifier_file(env)
    f.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(verifier + "\n")


def write_hba(env: Environment) -> None:
    """Allow scram-sha-256 logins from other hosts (after initdb's trust lines for 127.0.0.1)."""
    if not env.listen:
        return
    hba = env.datadir / "pg_hba.conf"
    text = hba.read_text()
    if HBA_LINE not in text:
        with open(hba, "a") as out:
            out.write(("" if text.endswith("\n") else "\n") + HBA_LINE + "\n")


def set_password(env: Environment) -> None:
    """The superuser's password from the saved verifier (nothing when there is none)."""
    f = _verifier_file(env)
    if not env.listen or not f.exists():
        return
    verifier = f.read_text().strip()
    import psycopg
    from psycopg import sql

    with psycopg.connect(env.conninfo("postgres"), autocommit=True) as conn:
        conn.execute("SET synchronous_commit = local")  # a re-created synchronous primary's
        conn.execute(  # standbys are not back yet (env repair): its commits must not wait
            sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                sql.Identifier(env.user), sql.Literal(verifier)
            )
        )


def write_passfile(path: Path, host: str, port: int, user: str, password: str) -> None:
    """A libpq passfile (0600) for host:port, any database, `user`."""

    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace(":", "\\:")

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(f"{esc(host)}:{port}:*:{esc(user)}:{esc(password)}\n")


def add_passfile_line(path: Path, host: str, port: int, user: str, password: str) -> None:
    """One more host:port in a passfile written by write_passfile (a replica's server)."""

    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace(":", "\\:")

    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    with os.fdopen(fd, "a") as out:
        out.write(f"{esc(host)}:{port}:*:{esc(user)}:{esc(password)}\n")
