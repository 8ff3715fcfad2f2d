"""The `pgrig db generate` a refused run suggests (issue 43): the database the run named, every
argument shell-quoted, and the data's size where the database says it, not a placeholder."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pgrig.errors import PgrigError
from pgrig.workloads import scenario


def _refusal(cls: Any, dataset: dict[str, Any], dbname: str = "pgrig") -> str:
    env: Any = SimpleNamespace(name="lab")
    spec: Any = SimpleNamespace()
    with pytest.raises(PgrigError) as e:
        cls().run_scripts(spec, env, dbname, Path("/nonexistent"), dataset)
    return str(e.value)


def test_chbench_on_tpcc_data_suggests_the_warehouses_there() -> None:
    """CH-benCHmark's data is TPC-C's and three tables: the suggestion printed
    `--warehouses W` beside TPC-C data of 4 warehouses."""
    said = _refusal(scenario.Chbench, {"scenario": "tpcc", "warehouses": 4}, "tp cc")
    assert said == (
        "database 'tp cc' of lab holds no CH-benCHmark data (it holds tpcc): run "
        "`pgrig db generate lab --db 'tp cc' --scenario chbench --warehouses 4` first"
    )


def test_a_size_unknown_stays_a_placeholder() -> None:
    said = _refusal(scenario.Chbench, {"scenario": "pgbench", "scale": 1})
    assert said.endswith("--scenario chbench --warehouses W` first")
    said = _refusal(scenario.Tpch, {"scenario": "pgbench", "scale": 1})
    assert said.endswith(
        "`pgrig db generate lab --db pgrig --scenario tpch --scale-factor SF` first"
    )


def test_the_database_a_run_names_is_in_the_suggestion() -> None:
    """`pgrig run ENV --db other` on a database that does not exist suggested a `db generate`
    without --db: pasted, it filled the default database."""
    from pgrig.load.core import runner

    class Conn:
        def __enter__(self) -> Conn:
            return self

        def __exit__(self, *a: object) -> None:
            return None

        def execute(self, *a: object) -> Any:
            return SimpleNamespace(fetchone=lambda: None)  # no such database

    env: Any = SimpleNamespace(name="lab")
    with pytest.MonkeyPatch.context() as mp:
        from pgrig.workloads import database

        mp.setattr(database, "connect", lambda *a, **k: Conn())
        with pytest.raises(PgrigError) as e:
            runner._server_facts(env, "x;y", None)
    assert str(e.value) == (
        "database 'x;y' does not exist in lab: run `pgrig db generate lab --db 'x;y' ...` first"
    )
