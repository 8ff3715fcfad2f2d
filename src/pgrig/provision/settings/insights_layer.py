"""The insights layer: what pgrig adds to a managed environment so runs can say *why*.

A layer of its own, just above PostgreSQL's defaults and below the profile, so every user
setting wins, except shared_preload_libraries, which is merged: the user's libraries stay
first and pg_stat_statements and auto_explain are appended when missing (the user's own list
is never hidden). Libraries the build lacks are left out (see `available_libraries`).

- pg_stat_statements with track = all: statements nested in functions (TPC-C's PL/pgSQL
  transactions) are counted too, not only the top-level call.
- auto_explain, JSON with ANALYZE and BUFFERS, timing off (per-node clock reads are the costly
  part), nested statements included. It stays silent (log_min_duration = -1) outside runs:
  during a run the collector turns it on with a sample rate that keeps the number of plans per
  run within a budget (insights/sampling.py), through RUNTIME_KEYS of this layer.
- log_checkpoints, log_autovacuum_min_duration = 0, log_lock_waits and log_temp_files = 0: the
  server log then tells the checkpoint, autovacuum, lock and temp-file stories of a run.

Environment.insights = False (`pgrig env set NAME --no-insights`) makes the layer empty.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pgrig.provision.state.environment import Environment

LIBRARIES = ("pg_stat_statements", "auto_explain")
PRELOAD = "shared_preload_libraries"
LOG_SETTINGS = {
    "log_checkpoints": "on",
    "log_autovacuum_min_duration": "0",
    "log_lock_waits": "on",
    "log_temp_files": "0",
}
STATEMENTS_SETTINGS = {"pg_stat_statements.track": "all"}
AUTO_EXPLAIN_SETTINGS = {
    "auto_explain.log_format": "json",
    "auto_explain.log_analyze": "on",
    "auto_explain.log_buffers": "on",
    "auto_explain.log_timing": "off",
    "auto_explain.log_nested_statements": "on",
    "auto_explain.log_min_duration": "-1",  # off until a run turns it on
    "auto_explain.sample_rate": "1",
}
# What the collector changes while a run lasts (the rest of the layer stays as it is).
RUNTIME_KEYS = ("auto_explain.log_min_duration", "auto_explain.sample_rate")

# Run by pgrig's own sessions (sampler, collector) so their queries neither count as the
# workload's statements nor fill the log with plans; best effort (needs a superuser).
QUIET_SESSION_SQL = (
    "SELECT set_config('pg_stat_statements.track', 'none', false), "
    "set_config('auto_explain.log_min_duration', '-1', false)"
)


def settings(env: Environment) -> dict[str, str]:
    """The layer of `env` ({} for external servers and environments with insights off)."""
    if not env.managed or not getattr(env, "insights", True) or not env.bindir:
        return {}
    libs = available_libraries(env.bindir)
    out: dict[str, str] = {}
    if libs:
        out[PRELOAD] = ",".join(libs)
    if "pg_stat_statements" in libs:
        out.update(STATEMENTS_SETTINGS)
    if "auto_explain" in libs:
        out.update(AUTO_EXPLAIN_SETTINGS)
    out.update(LOG_SETTINGS)
    return out


@functools.lru_cache(maxsize=16)
def available_libraries(bindir: str) -> tuple[str, ...]:
    """Which of LIBRARIES this build ships (a server refuses to start with a missing one)."""
    libdir = _pkglibdir(bindir)
    if libdir is None:
        return ()
    return tuple(lib for lib in LIBRARIES if (libdir / f"{lib}.so").exists())


@functools.lru_cache(maxsize=16)
def jit_available(bindir: str) -> bool:
    """Whether this build can JIT-compile queries: its provider (llvmjit.so) is installed. A
    build without LLVM accepts jit = on and compiles nothing."""
    libdir = _pkglibdir(bindir)
    return libdir is not None and (libdir / "llvmjit.so").exists()


def _pkglibdir(bindir: str) -> Path | None:
    try:
        out = subprocess.run(
            [str(Path(bindir) / "pg_config"), "--pkglibdir"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    if out and Path(out).is_dir():
        return Path(out)
    guess = Path(bindir).parent / "lib"  # builds without pg_config keep modules beside bin/
    return guess if guess.is_dir() else None


def split_libraries(value: str | None) -> list[str]:
    """shared_preload_libraries as a list: comma-separated, optionally quoted names."""
    out = []
    for part in (value or "").split(","):
        name = part.strip().strip('"').strip()
        if name:
            out.append(name)
    return out


def merge_preload(user_value: str, layer_value: str) -> str:
    """The user's libraries first, then the layer's that are not among them."""
    libs = split_libraries(user_value)
    seen = {lib.lower() for lib in libs}
    libs += [lib for lib in split_libraries(layer_value) if lib.lower() not in seen]
    return ",".join(libs)


def missing_libraries(loaded: str | None, wanted: tuple[str, ...] = LIBRARIES) -> list[str]:
    """Which of `wanted` a server's shared_preload_libraries value does not load."""
    have = {lib.lower() for lib in split_libraries(loaded)}
    return [lib for lib in wanted if lib not in have]
