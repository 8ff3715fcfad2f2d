"""A second hostile pass over issue 30's features: what still broke, each with its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pgrig.errors import PgrigError

PGRIG = [sys.executable, "-c", "from pgrig.cli.app import main; main()"]


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(pgrig_home: Path) -> None:
    """`pgrig runs list | head -1`: no traceback, no "error: ... Broken pipe" line; the exit
    status is a SIGPIPE'd tool's (141), as `cat` or `git` give."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before pgrig writes a byte
    try:
        proc = subprocess.run(
            [*PGRIG, "runs", "list", "--json"],
            stdout=write, stderr=subprocess.PIPE, text=True, check=False,
        )  # fmt: skip
    finally:
        os.close(write)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


def test_a_level_near_zero_gives_no_infinite_ratio() -> None:
    """8 values of 1e-320 then 8 of 5: after/before overflows to inf, which `--json` printed
    as `Infinity` (invalid JSON); now None, as from a level of 0."""
    from pgrig.analysis import changepoints

    found = changepoints.detect([1e-320] * 8 + [5.0] * 8)
    [change] = found.changes
    assert change.ratio is None and change.change_pct is None
    json.dumps(found.to_dict(), allow_nan=False)  # strict JSON: raises on inf or NaN


def test_a_negative_seed_is_refused_not_a_traceback() -> None:
    from pgrig.analysis import changepoints

    with pytest.raises(PgrigError, match="seed must be 0 or more, not -1"):
        changepoints.detect([1.0] * 8 + [2.0] * 8, seed=-1)


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


def test_track_show_of_a_missing_series_says_series(pgrig_home: Path) -> None:
    """`pgrig track show nosuch` said "study 'nosuch' is not in archive": a word the user
    never used for it."""
    from pgrig.archive.store import Archive
    from pgrig.errors import NotFound
    from pgrig.track import runner

    url = f"sqlite:///{pgrig_home / 'archive.sqlite'}"
    with Archive(url) as archive, pytest.raises(NotFound, match=r"^no series 'nosuch' in ") as e:
        runner.load_series(archive, "nosuch")
    assert "study 'nosuch'" not in str(e.value)


def test_track_settings_are_checked_before_the_series_even_without_binaries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no build of PostgreSQL 18 installed yet (a new user's first series),
    `track s --versions 18 --set a=1` made the series, then failed its version and ended
    "done": the check waited for binaries that came only after the series existed. The
    binaries of a planned version now come first (once per major), then the check refuses."""
    from pgrig.errors import NotFound
    from pgrig.provision import cluster
    from pgrig.track import flow
    from pgrig.track.versions import VersionPoint

    installed: list[str] = []

    def check(pg: str, *, profile: str, settings: dict[str, str], insights: bool) -> str:
        if not any(v == pg or v.split(".")[0] == pg for v in installed):
            raise NotFound(f"PostgreSQL {pg} is not installed")
        if "a" in settings:
            raise PgrigError("unknown setting 'a' in PostgreSQL 18")
        return pg

    monkeypatch.setattr(cluster, "check_settings", check)
    spec = flow.make_spec(
        "s", workload="pgbench:select-only", clients=1, threads=1, duration=1, warmup=0,
        protocol="simple", scale=1, repeat=1, profile="default", settings={"a": "1"},
    )  # fmt: skip
    points = [
        VersionPoint("18.6", "18"),
        VersionPoint("18.5", "18"),
        VersionPoint("17.2", "17.0..17.6", status="candidate"),  # maybe never measured
    ]
    with pytest.raises(PgrigError, match=r"PostgreSQL 18\.6: unknown setting 'a'"):
        flow.check_settings(spec, points, install=lambda p: installed.append(p.version))
    assert installed == ["18.6"]

    installed.clear()
    spec.settings = {}
    flow.check_settings(spec, points, install=lambda p: installed.append(p.version))
    assert installed == ["18.6"]  # one build checks its major's versions; no candidate's


@pytest.mark.parametrize("repeat", [0, 101, 1_000_000_000])
def test_track_repeat_is_bounded_as_runs_is(repeat: int) -> None:
    """`track s --repeat 1000000000` was taken, printed "1000000000 repeats" and went on
    until killed; `run --repeat` stops at 100."""
    from pgrig.track import flow

    with pytest.raises(PgrigError, match=rf"--repeat must be .*\(got {repeat}\)"):
        flow.make_spec(
            "s", workload="pgbench:select-only", clients=1, threads=1, duration=1, warmup=0,
            protocol="simple", scale=1, repeat=repeat, profile="default", settings={},
        )  # fmt: skip


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


def test_a_note_file_is_read_to_a_bound(tmp_path: Path) -> None:
    """`--note-file /dev/zero` read NUL bytes (valid UTF-8) until memory ran out."""
    from pgrig.cli import run

    with pytest.raises(PgrigError, match="longer than 1 MiB"):
        run._note(None, "/dev/zero")
    big = tmp_path / "note.txt"
    big.write_text("x" * (run.MAX_NOTE_BYTES + 1))
    with pytest.raises(PgrigError, match="longer than 1 MiB"):
        run._note(None, str(big))
    ok = tmp_path / "ok.txt"
    ok.write_text("é" * 70_000 + "\n")  # over 128 KiB (an argument's limit), under 1 MiB
    assert run._note(None, str(ok)) == "é" * 70_000


def test_track_detect_reads_its_file_to_a_bound() -> None:
    """`pgrig track detect /dev/zero` read until memory ran out."""
    from typer.testing import CliRunner

    from pgrig.cli import track

    result = CliRunner().invoke(track.app, ["detect", "/dev/zero"])
    assert isinstance(result.exception, PgrigError), result.exception
    assert "longer than 4 MiB" in str(result.exception)


def test_an_empty_backup_dir_is_refused_not_taken_for_the_default() -> None:
    """`--backup-dir "$UNSET"` put the backups in the environment's directory, unasked (and
    `env destroy` removes them with it)."""
    from pgrig.load.backup import backup_run

    with pytest.raises(PgrigError, match="--backup-dir is empty"):
        backup_run.check_flags(["backup:basebackup-full"], None, "")
    backup_run.check_flags(["backup:basebackup-full"], None, None)  # the default: fine


def test_a_backup_dir_inside_the_data_directory_is_refused(pgrig_home: Path) -> None:
    """Backups inside PGDATA: each base backup copies the ones before it."""
    from pgrig.provision.server import backups
    from pgrig.provision.state.environment import Environment

    env = Environment(name="bk", port=5999)
    env.datadir.mkdir(parents=True)
    with pytest.raises(PgrigError, match="inside the server's data directory"):
        backups.root(env, str(env.datadir))
    with pytest.raises(PgrigError, match="inside the server's data directory"):
        backups.root(env, str(env.datadir / ".." / "data"))


def test_a_stored_series_of_a_billion_repeats_is_refused_before_its_plan() -> None:
    """A series stored with --repeat 1000000000 (before the bound): resuming it built one list
    of 10^9 (version, repeat) pairs and was killed by the kernel's OOM killer."""
    from pgrig.track import runner
    from pgrig.track.spec import TrackSpec
    from pgrig.track.versions import VersionPoint

    spec = TrackSpec(name="s", load={"workload": "pgbench:tpcb"}, repeat=1_000_000_000)
    series = runner.Series(spec, [VersionPoint("18.6", "18")])

    class Untouched:
        def __getattr__(self, name: str) -> object:
            raise AssertionError(f"{name} used before the repeat was checked")

    with pytest.raises(PgrigError, match=r"series s: --repeat must be between 1 and 100"):
        runner.measure(series, Untouched(), Untouched())  # type: ignore[arg-type]
