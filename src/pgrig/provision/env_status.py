"""What an environment is and how it is now: `env show` (describe), `env list` (list_rows),
and the psql to open on it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from typing_extensions import TypedDict

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.provision import study_layer
from pgrig.provision.server import disk_throttle, postmaster, replicas
from pgrig.provision.settings import catalog, config
from pgrig.provision.state.environment import (
    DEFAULT_DATABASE,
    LIBPQ_TARGET_VARS,
    DamagedEnvironment,
    Environment,
    without_libpq_vars,
)
from pgrig.record.documents import DiskLimitDoc
from pgrig.request import disk_limit as disk_limits


class EnvRow(TypedDict):
    """One environment as `env list` shows it (--json too); a damaged one has its name and
    status only."""

    name: str
    kind: str | None
    version: str | None
    port: int | None
    status: str
    profile: str | None
    target: str | None
    disk_limit: str | None


def describe(env: Environment) -> dict[str, Any]:
    """Everything `env show` prints (JSON-safe, no password)."""
    st = _status(env)
    d: dict[str, Any] = {
        "name": env.name,
        "kind": env.kind,
        "version": env.version,
        "major": env.major,
        "status": st,
        "host": env.host,
        "port": env.port,
        "target": env.masked_target(),
        "profile": env.profile,
        "created_at": env.created_at,
        "paths": {"bindir": env.bindir},
    }
    if not env.managed:
        return d
    d["os_user"] = env.os_user
    d["paths"].update(
        dir=str(env.dir),
        datadir=str(env.datadir),
        socket_dir=str(env.socket_dir),
        logfile=str(env.logfile),
        conf=str(env.datadir / config.CONF_NAME),
    )
    ls = config.layers(env)
    from pgrig.provision.settings import auto_conf

    d["auto_conf"] = auto_conf.entries(env)  # ALTER SYSTEM's, read last: over every layer
    defaults: dict[str, str | None] = {}
    try:
        cat = catalog.load_catalog(env.bindir or "", env.version or "")
        if not cat.enriched and st == "running":
            catalog.enrich(env.bindir or "", cat, env.conninfo("postgres"))
        for n in ls.merged():
            s = cat.get(n)
            defaults[n] = None if s is None or s.default is None else s.default_text()
    except PgrigError:
        pass
    d["layers"] = {
        "defaults": defaults,
        "base": ls.base,
        "insights": ls.insights,
        "topology": ls.topology,
        "profile": ls.profile,
        "environment": ls.environment,
        "run": ls.run,
    }
    d["effective"] = {k: {"value": v, "layer": src} for k, (v, src) in ls.merged().items()}
    if env.replicas or env.standbys:
        d["sync"] = env.sync
        d["topology"] = replicas.topology(env)
        d["warnings"] = topology_warnings(env.name, env.sync, d["topology"])
    if env.standby_of:
        d["standby_of"] = dict(env.standby_of)
    d["disk_limit"] = disk_limit_state(env)
    borrowed = study_layer.borrowed(env.name, env.dir)
    if borrowed is not None:
        d["borrowed_by_study"] = borrowed
    return d


def topology_warnings(name: str, sync: str, topology: list[dict[str, Any]]) -> list[str]:
    """What `env show` (text and --json) warns of: a sync mode no replica can answer."""
    streaming = [m for m in topology[1:] if m["replication"].get("state") == "streaming"]
    if sync != "off" and not streaming:
        return [
            f"sync {sync} and no replica is streaming: commits on the primary wait until one is "
            f"(`{pgrig_command('env', 'start', name)}`, or `--sync off`)"
        ]
    return []


def disk_limit_state(env: Environment) -> DiskLimitDoc:
    """The environment's disk limit and what the kernel holds of it now (in_force). The one
    check of it: `env show` prints it, `env repair` (disk_limit_fault) repairs what it finds."""
    if not env.disk_limit and not env.managed:
        return {"limit": {}, "text": "none", "in_force": None}
    try:
        return disk_throttle.in_force(env, postmaster.pid(env))
    except PgrigError as e:  # a damaged record: said, not hidden
        return {
            "limit": dict(env.disk_limit or {}), "text": "?", "in_force": False, "damaged": True,
            "problems": [str(e)],
        }  # fmt: skip


def disk_limit_fault(env: Environment, state: DiskLimitDoc | None = None) -> str | None:
    """What `env show` flags about the disk limit that a repair puts right (None: nothing):
    a damaged record, or a limit a running server is not held to. A stopped server's limit
    is put in force by its next start: not a fault."""
    doc = disk_limit_state(env) if state is None else state
    problems = "; ".join(doc.get("problems") or [])
    if doc.get("damaged"):
        return f"disk limit record damaged: {env.disk_limit!r} ({problems})"
    if doc.get("in_force") is False and postmaster.pid(env) is not None:
        return f"disk limit {doc['text']} NOT in force ({problems})"
    return None


def _status(env: Environment, timeout: float = 2) -> str:
    try:
        env.check_intact()
    except DamagedEnvironment:
        return f"damaged: data directory missing ({pgrig_command('env', 'repair', env.name)})"
    return postmaster.status(env, timeout=timeout)


def list_rows() -> list[EnvRow]:
    """Every environment; a damaged or incomplete one too, its status saying what is wrong."""
    rows: list[EnvRow] = [
        {"name": name, "kind": None, "version": None, "port": None,
         "status": f"damaged: {why}", "profile": None, "target": None, "disk_limit": None}
        for name, why in Environment.damaged().items()
    ]  # fmt: skip
    for env in Environment.all():
        rows.append(
            {
                "name": env.name,
                "kind": env.kind,
                "version": env.version,
                "port": env.port,
                "status": _status(env, timeout=1),
                "profile": env.profile if env.managed or env.kind == "remote" else None,
                "target": env.masked_target(),
                "disk_limit": _limit_text(env),
            }
        )
    return sorted(rows, key=lambda r: str(r["name"]))


def _limit_text(env: Environment) -> str | None:
    if not env.managed:
        return None
    try:
        return disk_limits.describe(disk_throttle.limit_of(env))
    except PgrigError:
        return "damaged"


def psql_invocation(
    env: Environment, dbname: str | None, args: list[str]
) -> tuple[list[str], dict[str, str]]:
    """argv and environment to exec psql of the environment's version against it."""
    db = dbname or (DEFAULT_DATABASE if env.managed else None)
    exe = env.binary("psql")
    if env.managed and not Path(exe).exists():
        raise PgrigError(f"{exe} does not exist")
    if not env.managed and not env.bindir and not shutil.which("psql"):
        raise PgrigError("psql is not installed (install a build with `pgrig pg install`)")
    environ = without_libpq_vars(only=LIBPQ_TARGET_VARS)
    environ.update(env.libpq_env(db))
    return [exe, *args], environ
