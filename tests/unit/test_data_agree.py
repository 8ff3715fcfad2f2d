"""Issue 30, class 6: the data a command works on is the data it names.

- a backup records the datasets it holds, and a restore verifies against those (the
  environment's data may have been regenerated since, or be another scenario);
- an external environment added with `--dsn .../somedb` uses somedb when no --db is given.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pgrig.provision.server import backups
from pgrig.provision.state.environment import DEFAULT_DATABASE, Environment

PGBENCH_1 = {"scenario": "pgbench", "scale": 1, "complete": True}
PGBENCH_2 = {"scenario": "pgbench", "scale": 2, "complete": True}


def _env(pgrig_home: Path) -> Environment:
    env = Environment(name="bk", port=5999)
    env.dir.mkdir(parents=True)
    return env


def test_the_catalogue_keeps_each_backups_datasets(pgrig_home: Path) -> None:
    env = _env(pgrig_home)
    backups.record(
        env, backups.Backup("001-a", "basebackup", "full", "/x", datasets={"pgrig": PGBENCH_1})
    )
    # an entry an older pgrig wrote has no datasets: read as None (not recorded), not {}
    (env.dir / backups.CATALOG).write_text(
        '[{"name": "000-old", "tool": "basebackup", "kind": "full", "path": "/y"}, '
        + (env.dir / backups.CATALOG).read_text()[1:]
    )
    named = backups.named(env, "001-a")
    assert named is not None and named.datasets == {"pgrig": PGBENCH_1}
    old = backups.named(env, "000-old")
    assert old is not None and old.datasets is None
    assert backups.named(env, "nosuch") is None


def test_a_restore_verifies_against_the_backups_data_not_the_current(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regenerated at scale 2 after a scale-1 backup: the restore expects scale 1."""
    from pgrig.load.backup import backup_run, backup_verify
    from pgrig.provision.server import restore
    from pgrig.workloads import datasets

    env = _env(pgrig_home)
    backups.record(
        env, backups.Backup("001-a", "basebackup", "full", "/x", datasets={"pgrig": PGBENCH_1})
    )
    datasets.record(env, "pgrig", PGBENCH_2)  # the data now

    @contextlib.contextmanager
    def scratch(e: Environment, figures: dict[str, Any]) -> Iterator[Environment]:
        figures.update(backup="001-a", tool="basebackup", restore_s=0.1, start_s=0.1)
        figures["restore_total_s"] = 0.2
        yield e

    seen: list[Any] = []

    def verify(held: Any, scratch_env: Environment) -> dict[str, Any]:
        seen.append(held)
        return {"ok": True, "problem": None, "counts": {}}

    monkeypatch.setattr(restore, "scratch_server", scratch)
    monkeypatch.setattr(backup_verify, "verify", verify)
    backup_run._restore(env, "pgrig", lambda _m: None)
    assert seen == [{"pgrig": PGBENCH_1}]


def test_expected_counts_follow_the_recorded_scale() -> None:
    from pgrig.load.backup.backup_verify import expected_counts

    assert expected_counts(PGBENCH_1)["pgbench_branches"] == 1
    assert expected_counts({"scenario": "sysbench", "tables": 1}) == {}


def test_an_external_environment_uses_its_dsns_database() -> None:
    ext = Environment(name="x", kind="external", dsn="postgresql://u@127.0.0.1:5432/somedb")
    assert ext.default_database == "somedb"
    assert "dbname=somedb" in ext.conninfo(ext.default_database)
    bare = Environment(name="y", kind="external", dsn="host=127.0.0.1 port=5432 user=u")
    assert bare.default_database == DEFAULT_DATABASE
    assert Environment(name="z").default_database == DEFAULT_DATABASE
