"""Helpers shared by CLI modules: consoles (stdout for data, stderr for humans), errors."""

from __future__ import annotations

import json
import sys
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from pgrig.errors import PgrigError

if TYPE_CHECKING:
    from pgrig.archive.store import Archive

__all__ = [
    "PgrigError",
    "confirm",
    "err_console",
    "fail",
    "open_archive",
    "out_console",
    "print_json",
    "print_wide",
]

# Options of every command that compares runs. The defaults are analysis.compare's
# DEFAULT_THRESHOLD and DEFAULT_MISRATE (a test checks): not imported, since numpy would then
# load with every command.
THRESHOLD = 0.02
MISRATE = 0.05
ThresholdOpt = Annotated[
    float,
    typer.Option(
        "--threshold", help="Practical effect size for the verdict: 0.02 is 2%.", show_default=True
    ),
]
MisrateOpt = Annotated[
    float,
    typer.Option("--misrate", help="1 - confidence of the bounds: 0.05 is 95%.", show_default=True),
]


# Colours of run statuses on a terminal (archive.store.RUN_STATUSES).
STATUS_STYLE = {
    "ok": "green",
    "failed": "red",
    "aborted": "yellow",
    "running": "cyan",
    "lost": "magenta",
}


@cache
def err_console() -> Console:
    """Progress, logs and human messages: always stderr, so stdout stays machine-readable."""
    return Console(stderr=True)


@cache
def out_console() -> Console:
    return Console()


def fail(message: str, code: int = 2) -> NoReturn:
    # soft_wrap: an error stays one line even when stderr is not a terminal (80 columns).
    err_console().print(
        f"[bold red]error:[/bold red] {escape(message)}", highlight=False, soft_wrap=True
    )
    sys.exit(code)


def open_archive(url: str | None, *, upgrade: bool | None = None) -> Archive:
    """The archive of a command (--archive, else PGRIG_ARCHIVE, else SQLite in the home),
    telling the user what opening it recovered (spooled runs imported, dead runs lost)."""
    from pgrig.archive.store import Archive

    archive = Archive(url, upgrade=upgrade)
    for line in archive.recovered:
        err_console().print(f"note: {line}", highlight=False, markup=False, soft_wrap=True)
    return archive


def confirm(question: str, yes: bool) -> None:
    """Destructive commands ask on a terminal and refuse without one, unless --yes."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise PgrigError(f"{question.rstrip('?')}: add --yes (no terminal to ask on)")
    if not typer.confirm(question, default=False):
        raise PgrigError("nothing done: not confirmed")


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    sys.stdout.flush()


def print_wide(renderable: Any) -> None:
    """Tables to a pipe or file get room to be whole (a terminal keeps its own width)."""
    con = out_console()
    if con.is_terminal:
        con.print(renderable)
    else:
        Console(width=max(con.width, 250), no_color=con.no_color).print(renderable)
