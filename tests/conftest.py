"""Shared fixtures: an isolated pgrig home per test, reusing one cache of PostgreSQL builds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"

# The tests run `pgrig` thousands of times: run the console script itself, not a version
# manager's shim in front of it (pyenv's is a bash script that forks its helpers, ~0.1 s a call).
_SCRIPTS = Path(sysconfig.get_path("scripts"))
if (_SCRIPTS / "pgrig").exists():
    os.environ["PATH"] = f"{_SCRIPTS}{os.pathsep}{os.environ.get('PATH', '')}"

# Under pytest-xdist each worker picks managed servers' ports from a range of its own, so two
# workers never race for the same free port (modules with their own range set it themselves:
# 26300-27049, one range per module). Every range stays below the kernel's ephemeral ports
# (32768-60999), where any client connection of a parallel test could hold a chosen port.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER.startswith("gw") and "PGRIG_PORT_RANGE" not in os.environ:
    _first = 30000 + 500 * int(_WORKER[2:])
    os.environ["PGRIG_PORT_RANGE"] = f"{_first}-{_first + 499}"


def _shared_pg_cache() -> Path:
    if os.environ.get("PGRIG_PG_DIR"):
        return Path(os.environ["PGRIG_PG_DIR"])
    if os.geteuid() == 0:
        return Path("/var/lib/pgrig/pg")
    return Path.home() / ".pgrig" / "pg"


@pytest.fixture
def pgrig_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh PGRIG_HOME the unprivileged server user can traverse (not under /root)."""
    home = Path(tempfile.mkdtemp(prefix="pgrig-test-", dir="/tmp"))
    home.chmod(0o755)
    monkeypatch.setenv("PGRIG_HOME", str(home))
    monkeypatch.setenv("PGRIG_PG_DIR", str(_shared_pg_cache()))
    monkeypatch.delenv("PGRIG_ARCHIVE", raising=False)
    yield home
    _stop_servers(home)
    shutil.rmtree(home, ignore_errors=True)


def _stop_servers(home: Path) -> None:
    """No server outlives its test, even when the test failed half-way."""
    pid_files = [
        *home.glob("envs/*/data/postmaster.pid"),
        *home.glob("envs/*/replicas/*/data/postmaster.pid"),  # streaming replicas
    ]
    for pid_file in pid_files:
        try:
            pid = int(pid_file.read_text().splitlines()[0])
            os.kill(pid, 9)
        except (OSError, ValueError, IndexError):
            pass
    subprocess.run(["pkill", "-9", "-f", f"pgbouncer.*{home}"], check=False)
    _remove_disk_limits(home)


def _remove_disk_limits(home: Path) -> None:
    """No disk-limit cgroup of the home's environments outlives its test (a failed one too)."""
    if not home.joinpath("envs").is_dir():
        return
    from pgrig.provision.server import disk_throttle
    from pgrig.provision.state.environment import Environment
    from pgrig.request.disk_limit import DiskLimitError

    for d in home.joinpath("envs").iterdir():
        try:
            disk_throttle.remove(Environment(name=d.name))  # PGRIG_HOME is still this home
        except (DiskLimitError, OSError) as e:
            print(f"disk-limit cgroup of {d.name} left: {e}")


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


_TIMELINE = os.environ.get("PGRIG_TEST_TIMELINE")  # a file: when each test ran, on which worker


if _TIMELINE:
    import json
    import time

    # With PGRIG_TEST_CPU=1 (root, cgroup v1), each worker runs in a cpuacct cgroup of its
    # own: a test's line then has the CPU of every process it started, servers included
    # (daemons stay in the cgroup of who started them), which is where a CPU-bound suite's
    # time goes.
    _CPU_GROUP: Path | None = None
    if os.environ.get("PGRIG_TEST_CPU"):
        _CPU_GROUP = Path("/sys/fs/cgroup/cpuacct/pgrig-tests") / os.environ.get(
            "PYTEST_XDIST_WORKER", "main"
        )
        _CPU_GROUP.mkdir(parents=True, exist_ok=True)
        (_CPU_GROUP / "cgroup.procs").write_text(str(os.getpid()))

    def _cpu_ns() -> int:
        return int((_CPU_GROUP / "cpuacct.usage").read_text()) if _CPU_GROUP else 0

    def pytest_sessionfinish(session: pytest.Session) -> None:
        """The worker's cgroup removed once the worker left it (kept while a process the
        tests started still lives in it)."""
        if _CPU_GROUP is not None:
            import contextlib

            with contextlib.suppress(OSError):
                (_CPU_GROUP.parent.parent / "cgroup.procs").write_text(str(os.getpid()))
                _CPU_GROUP.rmdir()
                _CPU_GROUP.parent.rmdir()  # the last worker's removes the parent

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        """One JSON line per test (setup to teardown): where the suite's wall time goes."""
        start, cpu = time.time(), _cpu_ns()
        yield
        line = {
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
            "test": item.nodeid,
            "start": round(start, 3),
            "end": round(time.time(), 3),
        }
        if _CPU_GROUP:
            line["cpu_s"] = round((_cpu_ns() - cpu) / 1e9, 3)
        with open(_TIMELINE, "a") as f:
            f.write(json.dumps(line) + "\n")
