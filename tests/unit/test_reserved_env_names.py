"""`pgrig tune show NAME` reads `show` as its subcommand, so no environment may be named show:
`env create` and `env add` refuse the name before anything is made, and `pgrig tune show`
without a study says why `show` is not an environment there."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pgrig.cli import tune as tune_cli
from pgrig.cli.env import app as env_app
from pgrig.errors import PgrigError
from pgrig.provision.state import environment


def _message(result: object) -> str:
    exc = getattr(result, "exception", None)
    return f"{getattr(result, 'output', '')} {exc}"


@pytest.mark.parametrize(
    "argv",
    [["create", "show", "--pg", "18"], ["add", "show", "--dsn", "postgresql://h/db"]],
)
def test_env_named_like_a_subcommand_is_refused_and_nothing_made(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGRIG_HOME", str(tmp_path))
    result = CliRunner().invoke(env_app, argv)
    assert result.exit_code != 0
    text = _message(result)
    assert "'show' is reserved" in text and "pgrig tune show NAME" in text, text
    assert not (tmp_path / "envs" / "show").exists()


def test_reserved_names_only_for_new_environments() -> None:
    environment.check_name("show")  # destroy/show of one made before still work
    with pytest.raises(PgrigError, match="reserved"):
        environment.check_new_name("show")
    environment.check_new_name("showcase")  # only the exact word


def test_tune_show_without_a_study_explains_show_is_no_environment() -> None:
    app = typer.Typer()
    tune_cli.register(app)
    app.command("noop")(lambda: None)  # two commands: typer keeps `tune` as a subcommand
    result = CliRunner().invoke(app, ["tune", "show"])
    assert result.exit_code != 0
    text = _message(result)
    assert "name the tuning study" in text and "may not be named show" in text, text
