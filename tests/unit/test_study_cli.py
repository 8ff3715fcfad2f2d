"""`pgrig study ...` and `pgrig report ...` commands over a synthetic archive (no servers)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import typer
from rich.console import Console
from study_fakes import FakeBackend, archive_at, iterations_toml, make_record, study_toml
from typer.testing import CliRunner

from pgrig.cli import study as study_cli
from pgrig.study.runner import run_study
from pgrig.study.spec import StudySpecError, parse

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "studies"

STUDY = study_toml("cli", repeats=2, clients=2, threads=None) + iterations_toml(
    {"name": "a"}, {"name": "b", "settings": {"synchronous_commit": "off"}}
)


@pytest.fixture
def app() -> typer.Typer:
    a = typer.Typer()
    study_cli.register(a)
    return a


@pytest.fixture
def archive_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PGRIG_HOME", str(tmp_path / "home"))
    archive = archive_at(tmp_path)
    run_study(
        parse(STUDY),
        archive=archive,
        backend=FakeBackend(),
        console=Console(file=io.StringIO()),
    )
    url = f"sqlite:///{tmp_path / 'archive.sqlite'}"
    monkeypatch.setenv("PGRIG_ARCHIVE", url)
    return url


def invoke(app: typer.Typer, *args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=True)


def test_plan_offline_json(app: typer.Typer) -> None:
    res = invoke(
        app, "study", "plan", str(EXAMPLES / "tuning-iterations.toml"), "--offline", "--json"
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["kind"] == "iterations" and data["runs"] == 24
    assert data["points"][1]["changes"] == {
        "shared_buffers": "1GB",
        "effective_cache_size": "3GB",
        "maintenance_work_mem": "256MB",
    }


def test_plan_table(app: typer.Typer) -> None:
    res = invoke(app, "study", "plan", str(EXAMPLES / "clients-sweep.toml"), "--offline")
    assert res.exit_code == 0, res.output
    assert "clients-sweep" in res.stdout


def test_invalid_file_is_one_clear_error(app: typer.Typer, tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(STUDY.replace("clients = 2", "clients = -1"))
    res = invoke(app, "study", "run", str(f))
    assert isinstance(res.exception, StudySpecError)
    assert str(res.exception) == "run.clients: must be >= 1 (got -1)"


def test_list_show_report(app: typer.Typer, archive_url: str, tmp_path: Path) -> None:
    res = invoke(app, "study", "list", "--json")
    assert res.exit_code == 0, res.output
    [row] = json.loads(res.stdout)
    assert row["name"] == "cli" and row["ok_runs"] == 4 and row["planned"] == 4
    assert row["status"] == "done"

    res = invoke(app, "study", "show", "cli", "--json")
    data = json.loads(res.stdout)
    assert [p["ok"] for p in data["points"]] == [2, 2]
    assert data["points"][1]["tps"] > data["points"][0]["tps"]

    res = invoke(app, "study", "show", "cli")
    assert res.exit_code == 0 and "cli (iterations, done)" in res.stdout

    res = invoke(app, "study", "report", "cli", "--format", "html")
    assert res.exit_code == 0, res.output
    path = Path(res.stdout.strip())
    assert path == tmp_path / "home" / "reports" / "cli" / "cli.html" and path.exists()

    out = tmp_path / "o"
    res = invoke(app, "study", "report", "cli", "-f", "md", "--out", str(out))
    assert res.exit_code == 0 and (out / "cli.md").exists() and (out / "cli-tps.svg").exists()


def test_report_run_and_compare(app: typer.Typer, archive_url: str, tmp_path: Path) -> None:
    res = invoke(app, "report", "run", "1", "--out", str(tmp_path / "r"))
    assert res.exit_code == 0, res.output
    assert (tmp_path / "r" / "run-1.md").exists()
    res = invoke(app, "report", "compare", "1,2", "3-4", "--format", "html", "--out", str(tmp_path))
    assert res.exit_code == 0, res.output
    assert Path(res.stdout.strip()).name == "compare-1_2-vs-3_4.html"
    res = invoke(app, "report", "compare", "1", "2", "--threshold", "2")
    assert "threshold" in str(res.exception)


def test_report_of_a_missing_run(app: typer.Typer, archive_url: str) -> None:
    from pgrig.errors import NotFound

    res = invoke(app, "report", "run", "999")
    assert isinstance(res.exception, NotFound)


def test_show_unknown_study(app: typer.Typer, archive_url: str) -> None:
    from pgrig.errors import NotFound

    res = invoke(app, "study", "show", "nope")
    assert isinstance(res.exception, NotFound)


def test_make_record_roundtrip(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)
    rec = make_record(tps=100)
    archive.finish_run(rec)
    assert archive.get_run(rec.id).series["pgbench"]["tps"][0] > 0
