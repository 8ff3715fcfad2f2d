"""The dataset request: what `pgrig db generate` and a study's [dataset] table ask for.

Each option belongs to one scenario; given with another one it is refused, not ignored. The
scenario's defaults are filled in (scale 1, 2 loader jobs, the tickets seed's 5,000,000 rows),
so the request says exactly what gets generated.
"""

from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, model_validator

from pgrig.request.fields import INT_MAX, STRICT, flag_field
from pgrig.request.problems import Refusal
from pgrig.request.vocabulary import RESERVED_DATABASES, Scenario

__all__ = ["DatasetRequest"]

# The scenarios each option applies to.
_OPTION_SCENARIOS: dict[str, tuple[str, ...]] = {
    "scale": ("pgbench",),
    "partitions": ("pgbench",),
    "warehouses": ("tpcc",),
    "partition": ("tpcc",),
    "rows": ("tickets",),
    "jobs": ("tpcc", "tickets"),
    "sql": ("custom",),
    "tables": ("sysbench",),
    "table_size": ("sysbench",),
}
_REQUIRED = {"tpcc": "warehouses", "custom": "sql"}
TICKETS_ROWS = 5_000_000  # seed 003's table
_DEFAULTS: dict[str, dict[str, Any]] = {
    "pgbench": {"scale": 1},
    "tpcc": {"jobs": 2},
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
    warehouses: int | None = flag_field("--warehouses", default=None, ge=1, le=INT_MAX)
    partition: bool = flag_field("--partition", default=False)  # TPC-C: partition by warehouse
    rows: int | None = flag_field("--rows", default=None, ge=1, le=2**62)
    jobs: int | None = flag_field("--jobs", default=None, ge=1, le=1024)  # parallel loaders
    sql: str | None = flag_field("--sql", default=None, alias="init", min_length=1)
    tables: int | None = flag_field("--tables", default=None, ge=1, le=10_000)  # sysbench
    table_size: int | None = flag_field("--table-size", default=None, ge=1, le=2**31 - 1)

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        defaults = _DEFAULTS.get(data.get("scenario", "pgbench"), {})
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
            if self.scenario not in scenarios and getattr(self, name) not in (None, False)
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
        if self.scenario == "tpcc":
            return f"{self.warehouses} warehouses"
        if self.scenario == "tickets":
            return f"{self.rows:,} rows"
        if self.scenario == "custom":
            return Path(self.sql or "").name
        if self.scenario == "sysbench":
            return f"{self.tables} tables of {self.table_size:,} rows"
        return f"scale {self.scale}"
