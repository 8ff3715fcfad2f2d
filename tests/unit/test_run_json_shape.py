"""`pgrig run --json` answers in one shape whether the run ended or was interrupted (issue 43,
output truth): an interrupted single run printed a list of one where an ended one printed the
object, so a script reading `.id` broke exactly when a run was stopped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from pgrig.cli import common
from pgrig.cli import run as run_cli
from pgrig.load.core import repeats
from pgrig.load.core.run_steps import RunInterrupted


def _answer(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], repeat: int, stop: bool
) -> Any:
    done = [SimpleNamespace(id=i + 1, status="ok") for i in range(repeat - 1 if stop else repeat)]

    def each(*_args: object, **_kwargs: object) -> Iterator[object]:
        yield from done
        if stop:
            stopped = SimpleNamespace(id=repeat, status="aborted", error="interrupted by the user")
            raise RunInterrupted(stopped)  # type: ignore[arg-type]

    monkeypatch.setattr(repeats, "each", each)
    monkeypatch.setattr(common, "open_archive", lambda _archive: None)
    monkeypatch.setattr(run_cli, "_stored_json", lambda _store, r: {"id": r.id, "status": r.status})
    if stop:
        with pytest.raises(SystemExit) as e:
            run_cli._execute_repeats(None, repeat, None, True)  # type: ignore[arg-type]
        assert e.value.code == 130
    else:
        run_cli._execute_repeats(None, repeat, None, True)  # type: ignore[arg-type]
    return json.loads(capsys.readouterr().out)


def test_one_run_is_one_object_ended_or_interrupted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _answer(monkeypatch, capsys, 1, stop=False) == {"id": 1, "status": "ok"}
    assert _answer(monkeypatch, capsys, 1, stop=True) == {"id": 1, "status": "aborted"}


def test_repeats_are_a_list_ended_or_interrupted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert [d["status"] for d in _answer(monkeypatch, capsys, 2, stop=False)] == ["ok", "ok"]
    assert [d["status"] for d in _answer(monkeypatch, capsys, 2, stop=True)] == ["ok", "aborted"]


def test_an_interrupted_run_says_why_last_on_stderr_with_json_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 43, pass 3: `pgrig run --json` stopped by Ctrl-C printed its record on stdout and
    nothing on stderr, where a failed run's reason comes last (docs/development.md)."""
    said: list[str] = []
    monkeypatch.setattr(run_cli, "_say_why_not_ok", lambda records: said.extend(
        f"run {r.id} {r.status}" for r in records if r.status != "ok"
    ))  # fmt: skip
    _answer(monkeypatch, capsys, 2, stop=True)
    assert said == ["run 2 aborted"]
