"""The tuning request (request/tune.py) and tune/request.py `build`, called without the CLI:
each bad flag is one line naming it, said before any environment is looked at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pgrig.errors import PgrigError
from pgrig.request import from_flags
from pgrig.request.tune import TuneRequest
from pgrig.tune import request as tune_request


def _asked(**changed: Any) -> dict[str, Any]:
    base: dict[str, Any] = dict(
        env_name="nowhere", preset=None, workload=["pgbench:select-only"], scale=None, trials=2,
        budget=None, objective="tps", space="default", allow_unsafe=False,
        duration="3s", warmup="0", clients=1, threads=1, confirm_repeats=2, ablation_repeats=0,
        ablation_units=1, name="t", database=None, seed=0,
    )  # fmt: skip
    return {**base, **changed}


def _build(**asked: Any) -> Any:
    """As `pgrig tune` does: the request from its flags, then resolved."""
    return tune_request.build(from_flags(TuneRequest, **asked))


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
        # a search that cannot end (the hostile pass gave 99999999999999999999)
        ({"trials": 10**20}, "--trials must be at most 10,000 (got 100,000,000,000,000,000,000)"),
        ({"name": ""}, "--name must not be empty"),
        ({"name": "  "}, "--name must not be empty"),
        # the name is the search journal's file name: 'a/b' made a directory, '..' a hidden
        # file, 300 characters an OSError after the study was recorded (a hostile pass)
        ({"name": "a/b"}, "--name 'a/b': use letters, digits, '_', '.', '-' (at most 68"),
        ({"name": ".."}, "--name '..': use letters"),
        ({"name": "x" * 69}, "--name 'xxxx"),
        ({"confirm_repeats": 100_000}, "--confirm-repeats must be at most 1,000 (got 100,000)"),
        ({"ablation_repeats": 1001}, "--ablation-repeats must be at most 1,000 (got 1,001)"),
    ],
)
def test_bad_flags_are_refused_first(
    changed: dict[str, Any], message: str, pgrig_home: Path
) -> None:
    with pytest.raises(PgrigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _build(**_asked(**changed))


def test_an_unknown_environment_is_named(pgrig_home: Path) -> None:
    with pytest.raises(PgrigError, match="nowhere"):
        _build(**_asked())


def test_a_profile_from_a_tuning_study(pgrig_home: Path) -> None:
    """tune/saved_profile.py: the best trial's settings and where they came from; another kind
    of study, or one with no completed trial, is refused by name."""
    from types import SimpleNamespace

    from pgrig.tune import saved_profile

    studies = {
        "t": SimpleNamespace(
            kind="tune",
            extra={
                "best": {"trial": 2, "run_id": 7, "settings": {"work_mem": "8MB"}},
                "notes": ["UNSAFE: fsync off", "space: 3 knobs"],
            },
        ),
        "s": SimpleNamespace(kind="sweep", extra={}),
        "empty": SimpleNamespace(kind="tune", extra={}),
    }
    store: Any = SimpleNamespace(get_study=studies.__getitem__)
    settings, description, notes = saved_profile.from_study(store, "t")
    assert settings == {"work_mem": "8MB"} and description == "tuned by pgrig tune (t)"
    assert notes[0] == "best trial 3 (run 7) of tuning study t" and notes[-1].startswith("UNSAFE")
    with pytest.raises(PgrigError, match="a sweep study, not a tuning study"):
        saved_profile.from_study(store, "s")
    with pytest.raises(PgrigError, match="no trial completed"):
        saved_profile.from_study(store, "empty")


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        # a day per run at most: 100000h is a typo, not a plan
        ({"duration": "100000h"}, "one run of a tuning study lasts from 1s to 24h (got 100000h)"),
        ({"duration": "23h", "warmup": "2h"}, "lasts from 1s to 24h (got 25h)"),
        # 0m would run the baseline and then stop with "no trial completed"
        ({"budget": "0m"}, "--budget 0m: must be from 6s (the baseline and one trial, each"),
        ({"budget": "5s"}, "--budget 5s: must be from 6s"),
        ({"budget": "1000h"}, "to 720h (got 1000h)"),
    ],
)
def test_durations_and_budgets_out_of_range_are_refused_with_the_range(
    changed: dict[str, Any], message: str, pgrig_home: Path
) -> None:
    with pytest.raises(PgrigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _build(**_asked(**changed))


def test_a_budget_in_range_reaches_the_environment(pgrig_home: Path) -> None:
    with pytest.raises(PgrigError, match="nowhere"):
        _build(**_asked(budget="6s"))
    with pytest.raises(PgrigError, match="nowhere"):
        _build(**_asked(budget="720h", duration="24h"))
