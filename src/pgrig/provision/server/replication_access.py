"""A primary that streams to replicas on other hosts (`env create --replica-on HOST`).

The control machine asks the primary's pgrig to allow one replica at a time
(`pgrig env replication NAME allow rN --address ADDRESS`, a SCRAM verifier on stdin):

- one role for every replica of the environment, `pgrig_replication` (LOGIN REPLICATION, no
  other privilege), its password set from the verifier: the password itself never reaches the
  primary's host;
- one pg_hba.conf line per replica host, `host replication pgrig_replication ADDRESS/32
  scram-sha-256`: replication connections from that address only, never from "all";
- a physical replication slot `pgrig_rN` made now, so the primary keeps the WAL the replica
  needs from the moment its clone starts;
- the replica in env.json's `standbys` (synchronous_standby_names and `env show` name it).

`forget` undoes all of it (the slot dropped, its walsender ended first; the line removed; the
role dropped with the last replica). Destroying the primary removes everything with it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
from typing import TYPE_CHECKING, Any

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.provision.server import postmaster, replicas
from pgrig.provision.state.environment import Environment

if TYPE_CHECKING:
    import psycopg

ROLE = "pgrig_replication"
_HBA_MARK = "# pgrig: replica "
_REPLICA_NAME = re.compile(r"^r[1-9][0-9]?$")


def hba_line(name: str, address: str) -> str:
    ip = ipaddress.ip_address(address)
    bits = 32 if ip.version == 4 else 128
    return f"host replication {ROLE} {ip}/{bits} scram-sha-256  {_HBA_MARK}{name}"


def _check(env: Environment, name: str, address: str, renewing: bool = False) -> None:
    if not env.managed or env.member_dir:
        raise PgrigError(f"{env.name} is not a primary pgrig manages here")
    if env.standby_of:
        raise PgrigError(f"{env.name} is itself a replica: replicas stream from the primary")
    if not _REPLICA_NAME.match(name):
        raise PgrigError(f"replica name {name!r}: expected r1, r2, ...")
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise PgrigError(f"--address {address!r}: expected the replica host's IP address") from None
    if name in replicas.replica_names(env):
        raise PgrigError(f"{env.name} already has a replica {name} on this host")
    known = [str(s["name"]) for s in env.standbys]
    if name in known and not renewing:
        raise PgrigError(f"{env.name} already has a replica {name}")
    mine = [s for s in env.standbys if s["name"] == name and s.get("host") != address]
    if renewing and mine:
        raise PgrigError(f"{env.name}: replica {name} is at {mine[0].get('host')}, not {address}")
    if not env.listen:
        raise PgrigError(
            f"{env.name} listens on 127.0.0.1 only: replicas on other hosts need an "
            "environment created with --on HOST (or --listen)"
        )
    if not postmaster.is_running(env):
        raise PgrigError(f"{env.name} is not running (`{pgrig_command('env', 'start', env.name)}`)")


def allow(env: Environment, name: str, address: str, verifier: str) -> dict[str, Any]:
    """Let replica `name` at `address` stream from `env`; what its clone connects to."""
    from pgrig.provision.server import remote_access

    _check(env, name, address)
    remote_access.check_listen(address, verifier)  # an IP address and a SCRAM verifier
    replicas.check_capacity(env, 1)
    slot = f"{replicas.SLOT_PREFIX}{name}"
    _set_role(env, verifier)
    _add_hba(env, hba_line(name, address))
    try:
        postmaster.reload(env)
        _create_slot(env, slot)
    except BaseException:
        _remove_hba(env, name)
        with contextlib.suppress(PgrigError):
            postmaster.reload(env)
        raise
    env.standbys.append({"name": name, "host": address, "slot": slot})
    env.save()
    return {"name": name, "slot": slot, "user": ROLE, "host": env.listen, "port": env.port}


def renew(env: Environment, name: str, address: str, verifier: str | None) -> dict[str, Any]:
    """A replica allowed before, being cloned again (`env repair` from the control machine):
    its slot dropped (its walsender ended first) and made afresh, its pg_hba line there. With
    `verifier`, the role's password is set anew too: a primary whose data directory was
    re-created lost the role and the lines, and the replicas get that new password."""
    from pgrig.provision.server import remote_access

    _check(env, name, address, renewing=True)
    if verifier is not None:
        remote_access.check_listen(address, verifier)  # an IP address and a SCRAM verifier
        _set_role(env, verifier)
    elif not _role_exists(env):
        raise PgrigError(
            f"{env.name} has no role {ROLE} (its data directory was re-created?): a new "
            "replication password is needed; `pgrig env repair` from the control machine "
            "sends one"
        )
    slot = f"{replicas.SLOT_PREFIX}{name}"
    _add_hba(env, hba_line(name, address))
    postmaster.reload(env)
    _drop_slot(env, slot)
    _create_slot(env, slot)
    if name not in [str(s["name"]) for s in env.standbys]:
        env.standbys.append({"name": name, "host": address, "slot": slot})
        env.save()
    return {"name": name, "slot": slot, "user": ROLE, "host": env.listen, "port": env.port}


def forget(env: Environment, name: str) -> bool:
    """Undo `allow` for replica `name` (False: it was not known)."""
    known = [s for s in env.standbys if s["name"] == name]
    env.standbys = [s for s in env.standbys if s["name"] != name]
    if postmaster.is_running(env):
        _drop_slot(env, f"{replicas.SLOT_PREFIX}{name}")
    _remove_hba(env, name)
    if not env.standbys and postmaster.is_running(env):
        _drop_role(env)
    if not env.standbys and not env.replicas:
        env.sync = "off"
    env.save()
    from pgrig.provision.server import server_settings

    server_settings.reapply(env, [])  # synchronous_standby_names without it
    return bool(known)


# --- SQL and pg_hba.conf -----------------------------------------------------------------------


def _connect(env: Environment) -> psycopg.Connection:
    import psycopg

    conn = psycopg.connect(env.conninfo("postgres"), autocommit=True)
    # a synchronous primary whose standbys are away must not wait for them to commit this
    conn.execute("SET synchronous_commit = local")
    return conn


def _role_exists(env: Environment) -> bool:
    with _connect(env) as conn:
        return (
            conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLE,)).fetchone()
            is not None
        )


def _set_role(env: Environment, verifier: str) -> None:
    from psycopg import sql

    with _connect(env) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLE,)).fetchone()
        verb = "ALTER" if exists else "CREATE"
        conn.execute(
            sql.SQL(verb + " ROLE {} WITH LOGIN REPLICATION PASSWORD {}").format(
                sql.Identifier(ROLE), sql.Literal(verifier)
            )
        )


def _drop_role(env: Environment) -> None:
    import psycopg
    from psycopg import sql

    with contextlib.suppress(psycopg.Error), _connect(env) as conn:
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(ROLE)))


def _create_slot(env: Environment, slot: str) -> None:
    with _connect(env) as conn:
        found = conn.execute(
            "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (slot,)
        ).fetchone()
        if not found:
            conn.execute("SELECT pg_create_physical_replication_slot(%s, true)", (slot,))


def _drop_slot(env: Environment, slot: str) -> None:
    """Drop the slot, ending the walsender that holds it first (a cut-off replica's)."""
    import psycopg

    with contextlib.suppress(psycopg.Error), _connect(env) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
            "WHERE slot_name = %s AND active_pid IS NOT NULL",
            (slot,),
        )
        for _ in range(50):
            row = conn.execute(
                "SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)
            ).fetchone()
            if row is None:
                return
            if not row[0]:
                conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                return
            import time

            time.sleep(0.1)


def _hba(env: Environment) -> list[str]:
    return (env.datadir / "pg_hba.conf").read_text().splitlines()


def _write_hba(env: Environment, lines: list[str]) -> None:
    # in place: the server user keeps owning the file
    (env.datadir / "pg_hba.conf").write_text("\n".join(lines) + "\n")


def _add_hba(env: Environment, line: str) -> None:
    lines = _hba(env)
    if line not in lines:
        _write_hba(env, [*lines, line])


def _remove_hba(env: Environment, name: str) -> None:
    lines = _hba(env)
    kept = [ln for ln in lines if not ln.rstrip().endswith(f"{_HBA_MARK}{name}")]
    if kept != lines:
        _write_hba(env, kept)


ACTIONS = ("allow", "renew", "forget")


def check_action(action: str, address: str | None) -> None:
    """`env replication NAME ACTION`: a known action, and allow/renew with the address."""
    if action not in ACTIONS:
        raise PgrigError(f"env replication: expected allow, renew or forget, got {action!r}")
    if action in ("allow", "renew") and address is None:
        raise PgrigError(f"env replication {action} needs --address ADDRESS")


def apply(
    env: Environment, action: str, replica: str, address: str | None, verifier: str
) -> dict[str, Any]:
    """Allow, renew (a new verifier only when the control machine sets a new password) or
    forget `replica` (check_action first)."""
    check_action(action, address)
    if action == "forget":
        return {"name": replica, "forgotten": forget(env, replica)}
    assert address is not None
    if action == "allow":
        return allow(env, replica, address, verifier)
    return renew(env, replica, address, verifier or None)
