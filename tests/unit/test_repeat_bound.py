"""--repeat and study.repeats have an upper bound with a clear error (request/load.py)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from pgrig.cli import app as cli_app
from pgrig.errors import PgrigError
from pgrig.request import RunRequest
from pgrig.request.load import MAX_REPEATS


def test_run_refuses_too_many_repeats_before_anything(pgrig_home: object) -> None:
    cli_app._register()
    argv = ["run", "nowhere", "--workload", "pgbench:tpcb", "-T", "1"]
    out = CliRunner().invoke(cli_app.app, [*argv, "--repeat", str(MAX_REPEATS + 1)])
    assert isinstance(out.exception, PgrigError)
    assert f"--repeat must be between 1 and {MAX_REPEATS} (got {MAX_REPEATS + 1})" in str(
        out.exception
    )


def test_a_request_repeat_index_is_bounded() -> None:
    with pytest.raises(ValueError):
        RunRequest(env_name="e", workload="pgbench:tpcb", duration_s=1, repeat=MAX_REPEATS)


def test_repeat_zero_is_told_the_lower_bound() -> None:
    from pgrig.request.load import check_repeat

    with pytest.raises(PgrigError, match=r"--repeat must be at least 1 \(got 0\)") as e:
        check_repeat(0)
    assert "resolve nothing more" not in str(e.value)
    with pytest.raises(PgrigError, match=r"between 1 and 100"):
        check_repeat(101)
