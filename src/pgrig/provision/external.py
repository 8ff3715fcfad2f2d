"""External servers: registering a server pgrig does not manage (`env add`)."""

from __future__ import annotations

import contextlib

from pgrig import paths
from pgrig.errors import PgrigError, first_line
from pgrig.format import pgrig_command
from pgrig.provision.cluster import now_text
from pgrig.provision.server import binaries
from pgrig.provision.state.environment import (
    Environment,
    check_new_name,
    incomplete_message,
    mask_dsn,
    strip_password,
)


def add_external(name: str, dsn: str) -> Environment:
    """Register a server pgrig does not manage; it must be reachable now. No password stored."""
    check_new_name(name)
    if (paths.envs_dir() / name / "env.json").exists():
        raise PgrigError(
            f"environment {name!r} already exists (see `{pgrig_command('env', 'show', name)}`)"
        )
    if (paths.envs_dir() / name).exists():
        raise PgrigError(incomplete_message(name))
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as e:
        raise PgrigError(f"invalid DSN {mask_dsn(dsn)}: {str(e).strip()}") from None
    params.setdefault("connect_timeout", 5)
    try:
        with psycopg.connect(make_conninfo("", **params)) as conn:
            row = conn.execute("show server_version").fetchone()
            version = str(row[0] if row else "").split()[0]
            info = conn.info
            host, port, user = info.host, info.port, info.user
    except psycopg.Error as e:
        raise PgrigError(f"cannot connect to {mask_dsn(dsn)}: {mask_dsn(first_line(e))}") from None
    major = binaries.major_of(version)
    bindir = None
    with contextlib.suppress(PgrigError):  # same-major client programs (pgbench) if present
        bindir = str(binaries.find_bindir(major)[0])
    env = Environment(
        name=name,
        kind="external",
        major=major,
        version=version,
        bindir=bindir,
        host=host or "127.0.0.1",
        port=port,
        user=user or "postgres",
        dsn=strip_password(dsn),
        created_at=now_text(),
    )
    env.save()
    return env
