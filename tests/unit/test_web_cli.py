"""`pgrig serve`: options are checked before anything listens."""

from __future__ import annotations

import socket
from pathlib import Path

import typer
from typer.testing import CliRunner

from pgrig.cli import serve


def _app() -> typer.Typer:
    app = typer.Typer()
    app.callback()(lambda: None)  # keep `serve` a sub-command, as under `pgrig`
    serve.register(app)
    return app


def test_serve_command_rejects_bad_options() -> None:
    app = _app()
    r = CliRunner().invoke(app, ["serve", "--port", "70000"])
    assert r.exit_code != 0 and "--port must be between 1 and 65535" in str(r.exception)
    r = CliRunner().invoke(app, ["serve", "--help"])
    assert r.exit_code == 0 and "--archive" in r.output


def test_serve_refuses_a_missing_archive_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.sqlite"
    with socket.socket() as probe:  # a port nothing listens on (tests run in parallel)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    r = CliRunner().invoke(_app(), ["serve", "--archive", str(missing), "--port", str(port)])
    assert r.exit_code != 0 and "does not exist" in str(r.exception)
    assert not missing.exists()


def test_loopback_detection() -> None:
    from pgrig.web.listening import is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1")
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1")
