"""A library's warning never reaches a user's terminal; pgrig's own warnings still do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pgrig

_PGRIG_FILE = str(Path(pgrig.__file__).resolve().parent / "hosts" / "ssh.py")


def _stderr_of(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, check=True
    )
    return proc.stderr


def test_a_library_warning_goes_to_the_log_not_the_terminal() -> None:
    code = (
        "import warnings\n"
        "from pgrig import foreign_warnings\n"
        "foreign_warnings.keep_from_terminal()\n"
        "warnings.warn_explicit('DSA is deprecated', UserWarning,\n"
        "                       '/usr/lib/x/asyncssh/misc.py', 32)\n"
    )
    assert _stderr_of(code) == ""


def test_a_warning_of_pgrig_itself_is_shown() -> None:
    code = (
        "import warnings\n"
        "from pgrig import foreign_warnings\n"
        "foreign_warnings.keep_from_terminal()\n"
        f"warnings.warn_explicit('ours', UserWarning, {_PGRIG_FILE!r}, 7)\n"
    )
    assert "UserWarning: ours" in _stderr_of(code)


def test_asyncssh_imported_under_pgrig_prints_nothing() -> None:
    """The real case: asyncssh with the pinned cryptography (51 warns about DSA five times)."""
    code = (
        "from pgrig import foreign_warnings\n"
        "foreign_warnings.keep_from_terminal()\n"
        "import asyncssh\n"
    )
    assert _stderr_of(code) == ""


def test_pgrig_host_add_says_only_why_it_failed(tmp_path: Path) -> None:
    """The command as a user runs it: asyncssh is imported for the probe, the port is closed
    (nothing listens on port 1 of the loopback), and the one line on stderr is the reason."""
    proc = subprocess.run(
        [sys.executable, "-W", "always", "-c", "from pgrig.cli.app import main; main()",
         "host", "add", "h1", "--ssh", "pgrig@127.0.0.1:1",
         "--known-hosts", str(tmp_path / "known_hosts"), "--accept-new-host-key"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PGRIG_HOME": str(tmp_path), "HOME": str(tmp_path)},
    )  # fmt: skip
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "h1" in lines[0], proc.stderr


def test_pgrig_host_add_to_a_closed_port_says_unreachable(tmp_path: Path) -> None:
    """Issue 43 (F11): without --accept-new-host-key, a closed port is said as such first,
    not as an unknown host key."""
    proc = subprocess.run(
        [sys.executable, "-c", "from pgrig.cli.app import main; main()",
         "host", "add", "h1", "--ssh", "pgrig@127.0.0.1:1",
         "--known-hosts", str(tmp_path / "known_hosts")],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PGRIG_HOME": str(tmp_path), "HOME": str(tmp_path)},
    )  # fmt: skip
    assert proc.returncode != 0
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(
        "error: host h1 (pgrig@127.0.0.1:1): unreachable (connection refused: no sshd on that "
        "port); its host key is not known either"
    ), line
