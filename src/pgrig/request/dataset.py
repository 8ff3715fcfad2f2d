"""The dataset request: what `pgrig db generate` and a study's [dataset] table ask for.

Each option belongs to one scenario; given with another one it is refused, not ignored. The
scenario's defaults are filled in (scale 1, 2 loader jobs, the tickets seed's 5,000,000 rows),
so the request says exactly what gets generated.
"""

from pathlib import Path
from typing import Self

from pydantic import BaseModel, model_validator

from pgrig.request.fields import INT_MAX, STRICT, flag_field
from pgrig.request.load import Defines
from pgrig.request.problems import Refusal
from pgrig.request.vocabulary import RESERVED_DATABASES, Scenario

__all__ = ["DatasetRequest"]

# The scenarios each option applies to.
_OPTION_SCENARIOS: dict[str, tuple[str, ...]] = {
    "scale": ("pgbench",),
    "scale_factor": ("tpch",),
    "partitions": ("pgbench",),
    "warehouses": ("tpcc", "chbench"),
    "partition": ("tpcc", "chbench"),
    "rows": ("tickets",),
    "jobs": ("tpcc", "chbench", "tickets", "sysbench", "tpch"),
    "sql": ("custom",),
    "tables": ("sysbench",),
    "table_size": ("sysbench",),
    "script": ("sysbench",),
    "defines": ("sysbench",),
}
_REQUIRED = {"tpcc": "warehouses", "chbench": "warehouses", "custom": "sql"}
TICKETS_ROWS = 5_000_000  # seed 003's table
_DEFAULTS: dict[str, dict[str, int | float]] = {
    "pgbench": {"scale": 1},
    "tpcc": {"jobs": 2},
    "chbench": {"jobs": 2},
    "tpch": {"scale_factor": 1.0, "jobs": 2},
    "tickets": {"rows": TICKETS_ROWS, "jobs": 2},
    "sysbench": {"tables": 1, "table_size": 10_000},  # sysbench's own defaults
}
_WHY_RESERVED = {
    "template0": "a template database (CREATE DATABASE copies it)",
    "template1": "a template database (CREATE DATABASE copies it)",
    "postgres": "the maintenance database tools connect to",
}


class DatasetRequest(BaseModel):
    model_config = STRICT

    scenario: Scenario = flag_field("--scenario", default="pgbench")
    database: str | None = flag_field("--db", default=None, min_length=1)  # None: the env's default
    scale: int | None = flag_field("--scale", default=None, ge=1, le=INT_MAX)
    partitions: int | None = flag_field("--partitions", default=None, ge=1, le=INT_MAX)
    # TPC-H: 0.01 (tests) to 1,000: below 0.01 dbgen's tables lose rows, above it is days of
    # loading (the one place the limits are: workloads/tpch.check_scale_factor asks here)
    scale_factor: float | None = flag_field(
        "--scale-factor", default=None, ge=0.01, le=1000, allow_inf_nan=False
    )
    warehouses: int | None = flag_field("--warehouses", default=None, ge=1, le=INT_MAX)
    partition: bool = flag_field("--partition", default=False)  # TPC-C: partition by warehouse
    rows: int | None = flag_field("--rows", default=None, ge=1, le=2**62)
    jobs: int | None = flag_field("--jobs", default=None, ge=1, le=1024)  # parallel loaders
    sql: str | None = flag_field("--sql", default=None, alias="init", min_length=1)
    tables: int | None = flag_field("--tables", default=None, ge=1, le=10_000)  # sysbench
    table_size: int | None = flag_field("--table-size", default=None, ge=1, le=2**31 - 1)
    # sysbench: a Lua script whose own `prepare` makes the data, with its options (--define)
    script: str | None = flag_field("--script", default=None, min_length=1)
    defines: Defines = flag_field("--define", default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: object) -> object:
        if not isinstance(data, dict):
            return data
        defaults = _DEFAULTS.get(data.get("scenario", "pgbench"), {})
        if data.get("script") is not None:  # a script's own prepare: its options are defines
            defaults = {}
        return data | {k: v for k, v in defaults.items() if data.get(k) is None}

    @model_validator(mode="after")
    def _rules(self) -> Self:
        if self.database in RESERVED_DATABASES:
            raise Refusal(
                f"must not be {self.database}: it is {_WHY_RESERVED[self.database]}; "
                "generate into a database of its own (the default is pgrig)",
                field="database",
            )
        misplaced = [
            (name, scenarios)
            for name, scenarios in _OPTION_SCENARIOS.items()
            if self.scenario not in scenarios and getattr(self, name) not in (None, False, {})
        ]
        if misplaced:
            name, scenarios = misplaced[0]
            raise Refusal(
                lambda n: (
                    f"applies only to {n('scenario')} {' or '.join(scenarios)} "
                    f"(got {self.scenario!r})"
                ),
                field=name,
                others=("scenario",),
            )
        if self.defines and self.script is None:
            raise Refusal(
                lambda n: f"applies only with {n('script')} (a script's own options)",
                field="defines",
                others=("script",),
            )
        if self.script is not None:
            if not self.script.endswith(".lua"):
                raise Refusal(
                    f"must name a sysbench Lua script (got {self.script!r})", field="script"
                )
            given = [name for name in ("tables", "table_size") if getattr(self, name) is not None]
            if given:
                raise Refusal(
                    lambda n: (
                        f"does not apply with {n('script')}: give the script's own options "
                        f"with {n('defines')} (e.g. {n('defines')} tables=2)"
                    ),
                    field=given[0],
                    others=("script", "defines"),
                )
        required = _REQUIRED.get(self.scenario)
        if required and getattr(self, required) is None:
            raise Refusal(
                lambda n: f"is required for {n('scenario')} {self.scenario}",
                field=required,
                others=("scenario",),
            )
        return self

    def size_label(self) -> str:
        """How much data, for people: "scale 10", "2 warehouses", "5,000,000 rows", a file."""
        if self.scenario in ("tpcc", "chbench"):
            return f"{self.warehouses} warehouses"
        if self.scenario == "tickets":
            return f"{self.rows:,} rows"
        if self.scenario == "tpch":
            return f"scale factor {self.scale_factor:g}"
        if self.scenario == "custom":
            return Path(self.sql or "").name
        if self.scenario == "sysbench" and self.script is not None:
            defines = " ".join(f"{k}={v}" for k, v in self.defines.items())
            return f"{Path(self.script).name}" + (f" {defines}" if defines else "")
        if self.scenario == "sysbench":
            return f"{self.tables} tables of {self.table_size:,} rows"
        return f"scale {self.scale}"
