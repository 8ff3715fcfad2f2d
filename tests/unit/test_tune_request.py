"""tune/request.py `build`, called without the CLI: each bad flag is one line naming it, said
before any environment is looked at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pgrig.errors import PgrigError
from pgrig.tune import request as tune_request


def _asked(**changed: Any) -> dict[str, Any]:
    base: dict[str, Any] = dict(
        env_name="nowhere", preset=None, workload=["pgbench:select-only"], scale=None, trials=2,
        budget=None, objective_name="tps", space_arg="default", allow_unsafe=False,
        duration="3s", warmup="0", clients=1, threads=1, confirm_repeats=2, ablation_repeats=0,
        ablation_units=1, study_name="t", db=None, seed=0,
    )  # fmt: skip
    return {**base, **changed}


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        ({"workload": []}, "--workload is required"),
        ({"trials": 0}, "--trials must be at least 1 (got 0)"),
        ({"ablation_repeats": -1}, "--ablation-repeats must be 0"),
        ({"ablation_units": 0}, "--ablation-units must be at least 1"),
        ({"scale": 0}, "--scale must be at least 1"),
        ({"confirm_repeats": 1}, "--confirm-repeats must be at least 2"),
        ({"budget": "soon"}, "--budget: "),
    ],
)
def test_bad_flags_are_refused_first(
    changed: dict[str, Any], message: str, pgrig_home: Path
) -> None:
    with pytest.raises(PgrigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tune_request.build(**_asked(**changed))


def test_an_unknown_environment_is_named(pgrig_home: Path) -> None:
    with pytest.raises(PgrigError, match="nowhere"):
        tune_request.build(**_asked())
