"""Spooled results (archive/spool.py): a spooled record is checked for its shape and its numbers
before it reaches the archive, and `pgrig runs import` reads only regular files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def _spooled_run(home: Path) -> tuple[str, Path, int]:
    """A finished run of a fresh archive, spooled (as a locked archive leaves it)."""
    from datetime import UTC, datetime

    from pgrig.archive import spool
    from pgrig.archive.records import LatencyStats, RunRecord, ScriptResult
    from pgrig.archive.store import Archive

    url = f"sqlite:///{home / 'archive.sqlite'}"
    with Archive(url) as archive:
        rec = RunRecord(env_name="e", workload="pgbench:tpcb", clients=2, threads=1)
        rec.started_at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
        archive.begin_run(rec)
        assert rec.id is not None
        rec.status, rec.ended_at = "ok", datetime(2026, 3, 1, 12, 1, tzinfo=UTC)
        rec.tps, rec.transactions, rec.tags = 100.0, 300, {"k": "v"}
        rec.latency = LatencyStats(avg=1.0, p95=2.0)
        rec.scripts = [ScriptResult(script_no=0, name="tpcb", latency=LatencyStats(p95=2.0))]
        rec.settings = {"work_mem": {"setting": "4096", "source": "default"}}
        rec.series = {"pgbench": {"t": [0.0, 1.0], "tps": [99.0, None]}}
        return url, spool.write_spool(rec, archive.url, "locked"), rec.id


WRONG_SHAPES = [
    ("tps", "abc", "'tps' is a JSON string"),
    ("series", "x", "'series' is a JSON string"),
    ("series", {"pgbench": {"t": 5}}, "'series.pgbench.t' is a JSON number"),
    ("tags", [1, 2], "'tags' is a JSON array"),
    ("tags", {"a": 1}, "'tags.a' is a JSON number"),
    ("settings", 5, "'settings' is a JSON number"),
    ("settings", {"work_mem": 5}, "'settings.work_mem' is a JSON number"),
    ("host", None, "'host' is a JSON null"),
    ("extra", "s", "'extra' is a JSON string"),
    ("id", None, "'id' is a JSON null"),
    ("clients", True, "'clients' is a JSON boolean"),
    ("latency", {"p95": "zz"}, "'latency.p95' is a JSON string"),
    ("scripts", [5], r"'scripts\[0\]' is a JSON number"),
]


@pytest.mark.parametrize(("field", "value", "said"), WRONG_SHAPES)
def test_a_spooled_record_of_the_wrong_shape_is_refused_naming_the_field(
    pgrig_home: Path, field: str, value: object, said: str
) -> None:
    """Valid JSON whose fields are not what the archive stores: refused by `runs import` in
    one line, never a traceback, nor stored to crash `runs show` later."""
    from pgrig.archive import spool

    _url, path, _run_id = _spooled_run(pgrig_home)
    doc = json.loads(path.read_text())
    doc["record"][field] = value
    path.write_text(json.dumps(doc))
    with pytest.raises(spool.SpoolUnreadable, match=said):
        spool.read_spool(path)


def test_a_pending_spool_of_the_wrong_shape_does_not_break_the_archive(pgrig_home: Path) -> None:
    """{"series": "x"} in a pending spool made every command that opens the archive crash
    (AttributeError in the import) until the file was removed by hand."""
    from pgrig.archive import spool
    from pgrig.archive.store import Archive

    url, path, run_id = _spooled_run(pgrig_home)
    doc = json.loads(path.read_text())
    doc["record"]["series"] = "x"
    path.write_text(json.dumps(doc))
    with Archive(url) as archive:
        [line] = archive.recovered
        assert line.startswith("warning:") and "'series'" in line and "set aside" in line
        assert archive.get_run(run_id).status == "running"  # nothing imported from it
    assert path.with_name(path.name + ".damaged").exists()
    assert spool.pending_spools(url) == []


def test_a_spooled_record_of_the_right_shape_is_imported(pgrig_home: Path) -> None:
    from pgrig.archive.store import Archive

    url, _path, run_id = _spooled_run(pgrig_home)
    with Archive(url) as archive:
        assert archive.recovered == [f"run {run_id} imported from {_path}"]
        got = archive.get_run(run_id)
        assert got.status == "ok" and got.tps == 100.0 and got.tags == {"k": "v"}


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("id", 2**70, "beyond a 64-bit integer"),
        ("transactions", 2**64, "beyond a 64-bit integer"),
        ("id", 0, "run ids start at 1"),
    ],
)
def test_a_spooled_number_beyond_the_archive_is_refused(
    pgrig_home: Path, field: str, value: int, said: str
) -> None:
    """{"id": 2**70} was an OverflowError traceback from SQLite in `runs import`."""
    from pgrig.archive import spool

    _url, path, _run_id = _spooled_run(pgrig_home)
    doc = json.loads(path.read_text())
    doc["record"][field] = value
    path.write_text(json.dumps(doc))
    with pytest.raises(spool.SpoolUnreadable, match=said):
        spool.read_spool(path)


def test_a_fifo_given_to_runs_import_is_refused_not_waited_on(pgrig_home: Path) -> None:
    from pgrig.archive import spool

    fifo = pgrig_home / "x.spool.json"
    os.mkfifo(fifo)
    with pytest.raises(spool.SpoolUnreadable, match="not a regular file"):
        spool.read_spool(fifo)  # before: blocked until a writer came
