"""`pgrig run --note` and `--note-file` (cli/run.py): a note too long for an argument comes
from a file, read to a bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgrig.errors import PgrigError


def test_a_note_file_is_read_to_a_bound(tmp_path: Path) -> None:
    """`--note-file /dev/zero` read NUL bytes (valid UTF-8) until memory ran out."""
    from pgrig.cli import run

    with pytest.raises(PgrigError, match="longer than 1 MiB"):
        run._note(None, "/dev/zero")
    big = tmp_path / "note.txt"
    big.write_text("x" * (run.MAX_NOTE_BYTES + 1))
    with pytest.raises(PgrigError, match="longer than 1 MiB"):
        run._note(None, str(big))
    ok = tmp_path / "ok.txt"
    ok.write_text("é" * 70_000 + "\n")  # over 128 KiB (an argument's limit), under 1 MiB
    assert run._note(None, str(ok)) == "é" * 70_000


def test_a_note_longer_than_an_argument_comes_from_a_file(tmp_path: Path) -> None:
    from pgrig.cli.run import _note

    long = "n" * (200 * 1024)  # over the kernel's 128 KiB for one argument
    f = tmp_path / "note.txt"
    f.write_text(long + "\n")
    assert _note(None, str(f)) == long
    assert _note("short", None) == "short"
    with pytest.raises(PgrigError, match="not both"):
        _note("x", str(f))
    with pytest.raises(PgrigError, match=r"--note-file .*nosuch: cannot read it"):
        _note(None, str(tmp_path / "nosuch"))
