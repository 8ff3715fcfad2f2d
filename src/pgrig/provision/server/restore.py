"""Restore an environment's latest backup into a scratch server, timed, and remove it after.

A pg_basebackup chain is rebuilt with pg_combinebackup (full + incrementals; a lone full backup
too, which copies it; before PostgreSQL 17, which has neither pg_combinebackup nor incremental
backups, a lone full backup is copied with `cp -a`), a pgBackRest backup with `pgbackrest
restore` (recovery to consistency, then promotion). The scratch server is a member Environment
in `<env>/scratch/restore-*`: its own free port, pgrig.conf regenerated (so no archiving, no
synchronous standbys), started like any server, and always stopped and deleted by
`scratch_server()`'s exit.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.provision.server import backups, pgbackrest, postmaster, replicas
from pgrig.provision.server.ports import free_port
from pgrig.provision.settings import config
from pgrig.provision.state.environment import Environment
from pgrig.provision.system import osuser
from pgrig.record.documents import BackupDoc


def _scratch(env: Environment) -> Environment:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    m = replicas.member(env, {"name": f"restore-{stamp}", "port": free_port()})
    m.member_dir = str(env.dir / "scratch" / f"restore-{stamp}")
    m.name = f"{env.name}/restore"
    return m


@contextlib.contextmanager
def scratch_server(env: Environment, figures: BackupDoc) -> Iterator[Environment]:
    """Restore the latest backup of `env`, start it, yield it; stop and delete it after.
    `figures` gets backup, chain, restore_s (files) and start_s (recovery until ready)."""
    last = backups.latest(env)
    if last is None:
        raise PgrigError(
            f"{env.name} has no backup to restore: run "
            f"`{pgrig_command('run', env.name, '--workload', 'backup:basebackup-full')}` "
            "(or backup:pgbackrest-full) first"
        )
    m = _scratch(env)
    figures["backup"], figures["tool"] = last.name, last.tool
    figures["scratch"], figures["port"] = str(m.datadir), m.port
    with backups.in_progress(env, m.dir, "restore (scratch server)"):
        yield from _restored(env, m, last, figures)


def _restored(
    env: Environment, m: Environment, last: backups.Backup, figures: BackupDoc
) -> Iterator[Environment]:
    try:
        m.dir.parent.mkdir(parents=True, exist_ok=True)
        m.dir.mkdir()
        osuser.give_to_server(m.dir, 0o755)  # the restoring tool makes data/ in it
        t0 = time.monotonic()
        if last.tool == "basebackup":
            chain = backups.chain(env, last)
            figures["chain"] = [b.name for b in chain]
            figures["restore_method"] = _rebuild(env, m, [Path(b.path) for b in chain])
        else:
            figures["chain"] = [last.name]
            m.datadir.mkdir()
            osuser.give_to_server(m.datadir, 0o700)
            result = backups.run_tool(pgbackrest.restore_command(env, str(last.label), m.datadir))
            if result.returncode != 0:
                raise PgrigError(f"pgbackrest restore failed: {result.last_error()}")
        figures["restore_s"] = round(time.monotonic() - t0, 3)
        for leftover in ("postmaster.pid", "standby.signal"):
            (m.datadir / leftover).unlink(missing_ok=True)
        config.ensure_include(m.datadir)
        config.write_conf(m, run={})
        t1 = time.monotonic()
        postmaster.start(m, timeout=600)
        _wait_promoted(m)
        figures["start_s"] = round(time.monotonic() - t1, 3)
        figures["restore_total_s"] = round(time.monotonic() - t0, 3)
        yield m
    finally:
        replicas.kill(m)
        shutil.rmtree(m.dir, ignore_errors=True)


def _rebuild(env: Environment, m: Environment, chain: list[Path]) -> str:
    """The data directory from a pg_basebackup chain; returns the method used."""
    combine = env.binary("pg_combinebackup")
    if len(chain) == 1 and not Path(combine).exists():  # before 17: a plain copy is the restore
        method, argv = "cp -a", ["cp", "-a", str(chain[0]), str(m.datadir)]
    else:
        method, argv = "pg_combinebackup", [combine, *map(str, chain), "-o", str(m.datadir)]
    result = backups.run_tool(argv)
    if result.returncode != 0:
        error = result.last_error()
        raise PgrigError(f"{method} failed: {error}{backups.space_hint(m.dir, error)}")
    return method


def _wait_promoted(m: Environment, timeout: float = 600) -> None:
    """Until recovery has ended (pgBackRest's restore recovers, then promotes)."""
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(psycopg.Error), psycopg.connect(m.conninfo("postgres")) as conn:
            row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
            if row and not row[0]:
                return
        if time.monotonic() > deadline:
            raise PgrigError(f"the restored server {m.name} was still recovering after {timeout} s")
        time.sleep(0.2)
