"""Before a run records its server: the live server must be what the record will say.

A run records the settings layers (env.json, the run layer) and where the server runs (pinned
or not). A server can differ from them: pgrig.conf rewritten but not re-read, values of an
older pgrig.conf still live, a restart pending, backends still pinned by a killed run. Each
check here names such a difference; `ensure` restores the expected state once (rewrite,
reload or restart, re-pin) and refuses the run if the difference remains: never misrecord.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.provision.server import affinity, server_settings
from pgrig.provision.settings import config, insights_layer
from pgrig.provision.state.environment import Environment


def settings_drift(env: Environment, run: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(problems, names to re-apply): how the live server differs from `env`'s layers plus
    the run layer `run` (empty lists: it does not)."""
    import psycopg

    ls = config.layers(env, run)
    conf = env.datadir / config.CONF_NAME
    problems: list[str] = []
    try:
        if conf.read_text() != config.render(ls):
            problems.append(f"{config.CONF_NAME} differs from the environment's layers")
        mtime = conf.stat().st_mtime
    except OSError:
        return [f"{config.CONF_NAME} is missing"], []
    with psycopg.connect(env.conninfo("postgres"), autocommit=True) as conn:
        row = conn.execute("SELECT extract(epoch FROM pg_conf_load_time())").fetchone()
        rows = conn.execute(
            "SELECT name, sourcefile, pending_restart FROM pg_settings "
            "WHERE sourcefile IS NOT NULL OR pending_restart"
        ).fetchall()
    if row is None or float(row[0]) < mtime:
        problems.append(f"the server has not re-read {config.CONF_NAME} since it changed")
    from_conf = {name for name, src, _ in rows if src and Path(src).name == config.CONF_NAME}
    stale = sorted(from_conf - set(ls.merged()))
    if stale:
        problems.append(f"live values the layers do not set: {', '.join(stale)}")
    pending = sorted(name for name, _, waiting in rows if waiting and not _own_restart(ls, name))
    if pending:
        problems.append(f"changes waiting for a restart: {', '.join(pending)}")
    return problems, stale + pending


def _own_restart(ls: config.Layers, name: str) -> bool:
    """The insights layer's libraries wait for a restart the user decides on (the run records
    "not loaded yet: restart the environment", insights/collector.py): not a difference."""
    merged = ls.merged().get(name)
    return name == insights_layer.PRELOAD and merged is not None and merged[1] == "insights"


def affinity_drift(roots: list[int], expected: set[int], exact: bool) -> list[int]:
    """Threads of the trees of `roots` whose CPU mask is not `expected` (exact) or does not
    cover it (not exact: an unpinned server may run anywhere pgrig may)."""
    off = []
    for root in roots:
        for tid, mask in affinity.tree_masks(root).items():
            if (mask != expected) if exact else not expected <= mask:
                off.append(tid)
    return off


def ensure_settings(env: Environment, run: Mapping[str, str]) -> list[str]:
    """Restore the configuration the run will record if the live server differs; returns
    what was found and restored. PgrigError when it still differs."""
    from pgrig.provision.settings import auto_conf

    overridden = auto_conf.overrides(env, run)
    if overridden:  # pgrig cannot restore these (the file is the DBA's): refuse, naming it
        raise PgrigError(
            f"the live server of {env.name!r} would not run with the settings this run "
            f"records: {auto_conf.message(overridden)}"
        )
    problems, names = settings_drift(env, run)
    if not problems:
        return []
    server_settings.reapply(env, names, run)
    still, waiting = settings_drift(env, run)
    if still and waiting:  # the reload revealed settings that need a restart
        server_settings.take(env, waiting)
        still, _ = settings_drift(env, run)
    if still:
        raise PgrigError(
            f"the live server of {env.name!r} differs from its recorded settings "
            f"({'; '.join(still)}) and could not be restored: run "
            f"`{pgrig_command('env', 'restart', env.name)}`"
        )
    return [f"server settings restored before the run ({'; '.join(problems)})"]


def ensure_unpinned(env: Environment, roots: list[int]) -> list[str]:
    """An unpinned run: the server (and pooler) trees may use every CPU pgrig may use."""
    usable = set(os.sched_getaffinity(0))
    off = affinity_drift(roots, usable, exact=False)
    if not off:
        return []
    for root in roots:
        affinity.set_tree(root, usable)
    if affinity_drift(roots, usable, exact=False):
        raise PgrigError(
            f"the server of {env.name!r} is pinned to fewer CPUs than this run would record "
            f"and could not be unpinned: run `{pgrig_command('env', 'restart', env.name)}`"
        )
    return [f"CPU pinning of {len(off)} server threads removed before the run"]
