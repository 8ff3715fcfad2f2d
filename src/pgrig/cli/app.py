"""The `pgrig` command: one Typer sub-application per command group, each in its own module."""

from __future__ import annotations

import sys
from typing import Any, TextIO, cast

import typer
from rich.markup import escape

from pgrig.cli import common
from pgrig.errors import HostCommandFailed, Interrupted

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
    app.add_typer(
        host.app, name="host", help="Hosts: add, list, import; check, tune and restore a host."
    )
    run.register(app)
    study.register(app)
    serve.register(app)
    tune.register(app)
    from pgrig.cli import track

    track.register(app, study.report_app)


def command() -> Any:
    """The click command of `pgrig` with its help tidied for people: a flag shows no
    "<bool>" type, and the lines of a docstring's paragraph are joined (only lists and
    pre-formatted paragraphs keep their line breaks)."""
    cmd = typer.main.get_command(app)

    def no_type(option: Any) -> Any:
        if option is not None and getattr(option, "is_flag", False):
            option.metavar = ""
        return option

    def tidy(c: Any) -> None:  # Typer's own click: its classes are not click's
        if c.help:
            c.help = reflow(c.help)
        for p in c.params:
            no_type(p)
            if getattr(p, "help", None):
                p.help = reflow(p.help)
        make_help = c.get_help_option
        c.get_help_option = lambda ctx: no_type(make_help(ctx))  # --help: made on demand
        for sub in getattr(c, "commands", {}).values():
            tidy(sub)

    tidy(cmd)
    return cmd


def reflow(text: str) -> str:
    """Each paragraph of a docstring as one line, unless it is a list ("- ...") or marked
    pre-formatted ("\\b")."""
    import inspect

    out = []
    for para in inspect.cleandoc(text).split("\n\n"):
        lines = para.split("\n")
        keep = para.startswith("\b") or any(ln.lstrip().startswith(("- ", "* ")) for ln in lines)
        out.append(para if keep else " ".join(ln.strip() for ln in lines))
    return "\n\n".join(out)


_SIGNALLED: list[int] = []  # the signal that stopped pgrig (SIGTERM, SIGHUP), if one did


def _terminate_as_interrupt() -> None:
    """SIGTERM and SIGHUP stop pgrig the way Ctrl-C does (a run is archived "aborted" with its
    partial series, settings and pinning undone); a second signal during that cleanup is
    ignored so the cleanup finishes. It is said at once (the cleanup may take seconds), and
    pgrig then exits 128 + the signal's number (143 for SIGTERM), as a shell reports it."""
    import os
    import signal

    from pgrig.errors import Terminated

    def handler(signum: int, _frame: object) -> None:
        if not _SIGNALLED:
            _SIGNALLED.append(signum)
            name = signal.Signals(signum).name
            # os.write: safe whatever the main thread was printing when the signal came
            os.write(2, f"pgrig: {name} received: stopping, then cleaning up\n".encode())
            raise Terminated(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def _stacks_on_sigusr1() -> None:
    """`kill -USR1 PID` prints every thread's Python stack to stderr and pgrig goes on: what a
    command that seems stuck is waiting for, without stopping it."""
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1, all_threads=True, chain=False)


def _interrupted_code() -> int:
    return 128 + _SIGNALLED[0] if _SIGNALLED else 130


def _check_argv(argv: list[str]) -> None:
    """Every argument is text pgrig may store and print: bytes that are not UTF-8 (Python
    keeps them as lone surrogates) are refused here, for every command, with the argument
    shown escaped, never a UnicodeEncodeError later in the archive or a terminal."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise common.PgrigError(
                f"argument {shown!r} is not valid UTF-8: pgrig keeps text (notes, tags, names, "
                "paths) as UTF-8; give it in UTF-8 (check the terminal's or the script's "
                "encoding, e.g. LANG=C.UTF-8)"
            ) from None


def _clean_after_dead_runs() -> None:
    """Every command first removes the work directories of pgrig processes that died (kill -9,
    OOM): one glob of /dev/shm, and what an `env create` that died left
    (provision/state/unfinished.py): one glob of the environments. Their runs are marked lost
    when the archive is opened."""
    from pgrig.load.core import lifecycle
    from pgrig.provision.state import unfinished

    lifecycle.remove_orphan_work_dirs()
    if unfinished.abandoned():  # cluster (a long import) only when there is one to remove
        from pgrig.provision import cluster

        cluster.remove_abandoned_creates(
            lambda m: common.err_console().print(f"pgrig: {m}", markup=False, highlight=False)
        )


def main() -> None:
    _register()
    _terminate_as_interrupt()
    _stacks_on_sigusr1()
    sys.stdout = cast(TextIO, common.GuardedStdout(sys.stdout))  # a failed output says so
    json_errors = "--json" in sys.argv[1:]
    common.set_json_errors(json_errors)  # every error then also a JSON object on stdout
    try:
        _check_argv(sys.argv[1:])
        _clean_after_dead_runs()
        if not json_errors:
            command()(prog_name="pgrig")
            return
        # Usage errors too must come as JSON: click raises them instead of exiting. (Typer
        # may bring its own click: its exceptions are found from typer's.)
        usage_error: type[Exception] = next(
            c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
        )
        try:
            rc = command()(prog_name="pgrig", standalone_mode=False)
        except usage_error as e:
            shown: Any = e
            shown.show()
            common.fail(shown.format_message(), shown.exit_code, quiet=True)
        except typer.Abort:
            common.fail("aborted", 1)
        sys.exit(rc if isinstance(rc, int) else 0)
    except HostCommandFailed as e:  # the host's pgrig said why, its output streamed here
        sys.exit(e.exit_code)
    except common.OutputClosed as e:  # `pgrig runs list | head -1`: the reader has it all
        sys.exit(e.exit_code)
    except common.PgrigError as e:
        common.fail(str(e), e.exit_code)
    except OSError as e:  # a read-only or full home, a file removed by hand: one line
        common.fail(common.os_error_message(e), 1)
    except Interrupted as e:  # work that put things in order and says what it left
        what = "terminated" if _SIGNALLED else "interrupted"
        if str(e):
            common.err_console().print(
                f"[yellow]{what}[/yellow]: {escape(str(e))}", highlight=False, soft_wrap=True
            )
        common.fail(str(e) or what, _interrupted_code(), quiet=bool(str(e)))
    except KeyboardInterrupt:  # a command that did not say it: said here
        what = "terminated" if _SIGNALLED else "interrupted"
        common.fail(what, _interrupted_code())
    except SystemExit as e:  # commands exit 130 after an interruption: say which signal
        if e.code == 130 and _SIGNALLED:
            sys.exit(_interrupted_code())
        raise
