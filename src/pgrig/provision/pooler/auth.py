"""Who may use the pool: the pool role, SCRAM verifiers, the auth file and the passfile.

Authentication is scram-sha-256. `credentials` generates a password for a dedicated role
(pgrig_pool, reading and writing all data), sets it on the server as a SCRAM verifier computed
here (the password itself never reaches the server or its logs), and builds the auth file from
pg_authid.rolpassword, as seed 003 did from pg_shadow. A stats user (pgrig_stats, known to
pgbouncer only) reads SHOW STATS/POOLS. Passwords are never printed or stored in env.json;
clients get them through PGPASSFILE, never on a command line.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

from pgrig import safe_write
from pgrig.errors import PgrigError, first_line
from pgrig.provision.pooler import layout
from pgrig.provision.pooler.config import PoolerConfig
from pgrig.provision.state.environment import Environment
from pgrig.provision.system import osuser

# SCRAM iterations slow down guessing a weak password from a stolen verifier. The generated
# passwords are 192-bit random, so iterations add no safety, only client CPU at every login:
# with PostgreSQL's 4096, 1,000 pgbench clients took over 10 s to log in on a 2-core machine.
SCRAM_ITERATIONS = 64


def scram_verifier(
    password: str, salt: bytes | None = None, iterations: int = SCRAM_ITERATIONS
) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL would store for `password` (RFC 5802/7677).

    ASCII passwords only (the generated ones are), so SASLprep leaves them unchanged.
    """
    salt = salt if salt is not None else os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()

    def b64(b: bytes) -> str:
        return base64.b64encode(b).decode()

    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


def _new_password() -> str:
    return secrets.token_urlsafe(24)  # [A-Za-z0-9_-]: nothing to escape in pgpass or userlist


def write_private(path: Path, text: str, *, owner_server: bool) -> None:
    """Write a 0600 file atomically; it is never readable by others, not even for a moment."""

    def chown(tmp: Path) -> None:
        if owner_server and osuser.is_root():
            u = osuser.server_user()
            os.chown(tmp, u.uid, u.gid)

    safe_write.write_text(path, text, mode=0o600, prepare=chown)


def set_role(env: Environment, cfg: PoolerConfig, verifier: str) -> str:
    """Create (or alter) the pool role with `verifier` as its password; return the verifier the
    server stored (pgbouncer's auth file must hold exactly that: same salt and iterations, so
    that it can log in to the server with the client's SCRAM keys)."""
    import psycopg
    from psycopg import sql

    role = sql.Identifier(cfg.user)
    try:
        with psycopg.connect(env.conninfo("postgres"), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (cfg.user,))
            verb = "ALTER" if exists.fetchone() else "CREATE"
            conn.execute(
                sql.SQL("{} ROLE {} LOGIN PASSWORD {}").format(
                    sql.SQL(verb), role, sql.Literal(verifier)
                )
            )
            if (env.major or 0) >= 14:
                conn.execute(
                    sql.SQL("GRANT pg_read_all_data, pg_write_all_data TO {}").format(role)
                )
            else:  # no predefined data roles before 14
                conn.execute(sql.SQL("ALTER ROLE {} SUPERUSER").format(role))
            row = conn.execute(
                "SELECT rolpassword FROM pg_authid WHERE rolname = %s", (cfg.user,)
            ).fetchone()
    except psycopg.Error as e:
        first = first_line(e)
        raise PgrigError(f"cannot create the pooler role on {env.name!r}: {first}") from None
    if not row or not str(row[0]).startswith("SCRAM-SHA-256$"):
        raise PgrigError(f"the server of {env.name!r} did not store a SCRAM verifier for the role")
    return str(row[0])


def write_auth_file(env: Environment, cfg: PoolerConfig, pool: str, stats: str) -> None:
    """pgbouncer's auth file: the pool role's verifier (as the server stores it) and the stats
    user's (known to pgbouncer only)."""
    layout.make_dir(env)
    lines = [
        f'"{cfg.user}" "{pool}"',  # from pg_authid, as seed 003 built it from pg_shadow
        f'"{cfg.stats_user}" "{stats}"',
    ]
    write_private(layout.auth_file(env), "\n".join(lines) + "\n", owner_server=True)


def passfile_text(cfg: PoolerConfig, pool_pw: str, stats_pw: str, host: str = "*") -> str:
    """The clients' libpq passfile: the stats user for the console, the pool role elsewhere."""
    return f"{host}:*:pgbouncer:{cfg.stats_user}:{stats_pw}\n{host}:*:*:{cfg.user}:{pool_pw}\n"


def new_passwords() -> tuple[str, str]:
    """Fresh passwords of the pool role and of the stats user."""
    return _new_password(), _new_password()


def credentials(env: Environment, cfg: PoolerConfig) -> None:
    """(Re)create the pool role with a fresh password; write the auth file and the passfile."""
    pool_pw, stats_pw = new_passwords()
    stored = set_role(env, cfg, scram_verifier(pool_pw))
    write_auth_file(env, cfg, stored, scram_verifier(stats_pw))
    write_private(layout.passfile(env), passfile_text(cfg, pool_pw, stats_pw), owner_server=False)


def check_verifier(text: str) -> str:
    """A SCRAM-SHA-256 verifier received on stdin (never a password), or a clear error."""
    v = text.strip()
    if not re.fullmatch(r"SCRAM-SHA-256\$\d+:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+", v):
        raise PgrigError("expected SCRAM-SHA-256 verifiers on stdin (one per line: pool, stats)")
    return v


def parse_verifiers(text: str) -> tuple[str, str]:
    """The pool role's and the stats user's verifiers, one a line (`--verifiers-stdin`)."""
    lines = text.splitlines()
    if len(lines) < 2:
        raise PgrigError("--verifiers-stdin: expected two SCRAM-SHA-256 verifiers on stdin")
    return check_verifier(lines[0]), check_verifier(lines[1])


def drop_role(env: Environment, cfg: PoolerConfig) -> None:
    import psycopg
    from psycopg import sql

    role = sql.Identifier(cfg.user)
    with (
        contextlib.suppress(psycopg.Error),
        psycopg.connect(env.conninfo("postgres"), autocommit=True) as conn,
    ):
        try:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(role))
        except psycopg.Error:  # it owns something: at least it can no longer log in
            conn.execute(sql.SQL("ALTER ROLE {} NOLOGIN PASSWORD NULL").format(role))
