"""Throwaway PostgreSQL servers and pgrig homes for the integration tests (one place for both).

- `Server`: a cluster owned by OS user postgres under /tmp, listening on 127.0.0.1 only, on a
  port from the calling module's own range; `running(server)` initialises, starts and always
  removes it, `throwaway(bindir, make)` does the same after skipping when no server can run.
- `scratch_home(prefix)`: a pgrig home for a whole module (PGRIG_HOME set, PGRIG_ARCHIVE
  unset), with every environment in it destroyed and every server and pooler killed after.
- `pgbench_lab(prefix)`: a scratch home with environment "lab" (PG15, pgbench scale 1);
  `show(env, name)`: what SHOW prints for a setting on an environment's server.
- `pgrig(...)`: the pgrig command line, failing the test with its stderr when asked to check;
  `ok_run(env, *flags)`: a `pgrig run` that must end ok, and its record as archived.
- `start_long_run(env)`, `wait_for_running()`, `wait_for_measuring(proc)`: a run in the
  background to interrupt, the moment `pgrig runs list` shows it running, and the moment its
  pgbench has measured a few seconds; `pgbench_children(proc)`: the pgbench processes below it.
- `pg18_lab(prefix, env, *create_args)`: a scratch home sharing the PostgreSQL 18 build cache
  with environment `env` (pgbench scale 1), skipping when no 18 build is cached;
  `postmasters_under(home)`: the postmasters whose data directory is inside a home.

Imported by name (`import servers`): pytest puts this folder on sys.path (tests/ is no package).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import psutil
import pytest

if TYPE_CHECKING:
    from pgrig.archive.records import RunRecord

PG15 = Path("/usr/lib/postgresql/15/bin")


def cannot_run(bindir: Path | None) -> str | None:
    """Why no server can run here as OS user postgres (None when one can)."""
    if os.geteuid() != 0:
        return "needs root to run servers as OS user postgres"
    if bindir is None or not (bindir / "postgres").exists():
        return f"PostgreSQL not found at {bindir}"
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        return "no OS user postgres"
    return None


def free_port(ports: range) -> int:
    """The first port of `ports` nothing listens on (each module keeps a range of its own)."""
    for port in ports:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1}")


def as_postgres(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run argv as OS user postgres when root (PostgreSQL refuses root), else as ourselves."""
    if os.geteuid() == 0:
        argv = ("runuser", "-u", "postgres", "--", *argv)
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=120)


class Server:
    """A throwaway cluster in a fresh directory under /tmp, owned by OS user postgres."""

    def __init__(
        self,
        bindir: Path,
        ports: range,
        prefix: str,
        *,
        initdb_args: Sequence[str] = ("-U", "postgres", "--auth=trust", "--no-sync"),
        settings: Mapping[str, object] | None = None,
    ) -> None:
        self.bindir = bindir
        self.dir = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
        self.dir.chmod(0o755)
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        self.data = self.dir / "data"
        self.port = free_port(ports)
        self.initdb_args = tuple(initdb_args)
        self.settings = {"fsync": "off", **(settings or {})}

    @property
    def pid_file(self) -> Path:
        return self.data / "postmaster.pid"

    def init(self) -> None:
        """initdb, then the settings: loopback only, this port, sockets in the server's dir."""
        as_postgres(str(self.bindir / "initdb"), "-D", str(self.data), *self.initdb_args)
        conf = {
            "listen_addresses": "127.0.0.1",
            "port": self.port,
            "unix_socket_directories": str(self.dir),
            **self.settings,
        }
        lines = (
            f"{k} = '{v}'\n" if isinstance(v, str) else f"{k} = {v}\n" for k, v in conf.items()
        )
        with open(self.data / "postgresql.conf", "a") as f:
            f.writelines(lines)

    def start(self) -> None:
        log = str(self.dir / "log")
        as_postgres(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", log, "-w", "-t", "60",
                    "start")  # fmt: skip

    def cleanup(self) -> None:
        """Stop at once (the data is thrown away) and remove the directory."""
        with contextlib.suppress(subprocess.SubprocessError):
            as_postgres(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                        "stop", check=False)  # fmt: skip
        shutil.rmtree(self.dir, ignore_errors=True)


S = TypeVar("S", bound=Server)


@contextlib.contextmanager
def running(server: S) -> Iterator[S]:
    """The server initialised and started; removed afterwards, even when a test failed."""
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.cleanup()


@contextlib.contextmanager
def throwaway(bindir: Path | None, make: Callable[[Path], S]) -> Iterator[S]:
    """`running(make(bindir))`, skipping the test when no server can run here."""
    reason = cannot_run(bindir)
    if reason:
        pytest.skip(reason)
    assert bindir is not None
    with running(make(bindir)) as server:
        yield server


def pgrig(
    *args: str, check: bool = True, timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`pgrig args...`; with check, a non-zero exit fails the test showing pgrig's stderr."""
    proc = subprocess.run(
        ["pgrig", *args], capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"pgrig {' '.join(args)} -> {proc.returncode}\n{proc.stderr}")
    return proc


def ok_run(*args: str) -> RunRecord:
    """`pgrig run ARGS --json`, which must end ok; the run as the archive keeps it."""
    from pgrig.archive.store import Archive

    doc = json.loads(pgrig("run", *args, "--json").stdout)
    assert doc["status"] == "ok", doc["error"]
    rec = Archive(None).get_run(doc["id"])
    assert rec is not None
    return rec


def pgbench_env(name: str, *create_args: str) -> str:
    """`pgrig env create NAME --pg 15 ARGS...` with pgbench data at scale 1; returns NAME."""
    pgrig("env", "create", name, "--pg", "15", *create_args)
    pgrig("db", "generate", name, "--scenario", "pgbench", "--scale", "1")
    return name


def start_long_run(env: str) -> subprocess.Popen[str]:
    """A 30 s select-only `pgrig run --json` in the background, for a test to interrupt.

    Every transaction logged (--txlog full): an interrupted run then keeps the figures of what
    it measured. (In sampled and off modes the totals come from pgbench's own summary, which an
    interrupted pgbench never prints: such a run records none rather than a guess.)"""
    argv = ["pgrig", "run", env, "--workload", "pgbench:select-only", "-c", "2"]
    argv += ["--duration", "30", "--txlog", "full", "--json"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def archived_runs(status: str | None = None, study: str | None = None) -> list[dict]:
    """The runs `pgrig runs list --json [--status S] [--study NAME]` prints, newest first, read
    by this process (the default archive of the test's PGRIG_HOME, as the command reads it).
    For waiting loops: each `pgrig` started costs about half a CPU-second of imports, and a
    loop starting one every 0.3 s takes a core from the CPU-bound suite while it waits."""
    from pgrig.archive.export import run_to_json
    from pgrig.archive.records import RunFilter
    from pgrig.cli.common import reading_archive

    with reading_archive(None) as arch:
        runs = arch.list_runs(RunFilter(status=status, study=study), limit=50)
        return [dict(run_to_json(r)) for r in arch.add_warnings(runs)]


def wait_for_running(timeout: float = 30) -> dict:
    """The run `pgrig runs list` shows as running, once there is one."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        runs = archived_runs(status="running")
        if runs:
            return runs[0]
        time.sleep(0.3)
    raise AssertionError("no running run appeared in `pgrig runs list`")


def wait_for_measuring(
    run: subprocess.Popen[str], seconds: float = 2.0, timeout: float = 60
) -> None:
    """Returns once the run's pgbench has run `seconds` past its 1 s lead-in (a run started
    with no --warmup): transactions flowing when it keeps a per-transaction log, else started.

    "running" in the archive comes before the samplers and pgbench start; on a loaded machine
    that gap alone can exceed a fixed sleep, and a run interrupted before its window holds
    honestly no transactions. pgbench's per-transaction log (-l, buffered) is non-empty once
    transactions are flowing."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        argv = next((_cmdline(p) for p in pgbench_children(run)), None)
        if argv is not None:
            prefix = next((a.split("=", 1)[1] for a in argv if a.startswith("--log-prefix=")), "")
            logs = Path(prefix).parent.glob(Path(prefix).name + ".*") if prefix else ()
            if not prefix or any(_size(p) for p in logs):
                time.sleep(1.0 + seconds)  # the lead-in, then `seconds` of the measured window
                return
        time.sleep(0.1)
    raise AssertionError(f"the run's pgbench measured nothing within {timeout:.0f} s")


def exit_code_within(proc: subprocess.Popen[str], timeout: float) -> int:
    """The exit code of a pgrig command expected to end within `timeout` s. If it does not,
    the test fails with what it was doing: every thread's Python stack (pgrig prints them on
    SIGUSR1), its stderr, and each process below it with its state and kernel wait channel.
    The command and what it started are then killed."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    tree = []
    with contextlib.suppress(psutil.Error):
        for p in [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                wchan = Path(f"/proc/{p.pid}/wchan").read_text()
                tree.append(f"{p.pid} {p.status()} {wchan} {' '.join(p.cmdline())[:200]}")
    os.kill(proc.pid, signal.SIGUSR1)
    time.sleep(1.0)
    kids = []
    with contextlib.suppress(psutil.Error):
        kids = psutil.Process(proc.pid).children(recursive=True)
    proc.kill()
    for kid in kids:
        with contextlib.suppress(psutil.Error):
            kid.kill()
    _out, err = proc.communicate(timeout=30)
    pytest.fail(
        f"{' '.join(map(str, proc.args))} still ran {timeout:.0f} s later\n"
        + "processes:\n"
        + "\n".join(tree)
        + "\nstderr (stacks at the end):\n"
        + err[-20000:]
    )


def pgbench_children(proc: subprocess.Popen[str]) -> list[psutil.Process]:
    """The pgbench processes below a pgrig command (none once it or they ended)."""
    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    found = []
    for k in kids:
        try:
            if k.name() == "pgbench":
                found.append(k)
        except psutil.Error:  # ended meanwhile
            continue
    return found


def _cmdline(process: psutil.Process) -> list[str] | None:
    try:
        return list(process.cmdline())
    except psutil.Error:  # ended meanwhile
        return None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


@contextlib.contextmanager
def scratch_home(prefix: str) -> Iterator[Path]:
    """A pgrig home under /tmp for a whole module; nothing it started outlives it."""
    home = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    home.chmod(0o755)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PGRIG_HOME", str(home))
        env.delenv("PGRIG_ARCHIVE", raising=False)
        try:
            yield home
        finally:
            for env_json in home.glob("envs/*/env.json"):  # --force: a run may still end
                pgrig("env", "destroy", env_json.parent.name, "--yes", "--force", check=False)
            pid_files = [
                *home.glob("envs/*/data/postmaster.pid"),
                *home.glob("envs/*/replicas/*/data/postmaster.pid"),
                *home.glob("envs/*/pooler/*.pid"),
            ]
            for pid_file in pid_files:
                with contextlib.suppress(OSError, ValueError):
                    os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)
            shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def pgbench_lab(prefix: str) -> Iterator[str]:
    """A scratch home with environment "lab" (PostgreSQL 15) holding pgbench scale-1 data."""
    with scratch_home(prefix):
        pgrig("env", "create", "lab", "--pg", "15")
        pgrig("db", "generate", "lab", "--scenario", "pgbench", "--scale", "1")
        yield "lab"


def show(env: str, name: str) -> str:
    """What `SHOW name` prints on environment `env`'s server (psql as postgres over TCP)."""
    port = json.loads(pgrig("env", "show", env, "--json").stdout)["port"]
    out = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-Atc", f"SHOW {name}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def pg_build_cache() -> Path:
    """Where pgrig keeps PostgreSQL builds (shared by every home: PGRIG_PG_DIR)."""
    if os.environ.get("PGRIG_PG_DIR"):
        return Path(os.environ["PGRIG_PG_DIR"])
    return Path("/var/lib/pgrig/pg") if os.geteuid() == 0 else Path.home() / ".pgrig" / "pg"


@contextlib.contextmanager
def pg18_lab(prefix: str, env: str, *create_args: str) -> Iterator[Path]:
    """A scratch home using the shared build cache, with environment `env` on PostgreSQL 18
    (`env create ENV --pg 18 CREATE_ARGS...`) holding pgbench scale-1 data; yields the home."""
    cache = pg_build_cache()
    if not list(cache.glob("18.*/bin/postgres")):
        pytest.skip("PostgreSQL 18 is not in the build cache (run `pgrig pg install 18`)")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PGRIG_PG_DIR", str(cache))
        with scratch_home(prefix) as home:
            pgrig("env", "create", env, "--pg", "18", *create_args)
            pgrig("db", "generate", env, "--scenario", "pgbench", "--scale", "1")
            yield home


def remove_under_a_running_server(data: Path, tries: int = 50) -> None:
    """Delete a data directory whose server is still running, as a lost disk would: the server
    can create a file while rm walks the tree (a relation replayed, a temporary file), so the
    removal is repeated until the directory is gone."""
    for _ in range(tries):
        shutil.rmtree(data, ignore_errors=True)
        if not data.exists():
            return
        time.sleep(0.05)
    raise AssertionError(f"{data} kept reappearing under its running server")


def postmasters_under(home: Path) -> list[psutil.Process]:
    """The postmasters (postgres -D DIR) whose command line names a path inside `home`."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmd = proc.info["cmdline"] or []
        if proc.info["name"] == "postgres" and "-D" in cmd and str(home) in " ".join(cmd):
            found.append(proc)
    return found


def sysv_segments() -> set[str]:
    """Ids of the System V shared memory segments that exist (a postmaster's lives there)."""
    rows = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return {row.split()[1] for row in rows}
