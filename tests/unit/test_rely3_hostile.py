"""A second hostile pass over issue 30's features: what still broke, each with its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pgrig.errors import PgrigError

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


def test_a_level_near_zero_gives_no_infinite_ratio() -> None:
    """8 values of 1e-320 then 8 of 5: after/before overflows to inf, which `--json` printed
    as `Infinity` (invalid JSON); now None, as from a level of 0."""
    from pgrig.analysis import changepoints

    found = changepoints.detect([1e-320] * 8 + [5.0] * 8)
    [change] = found.changes
    assert change.ratio is None and change.change_pct is None
    json.dumps(found.to_dict(), allow_nan=False)  # strict JSON: raises on inf or NaN


def test_a_negative_seed_is_refused_not_a_traceback() -> None:
    from pgrig.analysis import changepoints

    with pytest.raises(PgrigError, match="seed must be 0 or more, not -1"):
        changepoints.detect([1.0] * 8 + [2.0] * 8, seed=-1)
