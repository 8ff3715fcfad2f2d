"""`pgrig host check/tune/restore` output, and the host in `runs show` and `runs compare`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from host_fakes import FakeKernel, make_machine, snapshot_tree
from typer.testing import CliRunner

from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.cli import host as host_cli
from pgrig.cli import runs as runs_cli
from pgrig.errors import PgrigError
from pgrig.machine import knobs, tune
from pgrig.provision.system import osuser

runner = CliRunner()


def invoke(app, *args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_check_json_and_human(pgrig_home: Path) -> None:
    doc = json.loads(invoke(host_cli.app, "check", "--json", "--clients", "100"))
    assert len(doc["checks"]) >= 12
    nofile = next(c for c in doc["checks"] if c["name"] == "nofile")
    assert nofile["recommended"] == ">= 164 for 100 clients"
    out = invoke(host_cli.app, "check")
    for word in ("check", "status", "recommended", "why", "swappiness", "uptime"):
        assert word in out


def test_check_with_planned_pinning(pgrig_home: Path) -> None:
    doc = json.loads(invoke(host_cli.app, "check", "--json", "--server-cpus", "1cores"))
    smt = next(c for c in doc["checks"] if c["name"] == "smt_siblings")
    assert smt["value"].startswith("server 0")
    bad = runner.invoke(host_cli.app, ["check", "--server-cpus", "0cores"])
    assert isinstance(bad.exception, PgrigError) and "whole number of cores" in str(bad.exception)


@pytest.fixture
def fake_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The CLI's tune and restore, on a fake machine with a fake kernel."""
    fs = make_machine(tmp_path / "m")

    def on_fake(fn, fs_position: int):
        def call(*a, **k):
            if len(a) <= fs_position and "fs" not in k:
                k["fs"] = fs
            return fn(*a, **k)

        return call

    for name, position in (("plan", 1), ("apply", 1), ("restore", 0)):
        monkeypatch.setattr(tune, name, on_fake(getattr(tune, name), position))
    monkeypatch.setattr(knobs, "write_value", FakeKernel())
    monkeypatch.setattr(osuser, "is_root", lambda: True)
    return tmp_path / "m"


def test_tune_dry_run_apply_and_restore(fake_host: Path, pgrig_home: Path) -> None:
    before = snapshot_tree(fake_host)
    out = invoke(host_cli.app, "tune", "--only", "swappiness,sched_autogroup")
    assert "vm.swappiness" in out and "60" in out and "kernel.sched_autogroup_enabled" in out
    assert snapshot_tree(fake_host) == before
    doc = json.loads(invoke(host_cli.app, "tune", "--apply", "--json", "--only", "swappiness"))
    assert doc["applied"] and doc["changes"][0] == {
        "name": "swappiness",
        "setting": "vm.swappiness",
        "old": 60,
        "new": 3,
        "files": [f"{fake_host}/proc/sys/vm/swappiness"],
        "status": "changed",
        "error": None,
    }
    assert (pgrig_home / "host-tune.json").exists()
    done = json.loads(invoke(host_cli.app, "restore", "--json"))
    assert done["ok"] and done["restored"][0]["name"] == "swappiness"
    assert snapshot_tree(fake_host) == before and not (pgrig_home / "host-tune.json").exists()
    assert "nothing to restore" in runner.invoke(host_cli.app, ["restore"]).output


def test_tune_refuses_without_root(pgrig_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(osuser, "is_root", lambda: False)
    result = runner.invoke(host_cli.app, ["tune", "--apply"])
    assert isinstance(result.exception, PgrigError)
    assert "needs root" in str(result.exception) and "nothing was changed" in str(result.exception)


def _run(host: dict, extra: dict) -> RunRecord:
    return RunRecord(
        env_name="pg15", workload="pgbench:select-only", clients=2, threads=1, status="ok",
        tps=100.0, host=host, extra=extra,
    )  # fmt: skip


def test_runs_show_and_compare_name_host_differences(pgrig_home: Path) -> None:
    def checks(swappiness: int, status: str) -> list[dict]:
        return [
            {"name": "swappiness", "value": swappiness, "recommended": "3 (<= 10)",
             "status": status, "why": "tuned uses 3"},
            {"name": "thp_enabled", "value": "never", "recommended": "never",
             "status": "ok", "why": "THP"},
        ]  # fmt: skip

    url = f"sqlite:///{pgrig_home / 'a.sqlite'}"
    with Archive(url) as a:
        a.finish_run(_run({"hostname": "h", "checks": checks(60, "warn")}, {}))
        a.finish_run(_run({"hostname": "h", "checks": checks(3, "ok")}, {"cpus": {"server": "0"}}))
        a.finish_run(_run({"hostname": "h", "checks": checks(3, "ok")}, {"cpus": {"server": "0"}}))
    out = invoke(runs_cli.app, "compare", "1", "2", "--archive", url)
    assert "host differences" in out and "swappiness: A 60, B 3" in out
    assert "CPU pinning: A not pinned, B server 0" in out
    doc = json.loads(invoke(runs_cli.app, "compare", "1", "2", "--archive", url, "--json"))
    assert doc["host_differences"] == [
        "swappiness: A 60, B 3",
        "CPU pinning: A not pinned, B server 0",
    ]
    same = invoke(runs_cli.app, "compare", "2", "3", "--archive", url)
    assert "host differences" not in same
    assert (
        json.loads(invoke(runs_cli.app, "compare", "2", "3", "--archive", url, "--json"))[
            "host_differences"
        ]
        == []
    )
    shown = invoke(runs_cli.app, "show", "1", "--archive", url)
    assert "host checks" in shown and "swappiness" in shown and "recommended" in shown
    assert "3 (<= 10)" in shown
