"""NAME=VALUE inputs read one way (request/values.py name_values): `run --set`, `env create
--set`, `env set`, --define, --tag, `runs list --tag` and the web's tag filter."""

from __future__ import annotations

import pytest

from pgrig.errors import InvalidSetting, PgrigError
from pgrig.request.values import name_value, name_values


def test_a_setting_reads_the_same_for_a_run_as_for_an_environment() -> None:
    """`run --set` kept the quotes and the case `env create --set` takes off: one reading now,
    PostgreSQL's (names case-insensitive, a value quoted as in postgresql.conf)."""
    from pgrig.cli.run import parse_pairs
    from pgrig.provision.settings import config

    given = ["Work_Mem = '64MB'", "log_line_prefix='%m ''x'' '"]
    expected = {"work_mem": "64MB", "log_line_prefix": "%m 'x' "}
    assert parse_pairs(given, "--set", setting=True) == expected
    assert config.parse_assignments(given) == expected


def test_other_names_keep_their_case_and_their_quotes() -> None:
    assert name_values(["Rows='5'", "a=b=c", "empty="], "--define") == {
        "Rows": "'5'",
        "a": "b=c",
        "empty": "",
    }


@pytest.mark.parametrize("bad", ["novalue", "=1", " = 1"])
def test_no_name_before_an_equals_sign_is_refused_naming_the_input(bad: str) -> None:
    assert name_value(bad) is None
    with pytest.raises(PgrigError, match=f"--tag: expected key=value, got {bad!r}"):
        name_values([bad], "--tag")
    with pytest.raises(InvalidSetting, match=f"^expected NAME=VALUE, got {bad!r}$"):
        name_values([bad], setting=True, error=InvalidSetting)


def test_runs_list_and_the_web_read_a_tag_filter_alike() -> None:
    from pgrig.cli.runs import _parse_tag
    from pgrig.web.runs_page import parse_query

    assert _parse_tag("k = v=w") == ("k", "v=w") == parse_query({"tag": "k = v=w"}).flt.tag
