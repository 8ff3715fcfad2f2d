"""Datasets: generating one (`pgrig db generate` and studies alike), and what data each
database of an environment holds (<env dir>/datasets.json).

The record is read by the runner so every run records its scenario, scale and the generation
cost next to its results, and by studies to skip generating data that is already there.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pgrig.provision.environment import DEFAULT_DATABASE, Environment
from pgrig.request import DatasetRequest

Progress = Callable[[float, float, str], None]  # (done, total, phase)


def generate(
    env: Environment, request: DatasetRequest, progress: Progress | None = None
) -> dict[str, Any]:
    """Generate the requested data (replacing what the scenario's tables held) and record it."""
    dbname = request.database or DEFAULT_DATABASE
    if request.scenario == "pgbench":
        from pgrig.workloads import pgbench_data

        info = pgbench_data.generate(env, dbname, request.scale or 1, request.partitions, progress)
    elif request.scenario == "tpcc":
        from pgrig.workloads import database, tpcc

        database.ensure_database(env, dbname)
        info = tpcc.generate(
            env.conninfo(dbname),
            warehouses=request.warehouses or 1,
            jobs=request.jobs or 2,
            partition=request.partition,
            progress=progress,
        )
        info = {"scenario": "tpcc", **info}
    elif request.scenario == "tickets":
        from pgrig.workloads import tickets

        info = tickets.generate(
            env, dbname, rows=request.rows or tickets.DEFAULT_ROWS, jobs=request.jobs or 2,
            progress=progress,
        )  # fmt: skip
    else:
        from pgrig.workloads import custom_sql

        info = custom_sql.generate(env, dbname, Path(request.sql or ""))
    record(env, dbname, info)
    return info


def matches(info: dict[str, Any] | None, request: DatasetRequest) -> bool:
    """Whether a recorded dataset is the requested one (then a study need not generate it)."""
    if not info or info.get("scenario") != request.scenario:
        return False
    if request.scenario == "pgbench":
        return info.get("scale") == request.scale and info.get("partitions") == request.partitions
    if request.scenario == "tpcc":
        return info.get("warehouses") == request.warehouses
    if request.scenario == "tickets":
        return info.get("rows") == request.rows
    return info.get("sql") == str(Path(request.sql or "").resolve())


def _file(env: Environment) -> Path:
    return env.dir / "datasets.json"


def load_all(env: Environment) -> dict[str, dict[str, Any]]:
    f = _file(env)
    if not f.exists():
        return {}
    return json.loads(f.read_text())


def get(env: Environment, dbname: str) -> dict[str, Any] | None:
    return load_all(env).get(dbname)


def record(env: Environment, dbname: str, info: dict[str, Any]) -> None:
    data = load_all(env)
    data[dbname] = {**info, "generated_at": datetime.now(UTC).isoformat(timespec="seconds")}
    env.dir.mkdir(parents=True, exist_ok=True)
    tmp = _file(env).with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, _file(env))
