"""The `pgrig` command: one Typer sub-application per command group, each in its own module."""

from __future__ import annotations

import sys

import typer

from pgrig.cli import common

app = typer.Typer(
    name="pgrig",
    help="PostgreSQL benchmarking and tuning lab.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _register() -> None:
    # Each group module exposes `app` (a Typer) or `register(app)` for top-level commands.
    from pgrig.cli import archive, db, env, host, pg, profile, run, runs, serve, study, tune

    app.add_typer(pg.app, name="pg", help="PostgreSQL versions: list and install.")
    app.add_typer(env.app, name="env", help="Environments (clusters pgrig manages).")
    app.add_typer(profile.app, name="profile", help="Configuration profiles.")
    app.add_typer(db.app, name="db", help="Generate and check data.")
    app.add_typer(runs.app, name="runs", help="The archive of runs.")
    app.add_typer(archive.app, name="archive", help="The archive itself: schema upgrades.")
    app.add_typer(host.app, name="host", help="Check, tune and restore the host.")
    run.register(app)
    study.register(app)
    serve.register(app)
    tune.register(app)


def _terminate_as_interrupt() -> None:
    """SIGTERM and SIGHUP stop pgrig the way Ctrl-C does (a run is archived "aborted" with its
    partial series, settings and pinning undone); a second signal during that cleanup is
    ignored so the cleanup finishes."""
    import signal

    from pgrig.errors import Terminated

    fired: list[int] = []

    def handler(signum: int, _frame: object) -> None:
        if not fired:
            fired.append(signum)
            raise Terminated(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def _clean_after_dead_runs() -> None:
    """Every command first removes the work directories of pgrig processes that died (kill -9,
    OOM): one glob of /dev/shm. Their runs are marked lost when the archive is opened."""
    from pgrig.load import lifecycle

    lifecycle.remove_orphan_work_dirs()


def main() -> None:
    _register()
    _terminate_as_interrupt()
    try:
        _clean_after_dead_runs()
        app()
    except common.PgrigError as e:
        common.fail(str(e), e.exit_code)
    except OSError as e:  # a read-only or full home, a file removed by hand: one line
        common.fail(common.os_error_message(e), 1)
    except KeyboardInterrupt:
        common.err_console().print("[red]interrupted[/red]")
        sys.exit(130)
