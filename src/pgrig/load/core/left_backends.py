"""The run's own backends left on its servers once its client ended, ended by pgrig.

pgbench's backends go when pgbench goes, except a backend that waits inside the server and
does not look at its client: a commit waiting for synchronous replicas that are gone (IPC:
SyncRep) waits until one returns, holding its row locks, and the next backend waits for those
(Lock:transactionid). Every run names its client's sessions (application_name, PGAPPNAME:
`session_name`), gives them a moment to end on their own after the client ended, then
terminates those still there and records them (extra["backends_ended"]). The name does not
start with "pgrig-": the samplers count these sessions as the workload, as they are.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pgrig.record.documents import BackendEnded

if TYPE_CHECKING:
    import psycopg

    from pgrig.archive.records import RunRecord
    from pgrig.provision.state.environment import Environment
    from pgrig.request import RunRequest

SETTLE_S = 2.0  # a backend whose client just went needs a moment to notice and exit
SYNC_REP = "IPC:SyncRep"


def session_name(engine: str) -> str:
    """The application_name of this pgrig's load client (one run at a time per process)."""
    return f"{engine}-of-pgrig-{os.getpid()}"


def end_left(servers: Iterable[Any], name: str, settle_s: float = SETTLE_S) -> list[BackendEnded]:
    """Terminate the sessions named `name` still on `servers` (Environment-like: conninfo,
    name) after settle_s for them to end on their own; what was ended. A server that cannot
    be reached is skipped (its backends, if any, went with it or wait for it)."""
    import psycopg

    out: list[BackendEnded] = []
    for server in servers:
        with (
            contextlib.suppress(psycopg.Error),
            psycopg.connect(
                server.conninfo("postgres"), autocommit=True, application_name="pgrig-cleanup"
            ) as conn,
        ):
            out += _end_on(conn, str(server.name), name, settle_s)
    return out


def end_left_backends(
    rec: RunRecord, env: Environment, spec: RunRequest, name: str | None, engine: str
) -> list[BackendEnded]:
    """The client's backends still on the run's servers once it ended (a commit waiting for
    synchronous replicas that are gone, and those waiting for its locks): terminated, kept in
    extra["backends_ended"] and said in a warning. Through a pooler the server's sessions
    are the pooler's: left to it."""
    from pgrig.load.core import topology

    if not name or spec.via != "direct":
        return []
    ended = end_left(topology.targets(env, spec.target_role), name)
    if ended:
        rec.extra["backends_ended"] = ended
        rec.add_warning(
            "backends_ended",
            f"the run's backends were still on the server after {engine} ended, and were "
            f"terminated: {describe(ended)}",
        )
    return ended


def _end_on(
    conn: psycopg.Connection, server: str, name: str, settle_s: float
) -> list[BackendEnded]:
    query = (
        "SELECT pid, state, wait_event_type || ':' || wait_event, "
        "extract(epoch FROM now() - query_start)::float8 FROM pg_stat_activity "
        "WHERE application_name = %s AND pid <> pg_backend_pid()"
    )
    deadline = time.monotonic() + settle_s
    rows = conn.execute(query, (name,)).fetchall()
    while rows and time.monotonic() < deadline:
        time.sleep(0.2)
        rows = conn.execute(query, (name,)).fetchall()
    ended: list[BackendEnded] = []
    for pid, state, wait, seconds in rows:
        done = conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()
        if done and done[0]:
            ended.append(
                {"server": server, "pid": int(pid), "state": state, "wait": wait,
                 "query_seconds": round(float(seconds), 1) if seconds is not None else None}
            )  # fmt: skip
    return ended


def describe(ended: list[BackendEnded]) -> str:
    """'2 backends on lab (1 waiting in IPC:SyncRep: a synchronous commit with no
    synchronous replica answering; 1 in Lock:transactionid)'."""
    by_server: dict[str, list[BackendEnded]] = {}
    for b in ended:
        by_server.setdefault(str(b.get("server")), []).append(b)
    parts = []
    for server, items in by_server.items():
        waits: dict[str, int] = {}
        for b in items:
            key = str(b.get("wait") or b.get("state") or "running")
            waits[key] = waits.get(key, 0) + 1
        said = []
        for wait, n in waits.items():
            text = f"{n} in {wait}"
            if wait == SYNC_REP:
                text += " (a synchronous commit with no synchronous replica answering)"
            said.append(text)
        s = "s" if len(items) != 1 else ""
        parts.append(f"{len(items)} backend{s} on {server} ({'; '.join(said)})")
    return ", ".join(parts)


def waited_for_replicas(ended: list[BackendEnded]) -> bool:
    return any(b.get("wait") == SYNC_REP for b in ended)
