"""Issue 30, class 10: rough edges, one answer each."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from pgrig.errors import PgrigError


def test_a_huge_or_backwards_run_range_gets_a_specific_error() -> None:
    from pgrig.reports.publish import parse_group

    with pytest.raises(PgrigError, match=r"'1-999999999' spans 999,999,999 runs, at most 1,001"):
        parse_group("1-999999999")
    with pytest.raises(PgrigError, match=r"'6-4' runs backwards: write 4-6"):
        parse_group("6-4")
    with pytest.raises(PgrigError, match=r"bad run list 'x'"):
        parse_group("x")
    assert parse_group("1,4-6") == [1, 4, 5, 6]


def test_repeat_zero_is_told_the_lower_bound() -> None:
    from pgrig.request.load import check_repeat

    with pytest.raises(PgrigError, match=r"--repeat must be at least 1 \(got 0\)") as e:
        check_repeat(0)
    assert "resolve nothing more" not in str(e.value)
    with pytest.raises(PgrigError, match=r"between 1 and 100"):
        check_repeat(101)


def test_a_finished_run_cannot_be_marked_lost(pgrig_home: Path) -> None:
    from pgrig.archive.records import RunRecord
    from pgrig.archive.store import Archive

    with Archive(f"sqlite:///{pgrig_home / 'archive.sqlite'}") as archive:
        rec = RunRecord(env_name="e", workload="w", clients=1, threads=1)
        rec.started_at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
        archive.begin_run(rec)
        rec.status, rec.ended_at = "ok", datetime(2026, 3, 1, 12, 1, tzinfo=UTC)
        archive.finish_run(rec)
        with pytest.raises(PgrigError, match=r"cannot mark run \d+ lost: it finished \(ok\)"):
            archive.mark_run(rec.id, "lost", "by hand")
        assert archive.get_run(rec.id).status == "ok"
        archive.mark_run(rec.id, "failed", "by hand")  # a judgment on a result stays allowed
        assert archive.get_run(rec.id).status == "failed"


def test_backup_kinds_take_their_article() -> None:
    from pgrig.provision.server.pgbackrest import _a

    assert _a("incr") == "an incr" and _a("diff") == "a diff"


def test_a_backup_runs_summary_is_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    from pgrig.archive.records import RunRecord
    from pgrig.cli.backup import print_backup

    rec = RunRecord(env_name="e", workload="backup:basebackup-full", clients=0, threads=0, id=3)
    rec.status = "ok"
    rec.extra["backup"] = {"tool": "pg_basebackup", "type": "full", "duration_s": 0.4,
                           "backup_bytes": 1 << 20, "source_bytes": 1 << 20}  # fmt: skip
    print_backup(rec)
    out = capsys.readouterr()
    assert "run 3 backup:basebackup-full ok" in out.out and "pg_basebackup full" in out.out
    assert out.err == ""


def test_track_names_the_binaries_source_as_track_show_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Installed before by pgrig: stderr said "binaries (system)", `track show` said pgrig."""
    import io
    from types import SimpleNamespace
    from typing import cast

    from rich.console import Console

    from pgrig.provision.server import binaries, maven, sources
    from pgrig.track.runner import Measurer, Series
    from pgrig.track.spec import TrackSpec
    from pgrig.track.versions import VersionPoint

    class Stop(Exception):
        pass

    bindir = tmp_path / "18.6" / "bin"
    found = binaries.Installation("18.6", 18, str(bindir), "pgrig", None)
    monkeypatch.setattr(binaries, "installed", lambda: [found])
    monkeypatch.setattr(sources, "install", lambda version, order: (bindir, "system"))

    def stop(_bindir: Path) -> dict[str, str]:
        raise Stop

    monkeypatch.setattr(maven, "client_tools", stop)
    out = io.StringIO()
    point = VersionPoint(version="18.6", requested="18")
    spec = cast(TrackSpec, SimpleNamespace(name="t"))  # prepare reads only its name here
    measurer = Measurer(Series(spec=spec, points=[point]), archive=None, console=Console(file=out))  # type: ignore[arg-type]
    with pytest.raises(Stop):
        measurer.prepare(point)
    said = out.getvalue()
    assert "system" not in said and "binaries pgrig" in said
    assert point.source == "pgrig"


def test_track_detect_takes_only_a_named_first_line_as_a_header() -> None:
    from pgrig.analysis.changepoints import parse_csv

    assert parse_csv("version,tps\n17.1,10\n17.2,11\n") == (["17.1", "17.2"], [10.0, 11.0])
    for bad in ("12.5x", "", "-", ".5.5", "+-1"):
        with pytest.raises(PgrigError, match=r"input:1: .* is not a number"):
            parse_csv(f"17.0,{bad}\n17.1,10\n17.2,11\n")


def test_a_start_on_a_port_held_by_another_process_names_the_port() -> None:
    import socket

    from pgrig.provision.server.postmaster import StartError
    from pgrig.provision.state.environment import Environment

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env = Environment(name="e", port=port)
        e = StartError(env, "FATAL: could not create any TCP/IP sockets")
    assert f"port {port} on 127.0.0.1 is held by another process" in str(e)
    free = StartError(
        Environment(name="e", port=port), "FATAL: could not create any TCP/IP sockets"
    )
    assert "held by another process" not in str(free)  # released: no such claim


def test_a_group_mixing_workloads_has_no_centre() -> None:
    from pgrig.analysis.compare import group_value
    from pgrig.archive.records import RunRecord

    def run(workload: str, tps: float) -> RunRecord:
        rec = RunRecord(env_name="e", workload=workload, clients=1, threads=1, status="ok")
        rec.tps = tps
        return rec

    same = [run("pgbench:select-only", 100.0), run("pgbench:select-only", 110.0)]
    assert group_value(same, lambda r: r.tps) is not None
    mixed = [run("pgbench:select-only", 100.0), run("pgbench:tpcb-like", 10.0)]
    assert group_value(mixed, lambda r: r.tps) is None


def test_a_note_longer_than_an_argument_comes_from_a_file(tmp_path: Path) -> None:
    from pgrig.cli.run import _note

    long = "n" * (200 * 1024)  # over the kernel's 128 KiB for one argument
    f = tmp_path / "note.txt"
    f.write_text(long + "\n")
    assert _note(None, str(f)) == long
    assert _note("short", None) == "short"
    with pytest.raises(PgrigError, match="not both"):
        _note("x", str(f))
    with pytest.raises(PgrigError, match=r"--note-file .*nosuch: cannot read it"):
        _note(None, str(tmp_path / "nosuch"))
