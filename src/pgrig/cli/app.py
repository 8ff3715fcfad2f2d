"""The `pgrig` command: one Typer sub-application per command group, each in its own module."""

from __future__ import annotations

import sys
from typing import Any, TextIO, cast

import typer
from rich.markup import escape

from pgrig import foreign_warnings, interrupts
from pgrig.cli import common
from pgrig.errors import HostCommandFailed, Interrupted

app = typer.Typer(
    name="pgrig",
    help="PostgreSQL benchmarking and tuning lab.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _group() -> None:
    """A group even when one command is registered (_register): Typer would otherwise make
    a lone command the program itself, and `pgrig run ENV` would read "run" as ENV."""


# What `pgrig GROUP ...` needs registered: `report` and `track` share study's report group.
_NEEDS = {
    "study": ("study",),
    "report": ("study", "track"),
    "track": ("study", "track"),
}
_GROUP_HELP = {
    "pg": "PostgreSQL versions: list and install.",
    "env": "Environments (clusters pgrig manages).",
    "profile": "Configuration profiles.",
    "db": "Generate and check data.",
    "runs": "The archive of runs.",
    "archive": "The archive itself: schema upgrades.",
    "host": "Hosts: add, list, import; check, tune and restore a host.",
}
_TOP_LEVEL = ("run", "study", "serve", "tune", "track")  # modules with register(app)
_ALL = (*_GROUP_HELP, *_TOP_LEVEL)


def _register(argv: list[str] | None = None) -> None:
    """Each group module exposes `app` (a Typer) or `register(app)` for top-level commands.
    Given the command line, only the group it names is imported and built: every start of
    `pgrig` would otherwise import and build all of them (about 0.15 CPU-s); help, an unknown
    or a missing command get them all."""
    import importlib

    first = next((a for a in argv or () if not a.startswith("-")), None)
    names = _NEEDS.get(first, (first,)) if first in _ALL else _ALL
    modules = {n: importlib.import_module(f"pgrig.cli.{n}") for n in names}
    for name, module in modules.items():
        if name in _GROUP_HELP:
            app.add_typer(module.app, name=name, help=_GROUP_HELP[name])
        elif name == "track":
            module.register(app, importlib.import_module("pgrig.cli.study").report_app)
        else:
            module.register(app)


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


def _stacks_on_sigusr1() -> None:
    """`kill -USR1 PID` prints every thread's Python stack to stderr and pgrig goes on: what a
    command that seems stuck is waiting for, without stopping it."""
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1, all_threads=True, chain=False)


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
    from pgrig.load.engines import work_dirs
    from pgrig.provision.state import unfinished

    work_dirs.remove_orphan_work_dirs()
    unfinished.remove_stale_staging()
    if unfinished.abandoned():  # cluster (a long import) only when there is one to remove
        from pgrig.provision import cluster

        cluster.remove_abandoned_creates(
            lambda m: common.err_console().print(f"pgrig: {m}", markup=False, highlight=False)
        )


def main() -> None:
    foreign_warnings.keep_from_terminal()  # a library's warning is not the user's business
    _register(sys.argv[1:])
    interrupts.install()  # SIGTERM and SIGHUP stop pgrig as Ctrl-C does (pgrig/interrupts.py)
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
        what = "terminated" if interrupts.signalled() else "interrupted"
        if str(e):
            common.err_console().print(
                f"[yellow]{what}[/yellow]: {escape(str(e))}", highlight=False, soft_wrap=True
            )
        common.fail(str(e) or what, interrupts.exit_code(), quiet=bool(str(e)))
    except KeyboardInterrupt:  # a command that did not say it: said here
        what = "terminated" if interrupts.signalled() else "interrupted"
        common.fail(what, interrupts.exit_code())
    except SystemExit as e:  # commands exit 130 after an interruption: say which signal
        if e.code == 130 and interrupts.signalled():
            sys.exit(interrupts.exit_code())
        raise
