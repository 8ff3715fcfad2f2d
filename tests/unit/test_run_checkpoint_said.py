"""The CHECKPOINT before a run is said while it lasts when it is long (issue 43, class 5):
after a `db generate` on an environment limited to wiops=30, `pgrig run` printed nothing for
33 s while that checkpoint wrote the dirty pages at the limit's pace."""

from __future__ import annotations

import io
import threading
from typing import Any

import pytest
from rich.console import Console

from pgrig.load.core import runner
from pgrig.metrics import pg_snapshot


class _Said(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.event = threading.Event()

    def write(self, s: str) -> int:
        n = super().write(s)
        self.event.set()
        return n


def _console() -> tuple[Console, _Said]:
    out = _Said()
    return Console(file=out, width=300), out


def test_a_long_checkpoint_is_said_with_the_limit_it_writes_under(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    console, out = _console()
    monkeypatch.setattr(runner, "CHECKPOINT_QUIET_S", 0.0)
    # the checkpoint lasts until the notice is out: no timing is assumed
    monkeypatch.setattr(pg_snapshot, "checkpoint", lambda _conn: out.event.wait(30))
    disk: Any = {"limit": {"wiops": 30}, "text": "wiops=30", "in_force": True}
    runner._checkpoint(None, console, disk)  # type: ignore[arg-type]
    assert out.getvalue() == (
        "· waiting for the checkpoint before the run to write the dirty pages (its writes "
        "under the disk limit wiops=30)\n"
    )


def test_a_quick_checkpoint_says_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    console, out = _console()
    done: list[object] = []
    monkeypatch.setattr(pg_snapshot, "checkpoint", done.append)
    runner._checkpoint(None, console, None)  # type: ignore[arg-type]
    assert done == [None] and out.getvalue() == ""
