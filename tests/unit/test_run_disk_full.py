"""Issue 25, must-fix 2 and 3: a run's figures are checked against pgbench's own summary, and a
full disk fails a run with its cause without losing what it measured or leaving files behind."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgrig import safe_write
from pgrig.archive import spool
from pgrig.archive.artifacts import run_artifacts_dir
from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.load.core import lifecycle
from pgrig.load.core.run_files import RunFiles
from pgrig.load.engines import crosscheck, results
from pgrig.load.engines.pgbench_output import parse_summary

PGBENCH = Path(__file__).parents[1] / "fixtures" / "pgbench"


def _summary(major: int, case: str):  # type: ignore[no-untyped-def]
    d = PGBENCH / str(major)
    return parse_summary((d / f"{case}.stdout").read_text(), (d / f"{case}.stderr").read_text())


@contextlib.contextmanager
def _tiny_tmpfs(size: str = "64k") -> Iterator[Path]:
    """A really small file system (a full disk for real); skips where it cannot be mounted."""
    where = Path(tempfile.mkdtemp(prefix="pgrig-tiny-"))
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        where.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
        with contextlib.suppress(OSError):
            where.rmdir()


def _fill(where: Path) -> None:
    with contextlib.suppress(OSError), open(where / "filler", "wb") as f:
        while True:
            f.write(b"\0" * 4096)
            f.flush()


# --- must-fix 2: cross-check against pgbench's summary -----------------------------------------


@pytest.mark.parametrize("major", [15, 18])
def test_a_log_that_lost_lines_disagrees_with_pgbench(major: int) -> None:
    s = _summary(major, "tmode")  # -t: 200 transactions, all in its (complete) log
    assert s.processed == 200
    kw = {"window_transactions": 200, "clients": 4}
    assert crosscheck.check(s, logged_lines=200, **kw) is None
    assert crosscheck.check(s, logged_lines=197, **kw) is None  # in flight at the deadline
    short = crosscheck.check(s, logged_lines=12, **kw)
    assert short is not None and "counts 200 transactions" in short.message
    assert "holds 12 lines" in short.message
    nothing = crosscheck.check(s, logged_lines=0, window_transactions=0, clients=4)
    assert nothing is not None  # the 0-TPS "ok" run of the issue
    unread = crosscheck.check(s, logged_lines=None, window_transactions=None, clients=4)
    assert unread is not None and "0 lines" in unread.message
    broken = crosscheck.check(s, logged_lines=200, window_transactions=None, clients=4)
    assert broken is not None and "no transaction" in broken.message
    assert crosscheck.check(s, logged_lines=200, window_transactions=500, clients=4) is not None


def test_skipped_and_failed_transactions_are_logged_lines_too() -> None:
    s = _summary(18, "rate")  # -R with -L: skipped transactions have a log line each
    assert s.skipped and s.processed
    total = s.processed + (s.failed or 0) + s.skipped
    assert crosscheck.check(s, logged_lines=total, window_transactions=10, clients=2) is None
    assert crosscheck.check(s, logged_lines=s.processed, window_transactions=10, clients=2)


def test_no_complete_summary_no_verdict() -> None:
    killed = _summary(18, "killed")  # a killed pgbench prints no summary: its run is not ok
    assert crosscheck.check(killed, logged_lines=0, window_transactions=0, clients=4) is None
    assert crosscheck.check(None, logged_lines=0, window_transactions=0, clients=4) is None


def test_a_disagreement_drops_the_figures_never_records_zero(tmp_path: Path) -> None:
    d = PGBENCH / "18"
    stdout, stderr = (d / "tmode.stdout").read_text(), (d / "tmode.stderr").read_text()
    rec = RunRecord(env_name="e", workload="w", clients=4, threads=1)
    rec.tps, rec.transactions, rec.measured_s = 0.0, 0, 3.0
    rec.series["pgbench"] = {"t": [0.0], "tps": [0.0]}
    rec.extra["txlog"] = {"lines": 0}
    error = results.cross_check(rec, stdout, stderr, [], tmp_path)
    assert error is not None and "counts 200 transactions" in error
    assert rec.tps is None and rec.transactions is None and rec.measured_s is None
    assert "pgbench" not in rec.series and rec.extra["crosscheck"]["summary_transactions"] == 200


def test_a_full_work_dir_is_named_as_the_cause() -> None:
    with _tiny_tmpfs() as where:
        _fill(where)
        note = crosscheck.space_note(where)
    assert note is not None and str(where) in note and "PGRIG_WORK_DIR" in note
    assert crosscheck.space_note(Path("/")) is None or os.statvfs("/").f_bavail < 256


# --- must-fix 3: a full disk -------------------------------------------------------------------


def test_artifacts_that_do_not_fit_fail_the_run_with_enospc() -> None:
    rec = RunRecord(env_name="e", workload="w", clients=1, threads=1)
    with _tiny_tmpfs() as where:
        files = RunFiles(rec, where)
        assert files.write("small", "x")
        assert not files.write("big", "y" * 200_000)
        assert not (where / "big").exists()  # nothing half-written
        failure = files.failure()
    assert rec.artifacts == {"small": "small"}
    assert failure is not None and "ENOSPC" in failure and "figures were measured" in failure


def test_a_spool_that_does_not_fit_leaves_no_part_file(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = RunRecord(env_name="e", workload="w", clients=1, threads=1, id=3)

    def full(*_a: object, **_k: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(json, "dump", full)
    with pytest.raises(OSError):
        spool.write_spool(rec, "sqlite:///x", "locked")
    assert list(run_artifacts_dir(3, archive="sqlite:///x").iterdir()) == []  # no .part


@pytest.mark.parametrize(
    "spool_error",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        # a record neither the archive nor JSON can encode (a value half-made when a signal
        # came): the run still ends, never "running" for the next command to call lost
        ValueError("Out of range float values are not JSON compliant"),
    ],
)
def test_a_run_neither_archived_nor_spooled_ends_failed_not_running(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch, spool_error: Exception
) -> None:
    with Archive() as archive:
        rec = RunRecord(env_name="e", workload="w", clients=1, threads=1)
        archive.begin_run(rec)
        rec.status, rec.tps = "ok", 123.0

        def full(*_a: object, **_k: object) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        def unwritable(*_a: object, **_k: object) -> None:
            raise spool_error

        real_finish = archive.finish_run
        monkeypatch.setattr(archive, "finish_run", full)
        monkeypatch.setattr(spool, "write_spool", unwritable)
        with pytest.raises(lifecycle.RunNotStored) as raised:
            lifecycle.finish_or_spool(archive, rec)
        assert raised.value.record.tps == 123.0  # for the CLI to print
        assert "marked failed" in str(raised.value)
        monkeypatch.setattr(archive, "finish_run", real_finish)
        assert rec.id is not None
        stored = archive.get_run(rec.id)
    assert stored.status == "failed" and "No space left" in (stored.error or "")
    assert str(spool_error).split()[0] in (stored.error or "")
    with Archive() as again:  # never called "lost" later
        assert again.lost_runs == [] and again.get_run(rec.id).status == "failed"


def test_an_interrupted_run_whose_last_write_breaks_still_ends(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner's last word on a run stopped early: whatever breaks in its last write, the
    run ends with its status and the reason, and the breakage is said."""
    from rich.console import Console

    from pgrig.load.core import run_steps

    def broken(*_a: object, **_k: object) -> None:
        raise TypeError("a value half-made when the signal came")

    monkeypatch.setattr(run_steps, "finish", broken)
    console = Console(record=True, width=200)
    with Archive() as archive:
        rec = RunRecord(env_name="e", workload="w", clients=1, threads=1)
        archive.begin_run(rec)
        rec.status, rec.error = "aborted", "SIGTERM"
        run_steps.end_anyway(rec, archive, console)
        assert rec.id is not None
        stored = archive.get_run(rec.id)
    assert stored.status == "aborted" and "TypeError: a value half-made" in (stored.error or "")
    assert f"run {rec.id}: its record could not be stored: TypeError" in console.export_text()


def test_settings_are_undone_on_a_full_disk() -> None:
    with _tiny_tmpfs() as where:
        conf = where / "pgrig.conf"
        conf.write_text("work_mem = '64MB'  # run\nshared_buffers = '1GB'\n" * 20)
        _fill(where)
        safe_write.replace_text(conf, "shared_buffers = '1GB'\n")  # shorter: fits
        assert conf.read_text() == "shared_buffers = '1GB'\n"
        with pytest.raises(OSError) as full:
            safe_write.replace_text(conf, "x" * 100_000)
        assert full.value.errno == errno.ENOSPC
        assert sorted(p.name for p in where.iterdir()) == ["filler", "pgrig.conf"]
