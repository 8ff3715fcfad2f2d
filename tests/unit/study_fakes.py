"""Fakes for the study and report tests: a backend that makes synthetic runs, record factories.

The synthetic TPS model is deterministic given a seed: a base level changed by a few settings
(synchronous_commit=off: x1.6, shared_buffers=1GB: x1.2), times small multiplicative noise.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from pgrig.archive.records import LatencyStats, RunRecord
from pgrig.request import RunRequest
from pgrig.study.spec import DatasetSpec, EnvSpec

EFFECTS = {("synchronous_commit", "off"): 1.6, ("shared_buffers", "1GB"): 1.2}


def model_tps(settings: dict[str, str], clients: int = 8) -> float:
    tps = 1000.0 * min(clients, 8) / 8 + 200
    for (name, value), factor in EFFECTS.items():
        if settings.get(name) == value:
            tps *= factor
    return tps


def per_second(tps: float, seconds: int, warmup: int, rng: random.Random, drift: float = 0.0):
    t = list(range(-warmup, seconds))
    y = []
    for x in t:
        level = tps * (0.7 if x < 0 else 1.0) * (1 + drift * max(x, 0) / max(seconds, 1))
        y.append(level * (1 + rng.gauss(0, 0.02)))
    return {
        "t": [float(v) for v in t],
        "tps": y,
        "p50": [8000.0 / v for v in y],
        "p95": [15000.0 / v for v in y],
        "p99": [20000.0 / v for v in y],
        "max": [30000.0 / v for v in y],
    }


def make_record(
    *,
    tps: float,
    env_name: str = "e1",
    study: str | None = None,
    point: str | None = None,
    repeat: int = 0,
    status: str = "ok",
    seconds: int = 20,
    warmup: int = 3,
    seed: int = 0,
    drift: float = 0.0,
    note: str | None = None,
    workload: str = "pgbench:tpcb-like",
    clients: int = 8,
    settings: dict[str, str] | None = None,
) -> RunRecord:
    rng = random.Random(seed)
    started = datetime(2025, 1, 1, tzinfo=UTC) + timedelta(minutes=seed)
    rec = RunRecord(
        env_name=env_name,
        workload=workload,
        clients=clients,
        threads=2,
        status="running",
        started_at=started,
        study=study,
        study_point=point,
        repeat=repeat,
        server_version="15.18",
        server_major=15,
        scenario="pgbench",
        scale=10,
        duration_s=float(seconds),
        warmup_s=float(warmup),
        note=note,
        host={"hostname": "testhost", "cpus": 2},
        settings={
            k: {"setting": v, "boot_val": "x", "source": "configuration file", "unit": None}
            for k, v in (settings or {}).items()
        },
    )
    if status == "ok":
        series = per_second(tps, seconds, warmup, rng, drift)
        rec.tps = tps
        rec.measured_s = float(seconds)
        rec.transactions = int(tps * seconds)
        rec.failed = 0
        rec.latency = LatencyStats(
            avg=8000 / tps, p50=8000 / tps, p90=12000 / tps, p95=15000 / tps, p99=20000 / tps,
            max=30000 / tps,
        )  # fmt: skip
        rec.cpu_user, rec.cpu_system, rec.cpu_iowait, rec.cpu_idle = 55.0, 25.0, 5.0, 15.0
        rec.hit_ratio = 99.1
        rec.series = {"pgbench": series}
    else:
        rec.error = "pgbench: connection refused"
    rec.status = status  # type: ignore[assignment]
    rec.ended_at = started + timedelta(seconds=seconds + warmup)
    return rec


class FakeBackend:
    """Records every call; execute() archives a synthetic run (begin + finish, like the runner)."""

    def __init__(
        self,
        noise: float = 0.01,
        running: set[str] | None = None,
        fail_at: set[int] | None = None,
        interrupt_at: int | None = None,
        interruption: type[KeyboardInterrupt] | KeyboardInterrupt = KeyboardInterrupt,
        bad_settings: dict[str, str] | None = None,
        missing_env: str | None = None,
        busy_at: set[int] | None = None,
        decorate: Callable[[RunRecord, RunRequest], None] | None = None,
    ):
        self.noise = noise
        self.decorate = decorate  # adds to each run what a test needs (e.g. hosts' figures)
        self.busy_at = busy_at or set()  # runs that report a busy host
        self.fail_at = fail_at or set()
        self.interrupt_at = interrupt_at
        self.interruption = interruption  # what reaches the study: Ctrl-C, or SIGTERM's Terminated
        self.bad_settings = bad_settings or {}
        self.missing_env = missing_env
        self.calls: list[tuple[Any, ...]] = []
        self.settings: dict[str, dict[str, str]] = {}
        self.running: set[str] = set(running or ())
        self.executed = 0
        self.rng = random.Random(42)

    def check_environment(self, env: EnvSpec) -> None:
        from pgrig.study.spec import StudySpecError

        self.calls.append(("check", env.name))
        if env.name == self.missing_env:
            raise StudySpecError(f"{env.path}.version: PostgreSQL {env.version} is not installed")

    def validate_settings(
        self, env: EnvSpec, settings: dict[str, str], origins: dict[str, str]
    ) -> None:
        from pgrig.study.spec import StudySpecError

        self.calls.append(("validate", env.name, dict(settings)))
        for name, value in settings.items():
            if self.bad_settings.get(name) == value:
                raise StudySpecError(f"{origins[name]}: invalid value for {name}: {value!r}")

    def ensure_environment(self, env: EnvSpec) -> bool:
        self.calls.append(("ensure", env.name))
        started = env.name not in self.running
        self.running.add(env.name)
        return started

    def apply_settings(self, env: EnvSpec, settings: dict[str, str]) -> None:
        self.calls.append(("apply", env.name, dict(settings)))
        self.settings[env.name] = dict(settings)

    def prepare_dataset(self, env: EnvSpec, dataset: DatasetSpec, force: bool) -> bool:
        self.calls.append(("dataset", env.name, force))
        return True

    def action(self, env: EnvSpec, action: str, database: str | None) -> None:
        self.calls.append(("action", env.name, action))

    def stop(self, env: EnvSpec) -> None:
        self.calls.append(("stop", env.name))
        self.running.discard(env.name)

    def restore(self, env: EnvSpec) -> None:
        self.calls.append(("restore", env.name))

    def execute(self, spec: RunRequest, archive: Any, console: Any) -> RunRecord:
        n = self.executed
        self.executed += 1
        self.calls.append(("execute", spec.study_point, spec.repeat))
        if self.interrupt_at is not None and n == self.interrupt_at:
            raise self.interruption
        settings = self.settings.get(spec.env_name, {})
        tps = model_tps(settings, spec.clients) * math.exp(self.rng.gauss(0, self.noise))
        rec = make_record(
            tps=tps,
            env_name=spec.env_name,
            study=spec.study,
            point=spec.study_point,
            repeat=spec.repeat,
            status="failed" if n in self.fail_at else "ok",
            seconds=int(spec.duration_s or 10),
            warmup=int(spec.warmup_s),
            seed=n,
            note=spec.note,
            workload=spec.workload,
            clients=spec.clients,
            settings=settings,
        )
        rec.tags = dict(spec.tags)
        if n in self.busy_at:
            rec.add_warning("busy_host", "busy host: other processes used 97% of one core")
        if self.decorate is not None and rec.status == "ok":
            self.decorate(rec, spec)
        started, ended, status = rec.started_at, rec.ended_at, rec.status
        rec.status, rec.ended_at = "running", None
        archive.begin_run(rec)
        rec.status, rec.started_at, rec.ended_at = status, started, ended
        archive.finish_run(rec)
        return rec


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


# The [run] table most test studies share; study_toml(..., key=value) changes or adds a key,
# key=None leaves it out.
RUN = {"workload": "pgbench:select-only", "clients": 4, "threads": 2, "duration": 5}


def study_toml(
    name: str,
    *,
    repeats: int | None = None,
    study: dict[str, object] | None = None,
    environment: dict[str, object] | None = None,
    **run: object,
) -> str:
    """A study file's head (pgbench scale 1 on PostgreSQL 15); iterations or a sweep go after.

    One key a line, so tests can change the text with str.replace("clients = 4", ...).
    """
    sections = {
        "study": {"name": name, **({"repeats": repeats} if repeats is not None else {}),
                  **(study or {})},
        "environment": {"version": "15", **(environment or {})},
        "dataset": {"scenario": "pgbench", "scale": 1},
        "run": {k: v for k, v in {**RUN, **run}.items() if v is not None},
    }  # fmt: skip
    return "".join(_table(f"[{title}]", values) for title, values in sections.items())


def iterations_toml(*iterations: dict[str, object]) -> str:
    """[[iterations]] tables to go after study_toml(...), one key a line like it."""
    return "".join(_table("[[iterations]]", values) for values in iterations)


def _table(header: str, values: dict[str, object]) -> str:
    return f"\n{header}\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in values.items())


def archive_at(tmp_path) -> Any:
    from pgrig.archive.store import Archive

    return Archive(f"sqlite:///{tmp_path / 'archive.sqlite'}")
