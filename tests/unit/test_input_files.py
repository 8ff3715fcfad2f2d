"""The input files (study files, profiles, tune spaces, pooler tables) are pydantic models whose
problems read like the run request's: the key path, then the predicate (request/problems.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from pgrig.errors import PgrigError
from pgrig.provision.settings import profile_model, profiles
from pgrig.request.pooler import PoolerRequest
from pgrig.request.problems import in_file, problem_of, unknown_key
from pgrig.study.tables import StudyFile

SHIPPED = sorted((Path(profiles.__file__).parent / "profiles").glob("*.toml"))


def problem(model: type, data: dict, path: str = "") -> str:
    with pytest.raises(ValidationError) as e:
        model.model_validate(data)
    return in_file(e.value, model, path)


def test_unknown_keys_name_the_likely_one_and_the_allowed_ones() -> None:
    assert unknown_key("setings", ["name", "settings"]) == (
        "unknown key (did you mean 'settings'?); allowed here: name, settings"
    )
    assert unknown_key("x", []) == "unknown key"
    assert problem(StudyFile, {"study": {"nmae": "a"}}) == (
        "study.nmae: unknown key (did you mean 'name'?); allowed here: name, description, "
        "repeats, order, threshold, misrate, on_failure, tags"
    )


def test_an_unknown_key_is_reported_before_the_missing_one_it_misspells() -> None:
    from pgrig.tune.space_file import SpaceFile

    assert problem(SpaceFile, {"knob": {}}).startswith("knob: unknown key (did you mean 'knobs'?)")
    assert problem(SpaceFile, {}) == "knobs: is required"


def test_rules_of_nested_tables_name_their_own_keys() -> None:
    """A table's own rule (a model validator) inside a file keeps the full key path."""
    text = problem(StudyFile, {"environments": {"new": {"create": False, "version": "18"}}})
    assert text == "environments.new.name: is required when create = false"
    text = problem(StudyFile, {"iterations": [{}, {"settings": {"a": 1}, "reset": ["a"]}]})
    assert text == "iterations[1].reset: 'a' is also set in settings"


def test_one_rule_two_surfaces_for_the_pooler() -> None:
    with pytest.raises(ValidationError) as e:
        PoolerRequest(pool_size=0)
    p = problem_of(e.value, PoolerRequest)
    assert p.for_flags(PoolerRequest).startswith("--pool-size must be >= 1 (got 0): a pool")
    assert p.at("environment.pooler", PoolerRequest).startswith(
        "environment.pooler.pool_size: must be >= 1 (got 0): a pool"
    )
    ok = PoolerRequest.model_validate({"mode": "session", "pool_size": 100, "processes": 2})
    assert (ok.kind, ok.mode, ok.pool_size, ok.processes, ok.port) == (
        "pgbouncer",
        "session",
        100,
        2,
        None,
    )
    with pytest.raises(ValidationError) as e:
        PoolerRequest(kind="odyssey")  # type: ignore[arg-type]
    assert problem_of(e.value, PoolerRequest).for_flags(PoolerRequest) == (
        "pooler kind must be one of pgbouncer (got 'odyssey')"
    )


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_profiles_load_unchanged(path: Path) -> None:
    text = path.read_text()
    prof = profile_model.read_profile_model(path)
    assert path.read_text() == text
    assert prof.kind in profile_model.KINDS
    assert all(name in prof.settings for name in prof.rules)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("kind = 'magic'\n", "kind: must be one of fixed, pgtune, pgconfig (got 'magic')"),
        ("kind = 'pgtune'\n", "workload: is required for kind pgtune: one of web, oltp"),
        ("workload = 'oltp'\n", "workload: applies only to kind pgtune or pgconfig"),
        ("colour = 'red'\n", "colour: unknown key; allowed here: description, kind"),
        (
            "[settings]\n'Bad Name' = 1\n",
            "settings.\"Bad Name\": 'Bad Name' is not a valid setting",
        ),
        ("[settings]\nx = [1]\n", "settings.x: expected a string, number or boolean (got [1])"),
        ("[settings]\na = 1\n[rules]\nb = 'why'\n", "rules: has a rule for b, which [settings]"),
        ("notes = [1]\n", "notes[0]: expected a string (got 1)"),
        ("description = 3\n", "description: expected a string (got 3)"),
    ],
)
def test_profile_file_problems_name_the_file_and_key(
    tmp_path: Path, text: str, expected: str
) -> None:
    f = tmp_path / "broken.toml"
    f.write_text(text)
    with pytest.raises(PgrigError) as e:
        profile_model.read_profile_model(f)
    assert str(e.value).startswith(f"profile {f}: ")
    assert expected in str(e.value)
