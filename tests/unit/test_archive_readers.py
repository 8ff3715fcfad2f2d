"""Issue 30, class 7: readers that never crash the archive.

- a spool file that is no spooled run (`[]`, `null`, `"x"`, `42`) is a clear error to
  `runs import`, and as a pending spool it is set aside with a warning naming it, once,
  instead of breaking every command that opens the archive;
- `runs import PATH` of a run imported before leaves PATH and the partial series beside it;
- an output that cannot be written (`> /dev/full`) is blamed, not pgrig's home.
"""

from __future__ import annotations

import errno
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgrig import paths
from pgrig.archive import spool
from pgrig.archive.artifacts import run_artifacts_dir
from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.errors import PgrigError

NOT_RUNS = ["[]", "null", '"x"', "42", '{"format": 1, "archive": "a", "record": []}']


@pytest.mark.parametrize("text", NOT_RUNS)
def test_a_spool_that_is_no_run_is_a_clear_error(pgrig_home: Path, text: str) -> None:
    from pgrig.cli.runs import app

    f = pgrig_home / "x.spool.json"
    f.write_text(text)
    with pytest.raises(spool.SpoolUnreadable, match=r"cannot read spooled run .*x\.spool\.json"):
        spool.read_spool(f)
    result = CliRunner().invoke(app, ["import", str(f)])
    assert isinstance(result.exception, PgrigError), result.exception  # one line, no trace
    assert f.exists()  # not ours to remove


def _begun(archive: Archive) -> RunRecord:
    rec = RunRecord(env_name="e", workload="w", clients=1, threads=1)
    rec.started_at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    archive.begin_run(rec)
    return rec


def test_a_damaged_pending_spool_is_set_aside_once_with_a_warning(pgrig_home: Path) -> None:
    url = f"sqlite:///{pgrig_home / 'archive.sqlite'}"
    with Archive(url) as archive:
        rec = _begun(archive)
        path = spool.write_spool(rec, archive.url, "locked")
    path.write_text("[]")  # damaged (or written by hand)
    with Archive(url) as again:
        [line] = again.recovered
        assert line.startswith("warning:") and str(path) in line and "set aside" in line
        assert again.get_run(rec.id).status == "running"  # nothing imported from it
    assert not path.exists() and path.with_name(path.name + ".damaged").exists()
    with Archive(url) as third:  # tried once, not by every command
        assert third.recovered == []
    assert spool.pending_spools(url) == []


def test_importing_a_run_imported_before_leaves_the_given_files(pgrig_home: Path) -> None:
    url = f"sqlite:///{pgrig_home / 'archive.sqlite'}"
    with Archive(url) as archive:
        rec = _begun(archive)
        rec.status, rec.ended_at = "ok", datetime(2026, 3, 1, 12, 1, tzinfo=UTC)
        path = spool.write_spool(rec, archive.url, "locked")
        kept = pgrig_home / "copy.spool.json"
        shutil.copy(path, kept)
        assert archive.import_spooled(path).run_id == rec.id and not path.exists()
        (pgrig_home / spool.PARTIAL_SERIES).write_text("")
        assert archive.import_spooled(kept) == (rec.id, True)  # the same record written again
        assert kept.exists() and (pgrig_home / spool.PARTIAL_SERIES).exists()
        assert archive.get_run(rec.id).status == "ok"
    assert paths.home() == pgrig_home
    assert run_artifacts_dir(rec.id, create=False, archive=url).name == str(rec.id)


def test_a_failed_output_is_blamed_not_the_home() -> None:
    from pgrig.cli import common

    class Full:
        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

    guarded = common.GuardedStdout(Full())
    with pytest.raises(common.OutputError, match="standard output") as e:
        guarded.write("x")
    assert "PGRIG_HOME" not in str(e.value) and e.value.exit_code == 1


def test_runs_list_to_dev_full_names_the_output(pgrig_home: Path) -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-c", "from pgrig.cli.app import main; main()", "runs", "list",
             "--json"],
            stdout=full, stderr=subprocess.PIPE, text=True, check=False,
        )  # fmt: skip
    assert proc.returncode == 1
    assert "cannot write the output to standard output (/dev/full)" in proc.stderr
    assert "PGRIG_HOME" not in proc.stderr and "Traceback" not in proc.stderr
