"""What pgrig says when something fails: argument bytes that are not UTF-8, --json errors,
SIGTERM's exit code, a reader that closed the pipe, a pgbench killed by a signal, mistyped
archive paths, the FATAL line of a server that would not start, and the web's answer to a
non-numeric id."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient

from pgrig.load.engines.process import failure_reason, killed_by
from pgrig.provision.server import postmaster
from pgrig.web.app import create_app

MAIN = [sys.executable, "-c", "from pgrig.cli.app import main; main()"]
PGBENCH = Path(__file__).parents[1] / "fixtures" / "pgbench"


def _pgrig(*args: str | bytes, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PGRIG_HOME": str(home)}
    env.pop("PGRIG_ARCHIVE", None)
    return subprocess.run(
        [*MAIN, *args], capture_output=True, text=True, timeout=60, check=False, env=env
    )


@pytest.mark.parametrize(
    "args",
    [
        [b"run", b"lab", b"-w", b"pgbench:tpcb", b"--note", b"bad \xff note"],
        [b"run", b"lab", b"-w", b"pgbench:tpcb", b"--tag", b"k=\xfe"],
        [b"env", b"create", b"lab\xff", b"--pg", b"15"],
        [b"runs", b"list", b"--env", b"\xff"],
        [b"study", b"plan", b"/tmp/\xff.toml"],
    ],
)
def test_argv_that_is_not_utf8_is_one_clear_error(args: list[bytes], tmp_path: Path) -> None:
    done = _pgrig(*args, home=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "UnicodeEncodeError" not in done.stderr
    assert "is not valid UTF-8" in done.stderr and "\\\\x" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["runs", "show", "999", "--json"], "run 999 is not in archive"),
        (["runs", "show", "abc", "--json"], "Invalid value"),
        (["runs", "list", "--json", "--bogus"], "No such option: --bogus"),
        (["env", "show", "nowhere", "--json"], "nowhere"),
    ],
)
def test_json_errors_are_a_json_object_with_the_same_exit_code(
    args: list[str], needle: str, tmp_path: Path
) -> None:
    done = _pgrig(*args, home=tmp_path)
    assert done.returncode != 0
    doc = json.loads(done.stdout)
    assert needle in doc["error"] and doc["exit_code"] == done.returncode


def test_sigterm_exits_143_and_says_so_at_once(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent("""
                import sys, time
                from pgrig.cli import app
                @app.app.command("sleepy")
                def sleepy() -> None:
                    print("ready", flush=True)
                    try:
                        time.sleep(30)
                    finally:
                        time.sleep(1)  # a cleanup that takes a while
                sys.argv = ["pgrig", "sleepy"]
                app.main()
            """),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PGRIG_HOME": str(tmp_path)},
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGTERM)
    assert child.stderr is not None
    t0 = time.monotonic()
    first = child.stderr.readline()
    assert "SIGTERM received" in first and time.monotonic() - t0 < 0.9  # before the cleanup
    child.wait(timeout=30)
    assert child.returncode == 143


def test_a_pgbench_killed_by_a_signal_is_named() -> None:
    stderr = (PGBENCH / "18" / "killed.stderr").read_text()  # progress lines, then nothing
    assert killed_by(-9, "pgbench") == "pgbench was killed by signal 9 (SIGKILL)"
    assert failure_reason(-9, [], stderr, "pgbench") == "pgbench was killed by signal 9 (SIGKILL)"
    assert failure_reason(137, [], stderr, "pgbench").startswith("pgbench was killed by signal 9")
    assert failure_reason(-15, ["pgbench: error: x"], "", "pgbench") == (
        "pgbench was killed by signal 15 (SIGTERM); pgbench: error: x"
    )
    assert "progress:" not in failure_reason(2, [], stderr, "pgbench")
    assert killed_by(1, "pgbench") is None and killed_by(0, "pgbench") is None


def test_a_mistyped_archive_path_is_said_not_shown_empty(tmp_path: Path) -> None:
    missing_dir = tmp_path / "no-such-dir" / "archive.sqlite"
    for path in (missing_dir, tmp_path / "missing.sqlite"):
        for args in (["runs", "list"], ["study", "list"]):
            done = _pgrig(*args, "--archive", str(path), home=tmp_path / "home")
            assert done.returncode == 2 and "does not exist" in done.stderr, done.stderr
            assert not path.exists()
    first_use = _pgrig("runs", "list", home=tmp_path / "fresh")  # the home's own archive
    assert first_use.returncode == 0 and "no runs archived yet" in first_use.stderr


def test_a_fatal_line_written_before_logging_starts_is_quoted(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "postgres: superuser_reserved_connections (3) must be less than max_connections (1)\n"
    )
    env = SimpleNamespace(logfile=log)
    assert postmaster.log_problems(env) == (  # type: ignore[arg-type]
        "FATAL: superuser_reserved_connections (3) must be less than max_connections (1)"
    )


def test_the_web_answers_a_non_numeric_id_with_its_html_error_page(pgrig_home: Path) -> None:
    client = TestClient(create_app(None))
    for path in ("/runs/abc", "/runs/abc/artifacts/x"):
        page = client.get(path)
        assert page.status_code == 400 and page.headers["content-type"].startswith("text/html")
        assert "abc" in page.text and "valid integer" in page.text


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
