"""Nonsense refused with one line, user text never driving the terminal, damaged homes and
environments explained, read-only commands creating nothing (issue 10)."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.cli import common
from pgrig.errors import PgrigError
from pgrig.request.values import INT64_MAX, check_int64

BIG = str(2**64 + 1)


def pgrig(*args: str, stdin: str | None = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["pgrig", *args], capture_output=True, text=True, input=stdin, timeout=60, check=False
    )


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


# --- terminal escapes ---------------------------------------------------------------------


def test_visible_shows_every_control_but_newline_and_tab() -> None:
    text = "a\x1b[31mb\x07\x9b\r\n\tc\x7f"
    assert common.visible(text) == "a\\x1b[31mb\\x07\\x9b\\x0d\n\tc\\x7f"
    assert common.visible(common.visible(text)) == common.visible(text)


def test_safe_console_escapes_messages_and_table_cells() -> None:
    from rich.table import Table

    out = io.StringIO()
    con = common.SafeConsole(file=out, width=120, force_terminal=True)
    con.print("[bold]note[/bold] evil\x1b]0;pwned\x07", highlight=False)
    table = Table()
    table.add_column("tag")
    table.add_row("k=\x1b[2Jv")
    con.print(table)
    text = out.getvalue()
    assert "\x1b]0;" not in text and "\x1b[2J" not in text and "\x07" not in text
    assert "evil\\x1b]0;pwned\\x07" in text and "k=\\x1b[2Jv" in text
    assert "\x1b[1m" in text  # rich's own styling still reaches the terminal


def test_emoji_codes_in_user_text_print_as_typed(pgrig_home: Path) -> None:
    out = io.StringIO()
    common.SafeConsole(file=out, width=120).print("root:x:0:0 :smile: :thumbs_up:")
    assert out.getvalue() == "root:x:0:0 :smile: :thumbs_up:\n"
    done = subprocess.run(
        ["pgrig", "host", "add", "db:x:1", "--ssh", "root@10.0.0.1"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "invalid host name 'db:x:1'" in done.stderr


def test_runs_list_and_show_escape_notes_and_tags(pgrig_home: Path) -> None:
    with Archive() as arch:
        rec = _rec(note="evil\x1b]0;pwned\x07", tags={"k": "\x1b[31mred"})
        rec.id = arch.begin_run(rec)
        arch.finish_run(rec)
    for args in (["runs", "list"], ["runs", "show", str(rec.id)]):
        proc = pgrig(*args)
        assert proc.returncode == 0, proc.stderr
        both = proc.stdout + proc.stderr
        assert "\x1b" not in both and "\x07" not in both
        assert "evil\\x1b]0;p" in both  # runs list cuts long notes


# --- 64-bit integers -------------------------------------------------------------------------


def test_check_int64() -> None:
    assert check_int64(INT64_MAX, "run id") == INT64_MAX
    with pytest.raises(PgrigError, match=r"run id must be at most 9223372036854775807"):
        check_int64(INT64_MAX + 1, "run id")


@pytest.mark.parametrize(
    "args",
    [
        ["runs", "show", BIG],
        ["runs", "export", BIG],
        ["runs", "compare", "1", BIG],
        ["runs", "list", "--limit", BIG],
        ["runs", "list", "--offset", BIG],
    ],
)
def test_huge_integers_are_one_line_errors(pgrig_home: Path, args: list[str]) -> None:
    assert "9223372036854775807" in one_line_error(pgrig(*args))


def test_huge_integers_in_the_web_are_400(pgrig_home: Path) -> None:
    from fastapi.testclient import TestClient

    from pgrig.web.app import create_app

    client = TestClient(create_app(), raise_server_exceptions=False)
    for url in (
        f"/runs/{BIG}",
        f"/runs/{BIG}/artifacts/x",
        f"/compare?ids=1,{BIG}",
        f"/runs?page={BIG}",
        "/runs?page=999999999999999999",
        f"/runs?major={BIG}",
        f"/runs.csv?major={BIG}",
    ):
        response = client.get(url)
        assert response.status_code == 400, url
        assert "at most 9223372036854775807" in response.text, url


# --- read-only commands, damaged homes and environments ---------------------------------------


def test_read_only_commands_create_nothing(pgrig_home: Path) -> None:
    for args in (
        ["runs", "list"],
        ["runs", "list", "--json"],
        ["runs", "show", "1"],
        ["runs", "compare", "1", "2"],
        ["env", "list"],
        ["env", "show", "nope"],
        ["study", "list"],
        ["study", "show", "nope"],
        ["profile", "list"],
    ):
        proc = pgrig(*args)
        assert "Traceback" not in proc.stderr, args
    assert list(pgrig_home.iterdir()) == []


def test_a_corrupt_env_json_is_one_line_with_the_repair(pgrig_home: Path) -> None:
    d = pgrig_home / "envs" / "lab"
    d.mkdir(parents=True)
    (d / "env.json").write_text('{"name": "lab", "port": ')
    for args in (
        ["env", "show", "lab"],
        ["run", "lab", "-w", "pgbench:select-only", "-T", "1"],
        ["env", "set", "lab", "work_mem=8MB"],
        ["db", "generate", "lab", "--scale", "1"],
    ):
        line = one_line_error(pgrig(*args))
        assert "is damaged" in line and "pgrig env repair lab" in line, args
    line = one_line_error(pgrig("env", "repair", "lab"))  # nothing to rebuild it from
    assert "cannot be repaired" in line and "pgrig env destroy lab --yes" in line
    assert pgrig("env", "destroy", "lab", "--yes").returncode == 0
    assert not d.exists()


def test_a_missing_data_directory_is_one_line_with_the_repair(pgrig_home: Path) -> None:
    d = pgrig_home / "envs" / "lab"
    d.mkdir(parents=True)
    (d / "env.json").write_text(json.dumps({"name": "lab", "port": 5999, "bindir": "/nope"}))
    for args in (["run", "lab", "-w", "pgbench:select-only", "-T", "1"], ["env", "start", "lab"]):
        line = one_line_error(pgrig(*args))
        assert "data directory" in line and "pgrig env repair lab" in line, args
    listed = json.loads(pgrig("env", "list", "--json").stdout)
    assert listed[0]["status"].startswith("damaged")


def test_read_only_home_is_one_line(pgrig_home: Path) -> None:
    err = OSError(30, "Read-only file system", str(pgrig_home / "envs" / "x"))
    line = common.os_error_message(err)
    assert line.startswith(f"{pgrig_home}/envs/x: Read-only file system")
    assert "PGRIG_HOME" in line


def test_env_destroy_without_terminal_or_yes_refuses(pgrig_home: Path) -> None:
    (pgrig_home / "envs" / "lab").mkdir(parents=True)
    line = one_line_error(pgrig("env", "destroy", "lab"))
    assert "--yes" in line
    assert (pgrig_home / "envs" / "lab").exists()


# --- what the request layer already refuses, through the CLI -----------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["run", "lab", "-w", "pgbench:select-only", "-T", "0.001"], "at least 1 s"),
        (["db", "generate", "lab", "--db", "template1", "--scale", "1"], "template database"),
        (["db", "generate", "lab", "--scale", "0"], "--scale must be >= 1"),
        (["run", "lab", "-w", "pgbench:select-only", "-T", "2", "--mix", "4,4,4,4,84"], "--mix"),
        (["run", "lab", "-w", "pgbench:tpcb", "-T", "2", "--all-warehouses"], "applies only"),
    ],
)
def test_nonsense_is_refused_before_anything(
    pgrig_home: Path, args: list[str], expected: str
) -> None:
    assert expected in one_line_error(pgrig(*args))


# --- runs list and compare ----------------------------------------------------------------


def test_runs_list_tps_column_is_tps_not_nopm() -> None:
    from pgrig.cli.runs import _list_rows

    rec = _rec(workload="tpcc", tps=123.4)
    rec.nopm = 9876.0
    rec.id = 1
    row = _list_rows([rec])[0]
    assert row["tps"] == "123.4" and row["nopm"] == "9,876"


def test_compare_with_a_failed_run_gives_no_verdict(pgrig_home: Path) -> None:
    with Archive() as arch:
        ids = []
        for status in ("ok", "failed"):
            rec = _rec(status=status)
            rec.id = arch.begin_run(rec)
            arch.finish_run(rec)
            ids.append(rec.id)
    proc = pgrig("runs", "compare", *map(str, ids))
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout + proc.stderr
    assert "no verdict" in text
    for verdict in ("faster", "slower", "equivalent", "inconclusive"):
        assert f"verdict on TPS: {verdict}" not in text


def _rec(**kw: object) -> RunRecord:
    base: dict[str, object] = {
        "env_name": "pg15",
        "workload": "pgbench:tpcb-like",
        "clients": 1,
        "threads": 1,
        "status": "ok",
        "server_major": 15,
        "duration_s": 10.0,
        "measured_s": 10.0,
        "tps": 1000.0,
        "transactions": 10000,
        "failed": 0,
    }
    base.update(kw)
    return RunRecord(**base)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("PGRIG_ARCHIVE", raising=False)


def test_an_archive_in_a_read_only_directory_is_one_clear_line(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Archive().close()  # the archive exists
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: mode != os.W_OK and real_access(p, mode)
    )  # as on a read-only mount
    with pytest.raises(PgrigError, match=r"read-only directory: .*--archive PATH"):
        common.reading_archive(None)


def _env_json(home: Path, name: str, doc: Any) -> None:
    import json

    (home / "envs" / name).mkdir(parents=True)
    (home / "envs" / name / "env.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))


def test_env_list_shows_damaged_and_incomplete_environments(pgrig_home: Path) -> None:
    import json

    from typer.testing import CliRunner

    from pgrig.cli.env import app

    _env_json(pgrig_home, "typed", {"name": "typed", "port": "5432"})
    _env_json(pgrig_home, "broken", "{not json")
    (pgrig_home / "envs" / "halfway").mkdir()  # kill -9 during env create
    listed = CliRunner().invoke(app, ["list", "--json"])
    assert listed.exit_code == 0, listed.output
    status = {r["name"]: r["status"] for r in json.loads(listed.stdout)}
    assert (
        status["typed"] == "damaged: env.json: port: input should be a valid integer (got '5432')"
    )
    assert status["broken"].startswith("damaged: env.json: ")
    assert status["halfway"].startswith("damaged: incomplete")
    shown = CliRunner().invoke(app, ["show", "typed"])
    assert shown.exit_code != 0 and "port: input should be a valid integer" in str(shown.exception)


def test_run_and_tune_take_one_set_of_duration_spellings(pgrig_home: Path) -> None:
    """Issue 43 (F9): `run -T 2min` as `tune --duration 2min`; "3sec" and "5mins" refused by
    both, listing what is taken (PostgreSQL's time units, bare seconds, and "m")."""
    accepted = "a number of seconds, or one with a unit: us, ms, s, min, h, d (or m)"
    for args in (
        ["run", "nowhere", "-w", "pgbench:select-only", "-T", "3sec"],
        ["run", "nowhere", "-w", "pgbench:select-only", "-T", "2min", "--warmup", "5mins"],
        ["tune", "nowhere", "-w", "pgbench:tpcb", "--duration", "3sec"],
        ["tune", "nowhere", "-w", "pgbench:tpcb", "--duration", "3min", "--budget", "2mins"],
    ):
        line = one_line_error(pgrig(*args))
        assert accepted in line, (args, line)
    # a unit is read by run as by tune: the request's error is the next one (no environment)
    line = one_line_error(pgrig("run", "nowhere", "-w", "pgbench:select-only", "-T", "2min"))
    assert "duration" not in line and "nowhere" in line
