"""Seed 003's tickets scenario: book.tickets (id, fkride, fio, contact jsonb, fkseat) with the
name tables book.fam and book.nam, and its two pgbench scripts.

Public API:
- generate(env, dbname, rows=5_000_000, jobs=2, progress=None) -> dataset info dict
- WORKLOADS: {"read": path, "write": path}; script_path(name) -> Path
- scripts(names) -> list[ScriptSpec]; defines(dataset info) -> {"rows": "N"} for pgbench -D
"""

from __future__ import annotations

from pathlib import Path

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.request import ScriptSpec
from pgrig.workloads.tickets.generate import DEFAULT_ROWS, generate

HERE = Path(__file__).parent
PREFIX = "tickets:"
WORKLOADS = {"read": HERE / "read.sql", "write": HERE / "write.sql"}

__all__ = ["DEFAULT_ROWS", "PREFIX", "WORKLOADS", "defines", "generate", "script", "script_path"]


def script_path(name: str) -> Path:
    if name not in WORKLOADS:
        raise PgrigError(
            f"unknown tickets workload {name!r} (choose from "
            f"{', '.join(PREFIX + n for n in WORKLOADS)})"
        )
    return WORKLOADS[name]


def script(name: str, weight: int = 1) -> ScriptSpec:
    """tickets:read / tickets:write as a pgbench script file shipped with pgrig."""
    return ScriptSpec(name=PREFIX + name, path=str(script_path(name)), weight=weight)


def defines(info: dict | None, env_name: str, dbname: str) -> dict[str, str]:
    """pgbench -D values the scripts need (the id range of the read script)."""
    if not info or info.get("scenario") != "tickets" or not info.get("rows"):
        raise PgrigError(
            f"database {dbname!r} of {env_name} holds no tickets data: run `"
            + pgrig_command(
                "db", "generate", env_name, "--db", dbname, "--scenario", "tickets", rest="--rows N"
            )
            + "` first"
        )
    return {"rows": str(int(info["rows"]))}
