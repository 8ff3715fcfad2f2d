"""The scenario seam: what a run needs from the scenario its database holds (pgbench's own
tables, TPC-C, tickets), behind one `Scenario` protocol, so the run orchestrator (load/) holds
no scenario branches. A scenario gives the scripts a run executes against that database (with
their -D values and the retries it recommends) and adds its own figures to a finished run's
record (TPC-C's NOPM). Adding a scenario means one class here, nothing in load/.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import DatasetDoc
from pgrig.request import RunRequest, ScriptSpec


@dataclass(frozen=True)
class RunScripts:
    """What a run executes: its scripts, their -D values, the retries its scenario recommends."""

    scripts: list[ScriptSpec]
    defines: dict[str, str] = field(default_factory=dict)
    max_tries: int = 1


class Scenario(Protocol):
    """One scenario, as a run sees it."""

    name: str

    def run_scripts(
        self,
        spec: RunRequest,
        env: Environment,
        dbname: str,
        work: Path,
        dataset: DatasetDoc,
    ) -> RunScripts:
        """The scripts to run on `dbname` (which holds `dataset`); a PgrigError if it cannot
        serve this scenario (no such data)."""
        ...

    def add_results(self, rec: RunRecord) -> None:
        """The scenario's own figures, from the run's per-script results (measured window)."""
        ...


WAREHOUSES = ("--warehouses", "warehouses", "W")


def _require_data(
    env: Environment,
    dbname: str,
    dataset: DatasetDoc,
    accepted: tuple[str, ...],
    label: str,
    size: tuple[str, str, str],
) -> None:
    """Refuse a run whose database holds none of the `accepted` scenarios' data, saying what
    it holds and the `db generate` that makes the first one in that same database. `size`:
    the size's flag, its key in the dataset and a placeholder ("--warehouses", "warehouses",
    "W"): the size of the data there when it has one (TPC-C's 4 warehouses, which CH-benCHmark's
    data is made of), else the placeholder for a person to fill in."""
    found = dataset.get("scenario")
    if found in accepted:
        return
    flag, key, placeholder = size
    known = dataset.get(key)
    sized = (flag, str(known)) if known else ()
    cmd = pgrig_command(
        "db", "generate", env.name, "--db", dbname, "--scenario", accepted[0], *sized,
        rest="" if sized else f"{flag} {placeholder}",
    )  # fmt: skip
    raise PgrigError(
        f"database {dbname!r} of {env.name} holds no {label} data"
        + (f" (it holds {found})" if found else "")
        + f": run `{cmd}` first"
    )


class ScriptsAsGiven:
    """pgbench's built-in scripts and custom scripts: run as given, no figures of their own."""

    name = "scripts"

    def run_scripts(
        self,
        spec: RunRequest,
        env: Environment,
        dbname: str,
        work: Path,
        dataset: DatasetDoc,
    ) -> RunScripts:
        return RunScripts(list(spec.scripts), {}, spec.max_tries)

    def add_results(self, rec: RunRecord) -> None:
        return None


class Tpcc:
    """TPC-C: scripts written per run against the loaded warehouses; NOPM, TPM, rollbacks."""

    name = "tpcc"

    def run_scripts(
        self,
        spec: RunRequest,
        env: Environment,
        dbname: str,
        work: Path,
        dataset: DatasetDoc,
    ) -> RunScripts:
        from pgrig.workloads import tpcc

        # CH-benCHmark's data is TPC-C's and more
        _require_data(env, dbname, dataset, ("tpcc", "chbench"), "TPC-C", WAREHOUSES)
        scripts, defines, max_tries = tpcc.pgbench_scripts(
            work,
            warehouses=int(dataset["warehouses"]),
            mix=spec.tpcc_mix,
            all_warehouses=spec.all_warehouses,
            conninfo=env.conninfo(dbname),
            protocol=spec.protocol,
            stock_level=spec.tpcc_stock_level,
        )
        return RunScripts(scripts, defines, max_tries)

    def add_results(self, rec: RunRecord) -> None:
        if not rec.scripts or not rec.measured_s:
            return
        from pgrig.workloads import tpcc

        figures = tpcc.summarize(rec.scripts, rec.measured_s)
        rec.nopm = figures.get("nopm")
        rec.tpm = figures.get("tpm")
        rec.rollbacks = figures.get("rollbacks")
        rec.extra["tpcc"] = figures


class Chbench(Tpcc):
    """CH-benCHmark: TPC-C's transactions, scripts and figures (NOPM) on CH-benCHmark's data;
    the analytic streams beside them are the load engine's (load/engines/chbench_driver.py)."""

    name = "chbench"

    def run_scripts(
        self,
        spec: RunRequest,
        env: Environment,
        dbname: str,
        work: Path,
        dataset: DatasetDoc,
    ) -> RunScripts:
        # TPC-C's tables alone lack the queries' three
        _require_data(env, dbname, dataset, ("chbench",), "CH-benCHmark", WAREHOUSES)
        return super().run_scripts(spec, env, dbname, work, dataset)


class Tpch:
    """TPC-H: its queries come from workloads/tpch (the load engine runs them,
    load/engines/tpch_driver.py), which also records its figures; here the data is checked."""

    name = "tpch"

    def run_scripts(
        self,
        spec: RunRequest,
        env: Environment,
        dbname: str,
        work: Path,
        dataset: DatasetDoc,
    ) -> RunScripts:
        _require_data(
            env, dbname, dataset, ("tpch",), "TPC-H", ("--scale-factor", "scale_factor", "SF")
        )
        return RunScripts([], {}, 1)

    def add_results(self, rec: RunRecord) -> None:
        return None


class Tickets:
    """Seed 003's tickets: the read script's id range comes from the loaded row count."""

    name = "tickets"

    def run_scripts(
        self,
        spec: RunRequest,
        env: Environment,
        dbname: str,
        work: Path,
        dataset: DatasetDoc,
    ) -> RunScripts:
        from pgrig.workloads import tickets

        return RunScripts(
            list(spec.scripts), tickets.defines(dict(dataset), env.name, dbname), spec.max_tries
        )

    def add_results(self, rec: RunRecord) -> None:
        return None


def of(workload: str, script_names: Iterable[str]) -> Scenario:
    """The scenario a run of `workload` with these scripts belongs to."""
    if workload == "tpcc":
        return Tpcc()
    if workload == "chbench":
        return Chbench()
    if workload.startswith("tpch:"):
        return Tpch()
    if any(name.startswith("tickets:") for name in script_names):
        return Tickets()
    return ScriptsAsGiven()
