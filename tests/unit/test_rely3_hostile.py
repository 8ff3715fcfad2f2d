"""A second hostile pass over issue 30's features: what still broke, each with its fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PGRIG = [sys.executable, "-c", "from pgrig.cli.app import main; main()"]


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(pgrig_home: Path) -> None:
    """`pgrig runs list | head -1`: no traceback, no "error: ... Broken pipe" line; the exit
    status is a SIGPIPE'd tool's (141), as `cat` or `git` give."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before pgrig writes a byte
    try:
        proc = subprocess.run(
            [*PGRIG, "runs", "list", "--json"],
            stdout=write, stderr=subprocess.PIPE, text=True, check=False,
        )  # fmt: skip
    finally:
        os.close(write)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""
