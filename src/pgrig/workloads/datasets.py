"""What data each database of an environment holds: <env dir>/datasets.json.

Written by `pgrig db generate`, read by the runner so every run records its scenario, scale and
the generation cost next to its results.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pgrig.provision.environment import Environment


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
