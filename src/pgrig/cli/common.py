"""Helpers shared by CLI modules: consoles (stdout for data, stderr for humans), errors."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich import text as rich_text
from rich.console import Console, ConsoleOptions, RenderableType
from rich.markup import escape
from rich.segment import Segment

from pgrig.errors import PgrigError
from pgrig.format import CONTROLS, visible

if TYPE_CHECKING:
    from pgrig.archive.store import Archive
    from pgrig.provision.state.environment import Environment

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

# Options many commands share.
ArchiveOpt = Annotated[
    str | None,
    typer.Option(
        "--archive",
        envvar="PGRIG_ARCHIVE",
        help="Archive URL: sqlite:///path or postgresql://user@host/db (default: PGRIG_ARCHIVE, "
        "else SQLite in the pgrig home).",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


# control characters (format.CONTROLS: C0, C1, bidi) are shown escaped by every console
_CONTROLS = CONTROLS


# rich's Text drops BEL, BS, VT, FF and CR silently (rich.control.strip_control_codes): pgrig's
# text is shown with them escaped instead, as every other control character
def _shown_not_stripped(text: str, _table: object = None) -> str:
    return visible(text)


setattr(rich_text, "strip_control_codes", _shown_not_stripped)  # noqa: B010 (rich's name)


class SafeConsole(Console):
    """A rich Console that prints every control character of the text it renders visibly.

    Strings are escaped before rich measures them (render_str: messages, table cells), and
    any other text at render time (segments only: rich's own styling is not text), so every
    line of the CLI is covered without each call site having to remember it. Emoji codes are
    left as typed: "root:x:0:0" in an error or a note must not print as "root❌0:0"."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("emoji", False)
        super().__init__(*args, **kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Any:
        # Strings (messages, table cells) before rich measures them: columns stay aligned.
        return super().render_str(visible(text), **kwargs)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterator[Segment]:
        for seg in super().render(renderable, options):
            if seg.control is None and _CONTROLS.search(seg.text):
                yield Segment(visible(seg.text), seg.style, seg.control)
            else:
                yield seg


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
    return SafeConsole(stderr=True)


# Off a terminal (a pipe, a file, CI) every table and message is laid out for 120 columns,
# not rich's 80: wide enough for the comparison tables, and the same on every command.
WIDTH_NOT_TTY = 120


@cache
def out_console() -> Console:
    """stdout: the terminal at its width, else WIDTH_NOT_TTY columns."""
    con = SafeConsole()
    return con if con.is_terminal else SafeConsole(width=WIDTH_NOT_TTY, no_color=con.no_color)


_JSON_ERRORS: list[bool] = [False]


def set_json_errors(on: bool) -> None:
    """With --json, an error is also a JSON object on stdout (set once by the CLI's main)."""
    _JSON_ERRORS[0] = on


def fail(message: str, code: int = 2, *, quiet: bool = False) -> NoReturn:
    """The end of a command that failed: one line on stderr (unless `quiet`: already shown)
    and, with --json, {"error": ..., "exit_code": ...} on stdout; exit `code`."""
    if _JSON_ERRORS[0]:
        with contextlib.suppress(OutputError):  # the output itself failed: stderr says it
            print_json({"error": message, "exit_code": code})
    if not quiet:
        # soft_wrap: an error stays one line even when stderr is not a terminal (80 columns).
        err_console().print(
            f"[bold red]error:[/bold red] {escape(message)}", highlight=False, soft_wrap=True
        )
    sys.exit(code)


class OutputError(PgrigError):
    """The standard output could not be written (a full disk, a closed pipe): the fault of
    where the output goes, never of pgrig's home."""

    exit_code = 1  # as every other input/output error


class OutputClosed(OutputError):
    """The reader of the standard output went away (`pgrig runs list | head -1`): it has what
    it wanted. Ends the command without a word, with 141 (128 + SIGPIPE), as `cat` or `git`
    killed by SIGPIPE end: no message, no traceback, and a pipeline under `set -o pipefail`
    still sees that the output was cut."""

    exit_code = 141


class GuardedStdout:
    """sys.stdout for the whole command (installed by the CLI's main): a write or flush that
    fails raises OutputError naming the output, and the output is then silenced (fd 1 to
    /dev/null) so that the interpreter's last flush does not fail again."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except OSError as e:
            raise _output_error(e) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as e:
            raise _output_error(e) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _output_error(e: OSError) -> OutputError:
    """The OSError of a write to stdout, as the error to end the command with; fd 1 is
    silenced so that the interpreter's last flush cannot fail again."""
    where = ""
    with contextlib.suppress(OSError):
        where = f" ({os.readlink('/proc/self/fd/1')})"
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    if isinstance(e, BrokenPipeError):
        return OutputClosed(f"standard output{where} closed by its reader")
    return OutputError(f"cannot write the output to standard output{where}: {e.strerror or e}")


def read_upto(path: str, limit: int) -> bytes:
    """At most `limit` + 1 bytes of file `path` ("-": standard input): more than `limit` says
    the input is too long without reading it whole (/dev/zero, a log given by mistake). A FIFO
    (`<(cmd)`) is read as a file is. OSError propagates."""
    if path == "-":
        return sys.stdin.buffer.read(limit + 1)
    with open(path, "rb") as f:
        return f.read(limit + 1)


def os_error_message(e: OSError) -> str:
    """An OSError that reached the top (read-only home, disk full...), as one line with the
    way out."""
    import errno

    from pgrig import paths

    where = f"{e.filename}: " if e.filename else ""
    line = f"{where}{e.strerror or e}"
    if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC):
        line += (
            f" (pgrig writes under its home {paths.home()}: make it writable and not full, "
            "or set PGRIG_HOME to another directory)"
        )
    return line


def open_archive(url: str | None, *, upgrade: bool | None = None) -> Archive:
    """The archive of a command (--archive, else PGRIG_ARCHIVE, else SQLite in the home),
    telling the user what opening it recovered (spooled runs imported, dead runs lost)."""
    from pgrig.archive.store import Archive

    archive = Archive(url, upgrade=upgrade)
    for line in archive.recovered:
        prefix = "" if line.startswith("warning:") else "note: "
        err_console().print(f"{prefix}{line}", highlight=False, markup=False, soft_wrap=True)
    _undo_lost_runs(archive)
    return archive


def _undo_lost_runs(archive: Archive) -> None:
    """provision/run_journal.py `recover_lost_runs`, each undo told on stderr."""
    from pgrig.provision import run_journal

    for line in run_journal.recover_lost_runs(archive):
        _note(line)


def confirm(question: str, yes: bool) -> None:
    """Destructive commands ask on a terminal and refuse without one, unless --yes."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise PgrigError(f"{question.rstrip('?')}: add --yes (no terminal to ask on)")
    if not typer.confirm(question, default=False):
        raise PgrigError("nothing done: not confirmed")


def print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    sys.stdout.flush()


def print_wide(renderable: RenderableType) -> None:
    """Tables to a pipe or file get room to be whole (a terminal keeps its own width)."""
    con = out_console()
    if con.is_terminal:
        con.print(renderable)
    else:
        SafeConsole(width=max(con.width, 250), no_color=con.no_color).print(renderable)


# --- environments a command acts on ------------------------------------------------------------


def _note(line: str) -> None:
    err_console().print(f"[yellow]note:[/yellow] {escape(line)}", highlight=False, soft_wrap=True)


def recovered_env(name: str) -> Environment:
    """The environment `name`, after undoing what a killed run left on it (settings, pinning:
    provision/run_journal.py `recovered`); each undo is told on stderr."""
    from pgrig.provision import run_journal

    env, lines = run_journal.recovered(name)
    for line in lines:
        _note(line)
    return env


@contextlib.contextmanager
def exclusive_env(
    name: str, what: str, force: bool = False, change: str = ""
) -> Iterator[Environment]:
    """load/core/guard.py `exclusive`, its notes on stderr."""
    from pgrig.load.core import guard

    with guard.exclusive(name, what, force, note=_note, change=change) as env:
        yield env


def reading_archive(url: str | None) -> Archive:
    """The archive for a command that only reads it: a SQLite file that does not exist yet is
    an empty archive, not created (read-only commands create no file)."""
    from pathlib import Path

    from sqlalchemy.engine import make_url

    from pgrig.archive.store import Archive, mask_url, normalize_url

    full = normalize_url(url)
    parsed = make_url(full)
    db = parsed.database
    if parsed.get_backend_name() != "sqlite" or not db or db == ":memory:":
        return open_archive(url)
    if not Path(db).exists():
        from pgrig import paths

        if Path(db).resolve() != (paths.home() / "archive.sqlite").resolve():  # a named file
            raise PgrigError(
                f"archive {db} does not exist (a mistyped --archive or PGRIG_ARCHIVE? "
                "a new archive is created by the first run that uses it)"
            )
        empty = Archive("sqlite://")  # in memory
        empty.url = mask_url(full)  # messages name the archive the user meant
        return empty
    if not os.access(Path(db).parent, os.W_OK):
        raise PgrigError(
            f"archive {db} is in a read-only directory: SQLite writes its -wal/-shm files "
            f"next to it even to read; make {Path(db).parent} writable, or copy the archive "
            "to a writable place and pass --archive PATH"
        )
    return open_archive(url)
