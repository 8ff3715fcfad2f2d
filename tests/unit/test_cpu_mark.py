"""The host checks' CPU share measured since a mark: no 0.5 s pause on the run's path."""

from __future__ import annotations

import time

from pgrig.machine import checks


def test_a_mark_replaces_the_pause() -> None:
    mark = checks.cpu_mark()
    assert mark is not None
    time.sleep(checks.MIN_MARKED_S)
    ctx = checks.Context(sample_s=5.0, cpu_since=mark)  # would sleep 5 s without the mark
    started = time.monotonic()
    share = checks._cpu_sample(ctx)
    assert time.monotonic() - started < 1.0
    assert share is not None and share.window.startswith("over the ")
    assert share.window.endswith(" s before the run")


def test_a_fresh_mark_falls_back_to_the_window() -> None:
    ctx = checks.Context(sample_s=0.05, cpu_since=checks.cpu_mark())
    share = checks._cpu_sample(ctx)
    assert share is not None and share.window in ("over 0.05 s", "since boot")
