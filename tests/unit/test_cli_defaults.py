"""The Typer options of `pgrig run` and `pgrig tune` agree with the request model: every
option named by a RunRequest field (its flag) has the field's default, so a study's [run]
table, `pgrig run` and `pgrig tune` start from the same load (issue 24, item 3)."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from pydantic_core import PydanticUndefined

from pgrig.cli import app as cli_app
from pgrig.request import RunRequest
from pgrig.request.values import parse_duration


def _options(*path: str) -> dict[str, Any]:
    cli_app._register()
    cmd: Any = typer.main.get_command(cli_app.app)
    for name in path:
        cmd = cmd.commands[name]
    return {opt: p for p in cmd.params for opt in getattr(p, "opts", [])}


def _model_flags() -> dict[str, Any]:
    out = {}
    for name, info in RunRequest.model_fields.items():
        extra = info.json_schema_extra
        flag = extra.get("flag") if isinstance(extra, dict) else None
        if isinstance(flag, str) and flag.startswith("--"):
            out[flag] = (name, info.default)
    return out


def _same(cli: Any, model: Any) -> bool:
    if model is PydanticUndefined:  # required in the model: the CLI must ask for it too
        return cli is None or cli == ()
    if isinstance(cli, str) and isinstance(model, int | float) and not isinstance(model, bool):
        return parse_duration(cli) == float(model)  # tune's "20s" style durations
    if cli in ((), []) and model in ((), [], None):
        return True
    return bool(cli == model)


@pytest.mark.parametrize("command", [("run",), ("tune",)])
def test_cli_defaults_are_the_request_models(command: tuple[str, ...]) -> None:
    options = _options(*command)
    checked = []
    for flag, (field, default) in _model_flags().items():
        param = options.get(flag)
        if param is None:
            continue  # a field this command does not expose
        cli_default = param.default
        if command == ("tune",) and field in ("duration_s", "warmup_s"):
            continue  # tune's own per-trial defaults (20s, 0): a search, not one run
        assert _same(cli_default, default), (command, flag, cli_default, default)
        checked.append(flag)
    assert {"--clients", "--threads", "--workload"} <= set(checked)
    if command == ("run",):
        assert {"--protocol", "--warmup", "--max-tries", "--via", "--connect"} <= set(checked)
