"""Streaming replicas of a managed environment, on this machine.

Each replica is a member server: its own directory `<env>/replicas/rN/` (data, run, server.log),
its own port, the same OS user and binaries as the primary. It is cloned with
`pg_basebackup -R -C -S pgrig_rN` (standby.signal, primary_conninfo with application_name=rN,
a physical replication slot on the primary), gets the primary's settings layers in its own
pgrig.conf (same max_connections & co, which a hot standby requires) and is started by pg_ctl
like the primary (provision/postmaster.py). The environment records the replicas in env.json
(`replicas`, `sync`); synchronous replication is pgrig's topology layer
(provision/topology_layer.py).
"""

from __future__ import annotations

import contextlib
import shutil
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pgrig.errors import PgrigError
from pgrig.provision.server import postmaster, server_settings
from pgrig.provision.server.ports import free_port
from pgrig.provision.server.standby import base_backup, plain_conninfo
from pgrig.provision.settings import config
from pgrig.provision.state.environment import Environment
from pgrig.provision.system import osuser

if TYPE_CHECKING:
    import psycopg

Progress = Callable[[str], None]
SLOT_PREFIX = "pgrig_"


# --- members -----------------------------------------------------------------------------------


def member(env: Environment, rep: dict[str, Any]) -> Environment:
    """The in-memory Environment of one replica (never saved: env.json holds the list)."""
    return Environment(
        name=f"{env.name}/{rep['name']}",
        kind="managed",
        major=env.major,
        version=env.version,
        bindir=env.bindir,
        host=env.host,
        port=int(rep["port"]),
        user=env.user,
        os_user=env.os_user,
        profile=env.profile,
        profile_settings=dict(env.profile_settings),
        settings=dict(env.settings),
        insights=env.insights,
        member_dir=str(env.dir / "replicas" / str(rep["name"])),
        listen=env.listen,  # reached like its primary (the pg_hba.conf it cloned allows it)
    )


def members(env: Environment) -> list[Environment]:
    return [member(env, rep) for rep in env.replicas]


def replica_names(env: Environment) -> list[str]:
    return [str(r["name"]) for r in env.replicas]


def all_names(env: Environment) -> list[str]:
    """Every replica streaming from `env`: its own here, then those on other hosts
    (provision/replication_access.py)."""
    return replica_names(env) + [str(s["name"]) for s in env.standbys]


def find(env: Environment, name: str) -> Environment:
    for rep in env.replicas:
        if rep["name"] == name:
            return member(env, rep)
    known = ", ".join(replica_names(env)) or "none"
    raise PgrigError(f"environment {env.name!r} has no replica {name!r} (replicas: {known})")


# --- create ------------------------------------------------------------------------------------


def add(env: Environment, count: int, say: Progress) -> None:
    """Clone `count` replicas from the running primary and start them; env.json is saved after
    each one, so a failure leaves only complete replicas recorded (the caller removes all)."""
    check_capacity(env, count)
    taken = [int(env.port or 0), *(int(r["port"]) for r in env.replicas)]
    for _ in range(count):
        index = 1 + max((int(str(r["name"])[1:]) for r in env.replicas), default=0)
        name = f"r{index}"
        port = free_port(exclude=taken)
        rep: dict[str, Any] = {"name": name, "port": port, "slot": f"{SLOT_PREFIX}{name}"}
        taken.append(port)
        say(f"replica {name}: pg_basebackup from the primary (slot {rep['slot']})")
        clone(env, rep)
        env.replicas.append(rep)
        env.save()
        say(f"replica {name}: streaming on port {rep['port']}")


def check_capacity(env: Environment, count: int) -> None:
    """wal_level and max_wal_senders/max_replication_slots must allow `count` more replicas."""
    ls = config.layers(env).effective()
    if ls.get("wal_level", "replica") == "minimal":
        raise PgrigError("replicas need wal_level = replica or logical (it is set to minimal)")
    wanted = len(all_names(env)) + count + 1  # + one pg_basebackup or pgBackRest connection
    for name in ("max_wal_senders", "max_replication_slots"):
        value = ls.get(name)
        if value is not None and value.isdigit() and int(value) < wanted:
            raise PgrigError(f"{count} replicas need {name} >= {wanted} (it is set to {value})")


def clone(env: Environment, rep: dict[str, Any]) -> None:
    """pg_basebackup of the primary into the replica's data directory, then start it."""
    m = member(env, rep)
    _drop_slot(env, str(rep["slot"]))  # left by an interrupted clone
    shutil.rmtree(m.dir, ignore_errors=True)
    m.dir.mkdir(parents=True)
    m.dir.parent.chmod(0o755)
    m.dir.chmod(0o755)
    m.datadir.mkdir()
    osuser.give_to_server(m.datadir, 0o700)
    from psycopg.conninfo import make_conninfo

    source = make_conninfo(
        "", host=env.host, port=env.port, user=env.user, application_name=str(rep["name"])
    )
    failed = base_backup(env, m.datadir, source, str(rep["slot"]), create_slot=True)
    if failed is not None:
        _drop_slot(env, str(rep["slot"]))
        raise PgrigError(f"pg_basebackup for replica {rep['name']} failed: {failed}")
    plain_conninfo(m.datadir, source)
    config.write_conf(m, run={})  # its own port and socket directory, the primary's layers
    postmaster.start(m)


# --- start / stop / remove ---------------------------------------------------------------------


def start_all(env: Environment) -> list[str]:
    """Start every stopped replica (after the primary); the names started."""
    started = []
    for m in members(env):
        if m.datadir.is_dir() and not postmaster.is_running(m):
            server_settings.clear_run_layer(m)
            postmaster.start(m)
            started.append(m.name)
    return started


def stop_all(env: Environment, mode: str = "fast") -> list[str]:
    """Stop every running replica (before the primary, so none reconnects); the names stopped."""
    stopped = []
    for m in members(env):
        if postmaster.is_running(m):
            postmaster.stop(m, mode=mode)
            stopped.append(m.name)
    return stopped


def kill_all(env: Environment) -> None:
    """Stop every replica immediately, whatever it takes (env destroy, failed create)."""
    replicas_dir = env.dir / "replicas"
    names = replica_names(env)
    if replicas_dir.is_dir():  # also directories of a replica not yet recorded
        names += [p.name for p in replicas_dir.iterdir() if p.name not in names]
    for name in names:
        kill(member(env, {"name": name, "port": 0}))


def kill(m: Environment) -> None:
    """Stop one member server immediately (SIGKILL if it does not go), freeing its memory."""
    if postmaster.pid(m) is None:
        return
    try:
        postmaster.stop(m, mode="immediate", timeout=30)
    except PgrigError:
        server = postmaster.daemon(m)
        if server is not None:
            server.signal(signal.SIGKILL)
            server.wait_gone(5.0)
    postmaster.release_crashed_memory(m)


def remove_all(env: Environment) -> None:
    """Stop and delete every replica and its slot (the environment stays, standalone)."""
    kill_all(env)
    for rep in env.replicas:
        _drop_slot(env, str(rep["slot"]))
    shutil.rmtree(env.dir / "replicas", ignore_errors=True)
    env.replicas = []
    env.sync = "off"


def _drop_slot(env: Environment, slot: str) -> None:
    """Drop a replication slot of the primary when it exists and no one uses it."""
    import psycopg

    if not postmaster.is_running(env):
        return
    with (
        contextlib.suppress(psycopg.Error),
        psycopg.connect(env.conninfo("postgres"), autocommit=True) as conn,
    ):
        conn.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            "WHERE slot_name = %s AND NOT active",
            (slot,),
        )


def follow_settings(env: Environment, changed: list[str]) -> None:
    """Give the replicas the primary's new settings (a hot standby needs max_connections & co
    at least as high as the primary's), each the cheapest way its contexts allow."""
    for m in members(env):
        if m.datadir.is_dir():
            server_settings.reapply(m, changed, run={})


# --- sync mode ---------------------------------------------------------------------------------


def set_sync(env: Environment, mode: str) -> str:
    """Change the sync mode (topology layer) and reload the primary; returns the action."""
    from pgrig.request.environment import check_sync

    check_sync(mode)  # the request's rule, in --sync's words
    if mode != "off" and not all_names(env):
        raise PgrigError(f"environment {env.name!r} has no replicas: --sync {mode} needs some")
    old = env.sync

    def switch(env: Environment) -> None:
        env.sync = mode

    try:
        return server_settings.change_layers(env, switch).action
    except server_settings.NotApplied as e:
        raise PgrigError(e.said(f"sync mode stays {old}")) from None


# --- state -------------------------------------------------------------------------------------

REPLICATION_SQL = """
SELECT application_name, state, sync_state,
       pg_wal_lsn_diff(pg_current_wal_lsn(), sent_lsn)::bigint AS sent_lag_bytes,
       pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn)::bigint AS flush_lag_bytes,
       pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint AS replay_lag_bytes,
       extract(epoch FROM write_lag) * 1000 AS write_lag_ms,
       extract(epoch FROM flush_lag) * 1000 AS flush_lag_ms,
       extract(epoch FROM replay_lag) * 1000 AS replay_lag_ms
FROM pg_stat_replication
"""
SLOTS_SQL = """
SELECT slot_name, active,
       pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint AS retained_bytes
FROM pg_replication_slots WHERE slot_type = 'physical'
"""


def replication_rows(conn: psycopg.Connection) -> dict[str, dict[str, Any]]:
    """pg_stat_replication of the primary by application_name (lag in bytes and ms)."""
    cur = conn.execute(REPLICATION_SQL)
    cols = [d.name for d in cur.description or []]
    out = {}
    for row in cur.fetchall():
        doc = dict(zip(cols, row, strict=True))
        for k, v in doc.items():
            if k.endswith("_ms") and v is not None:
                doc[k] = round(float(v), 3)
        out[str(doc.pop("application_name"))] = doc
    return out


def topology(env: Environment) -> list[dict[str, Any]]:
    """Every member (primary first) with its state; replicas with their streaming and lag."""
    import psycopg

    primary_up = postmaster.is_running(env)
    rows: list[dict[str, Any]] = [
        {"role": "primary", "name": env.name, "host": env.listen, "port": env.port,
         "status": "running" if primary_up else "stopped"}
    ]  # fmt: skip
    streaming: dict[str, dict[str, Any]] = {}
    slots: dict[str, dict[str, Any]] = {}
    if primary_up and all_names(env):
        with (
            contextlib.suppress(psycopg.Error),
            psycopg.connect(env.conninfo("postgres"), autocommit=True) as conn,
        ):
            streaming = replication_rows(conn)
            cur = conn.execute(SLOTS_SQL)
            slots = {r[0]: {"active": r[1], "retained_bytes": r[2]} for r in cur.fetchall()}
    for rep in env.replicas:
        m = member(env, rep)
        up = postmaster.is_running(m)
        row: dict[str, Any] = {
            "role": "replica",
            "name": rep["name"],
            "host": env.listen,
            "port": rep["port"],
            "status": "running" if up else "stopped",
            "slot": rep["slot"],
            "datadir": str(m.datadir),
        }
        if rep["slot"] in slots:
            row["slot_active"] = slots[str(rep["slot"])]["active"]
            row["slot_retained_bytes"] = slots[str(rep["slot"])]["retained_bytes"]
        rep_state = streaming.get(str(rep["name"]))
        row["replication"] = rep_state or {"state": "not connected"}
        rows.append(row)
    for standby in env.standbys:  # on another host: what the primary sees of it
        slot = str(standby["slot"])
        status = "streaming" if str(standby["name"]) in streaming else "unknown here"
        row = {"role": "replica", "name": standby["name"], "host": standby["host"],
               "port": standby.get("port"), "slot": slot, "status": status}  # fmt: skip
        if slot in slots:
            row["slot_active"] = slots[slot]["active"]
            row["slot_retained_bytes"] = slots[slot]["retained_bytes"]
        row["replication"] = streaming.get(str(standby["name"])) or {"state": "not connected"}
        rows.append(row)
    return rows
