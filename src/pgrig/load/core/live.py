"""Live progress on stderr: elapsed/remaining time, current TPS and p95, refreshed once a second.

Rendering is cheap (one refresh per second) so the display never competes with the load.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.live import Live
from rich.text import Text


class LiveView:
    def __init__(self, console: Console, total_s: float | None, warmup_s: float, label: str):
        self.console = console
        self.total_s = total_s
        self.warmup_s = warmup_s
        self.label = label
        self.started = time.monotonic()
        self.tps: float | None = None
        self.p95_ms: float | None = None
        self.failed = 0
        self._live = Live(self._render(), console=console, refresh_per_second=1, transient=False)

    def __enter__(self) -> LiveView:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.update(self._render())
        self._live.__exit__(None, None, None)

    def update(
        self, tps: float | None = None, p95_ms: float | None = None, failed: int = 0
    ) -> None:
        if tps is not None:
            self.tps = tps
        if p95_ms is not None:
            self.p95_ms = p95_ms
        self.failed = failed
        self._live.update(self._render())

    def _render(self) -> Text:
        elapsed = time.monotonic() - self.started
        phase = "warm-up" if elapsed < self.warmup_s else "measuring"
        parts = [f"{self.label}  {phase}  {elapsed:6.1f}s"]
        if self.total_s:
            remaining = max(0.0, self.total_s - elapsed)
            frac = min(1.0, elapsed / self.total_s)
            bar = "█" * int(frac * 20) + "░" * (20 - int(frac * 20))
            parts.append(f"{bar} {remaining:5.0f}s left")
        parts.append(f"tps {self.tps:,.0f}" if self.tps is not None else "tps -")
        parts.append(f"p95 {self.p95_ms:.2f} ms" if self.p95_ms is not None else "p95 -")
        if self.failed:
            parts.append(f"failed {self.failed}")
        return Text("  ".join(parts))
