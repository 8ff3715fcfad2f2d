"""Warnings raised inside the libraries pgrig uses never reach a user's terminal.

A library's warning is addressed to pgrig's developers, not to its users: with cryptography 51,
asyncssh's import alone printed five CryptographyDeprecationWarning lines (about DSA, which
pgrig never uses) before `pgrig host add` answered, and after the one line that says why a
run failed. They go to the `py.warnings` logger instead (silent unless logging is configured),
so the tests and a developer can still see them. A warning pgrig's own code raises, or one
that a library attributes to pgrig's call (stacklevel), is shown as Python shows it.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import TextIO

_OWN = str(Path(__file__).resolve().parent)  # pgrig's package directory
_python_showwarning = warnings.showwarning


def _show(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    if filename.startswith(_OWN):
        _python_showwarning(message, category, filename, lineno, file, line)
        return
    logging.getLogger("py.warnings").debug(
        "%s", warnings.formatwarning(message, category, filename, lineno, line)
    )


def keep_from_terminal() -> None:
    """Route the warnings of other packages to the log (idempotent)."""
    warnings.showwarning = _show
