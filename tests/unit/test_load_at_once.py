"""The prelude of a run with load hosts works on every host at once (load/remote/multi_load.py):
results by host in the hosts' order, the first failure in that order raised after all ended,
and transports that did open closed again when another could not."""

from __future__ import annotations

import threading
import time

import pytest

from pgrig.errors import PgrigError
from pgrig.load.remote.multi_load import at_once, open_transports


def test_every_host_at_once_results_in_order() -> None:
    running, most = 0, 0
    lock = threading.Lock()

    def work(delay: float) -> float:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(delay)
        with lock:
            running -= 1
        return delay * 2

    out = at_once({"c": 0.2, "a": 0.1, "b": 0.15}, work)
    assert list(out.items()) == [("c", 0.4), ("a", 0.2), ("b", 0.3)]
    assert most == 3  # all three were in flight together


def test_the_first_failure_in_host_order_is_raised_after_all_ended() -> None:
    ended: list[str] = []

    def work(name: str) -> str:
        time.sleep(0.05 if name == "h1" else 0.0)
        ended.append(name)
        if name in ("h1", "h3"):
            raise PgrigError(f"host {name}: unreachable")
        return name

    with pytest.raises(PgrigError, match="host h1: unreachable"):
        at_once({"h1": "h1", "h2": "h2", "h3": "h3"}, work)
    assert sorted(ended) == ["h1", "h2", "h3"]


class FakeTransport:
    def __init__(self, name: str) -> None:
        self.name = name
        self.closed: float | None = None

    def close(self, timeout: float) -> int | None:
        self.closed = timeout
        return 0


def test_opened_transports_are_closed_when_another_cannot_open() -> None:
    opened: list[FakeTransport] = []

    def opener(name: str) -> FakeTransport:
        if name == "h2":
            raise PgrigError("host h2: unknown host key")
        t = FakeTransport(name)
        opened.append(t)
        return t

    with pytest.raises(PgrigError, match="unknown host key"):
        open_transports(["h1", "h2", "h3"], opener)  # type: ignore[arg-type]
    assert sorted(t.name for t in opened) == ["h1", "h3"]
    assert all(t.closed is not None for t in opened)
    got = open_transports(["h1", "h3"], opener)  # type: ignore[arg-type]
    assert [t.name for t in got] == ["h1", "h3"] and all(t.closed is None for t in got)
