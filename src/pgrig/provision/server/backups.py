"""The backups of an environment: where they go and the catalogue of the complete ones.

Every backup pgrig takes lands in the environment's backup root (`<env>/backups/`, or the
directory given with `--backup-dir`, where pgrig makes `pgrig-<env>/` of its own) and is listed
in `<env>/backups.json` only once it is complete and verified by its tool: an interrupted or
failed backup is removed and never listed, so an incremental backup or a restore never starts
from half a backup. `env destroy` removes the environment directory, and with it the catalogue
and every backup root pgrig made (`remove_all`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pgrig import safe_write
from pgrig.errors import PgrigError
from pgrig.provision.state.environment import Environment
from pgrig.provision.system import osuser
from pgrig.record.doc_read import read_document
from pgrig.record.documents import DatasetDoc

CATALOG = "backups.json"


@dataclass
class Backup:
    """One complete backup: `tool` basebackup|pgbackrest, `kind` full|incremental|diff|incr."""

    name: str
    tool: str
    kind: str
    path: str  # the backup directory (basebackup) or the pgBackRest repository
    finished_at: str = ""
    parent: str | None = None  # the backup an incremental one builds on
    label: str | None = None  # pgBackRest's backup label
    start_lsn: str | None = None
    stop_lsn: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # the data the backup holds, per database (workloads/datasets.py's records, taken when
    # the backup began): a restore verifies against these, not against what the environment
    # holds now (regenerated since, or another scenario). None: an older catalogue entry.
    datasets: dict[str, DatasetDoc] | None = None


def root(env: Environment, backup_dir: str | Path | None = None) -> Path:
    """The backup root: `<env>/backups`, or `<backup_dir>/pgrig-<env>` (made, owned by the
    server user, which writes the backups)."""
    base = Path(backup_dir).resolve() / f"pgrig-{env.name}" if backup_dir else env.dir / "backups"
    if backup_dir and not Path(backup_dir).is_dir():
        what = "is not a directory" if Path(backup_dir).exists() else "does not exist"
        raise PgrigError(f"--backup-dir {backup_dir} {what}: give an existing directory")
    if backup_dir and base.is_relative_to(env.datadir.resolve()):
        raise PgrigError(
            f"--backup-dir {backup_dir} is inside the server's data directory {env.datadir}: "
            "each backup would copy the ones before it; give a directory outside it"
        )
    where = f"--backup-dir {backup_dir}" if backup_dir else "the backup directory"
    made = not base.exists()
    try:
        base.mkdir(parents=True, exist_ok=True)
        osuser.give_to_server(base, 0o700)
    except OSError as e:  # a read-only or immutable directory, a file system without owners
        raise PgrigError(f"{where}: cannot make {base} for the server user: {e.strerror}") from None
    # the server user writes the backups: it must reach and write the directory
    if osuser.run_as_server(["test", "-w", str(base), "-a", "-x", str(base)]).returncode != 0:
        if made:
            with contextlib.suppress(OSError):
                base.rmdir()
        raise PgrigError(
            f"{where}: the server user {osuser.server_user().name} cannot write to {base} "
            "(a read-only file system, or a parent directory it cannot enter)"
        )
    return base


def catalog(env: Environment) -> list[Backup]:
    f = env.dir / CATALOG
    if not f.exists():
        return []
    try:
        return [_entry(doc) for doc in json.loads(f.read_text())]
    except (OSError, ValueError, TypeError) as e:
        raise PgrigError(
            f"the backup catalogue {f} is damaged ({e}); remove it to start over"
        ) from None


def _entry(doc: dict[str, Any]) -> Backup:
    """One catalogue entry, its datasets read as their declared documents (record/doc_read)."""
    entry = Backup(**doc)
    if isinstance(entry.datasets, dict):
        entry.datasets = {
            str(db): read_document(DatasetDoc, info) for db, info in entry.datasets.items()
        }
    return entry


def record(env: Environment, backup: Backup) -> None:
    """Add a complete backup to the catalogue (atomically)."""
    backup.finished_at = backup.finished_at or datetime.now(UTC).isoformat(timespec="seconds")
    docs = [asdict(b) for b in catalog(env)] + [asdict(backup)]
    safe_write.write_text(env.dir / CATALOG, json.dumps(docs, indent=2))


def named(env: Environment, name: str) -> Backup | None:
    return next((b for b in catalog(env) if b.name == name), None)


def latest(env: Environment, tool: str | None = None) -> Backup | None:
    found = [b for b in catalog(env) if tool is None or b.tool == tool]
    return found[-1] if found else None


def chain(env: Environment, last: Backup) -> list[Backup]:
    """The backups a restore of `last` needs, oldest (the full one) first."""
    by_name = {b.name: b for b in catalog(env)}
    out = [last]
    while out[0].parent is not None:
        parent = by_name.get(out[0].parent)
        if parent is None:
            raise PgrigError(
                f"backup {out[0].name} builds on {out[0].parent}, which is no longer listed"
            )
        out.insert(0, parent)
    return out


def next_name(env: Environment, tool: str, kind: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    n = 1 + len(catalog(env))
    return f"{n:03d}-{tool}-{kind}-{stamp}"


def remove_all(env: Environment) -> None:
    """Every backup root pgrig made for `env` outside its directory (env destroy)."""
    roots = {Path(b.path).parent for b in catalog(env)}
    for r in roots:
        if r.name.startswith(f"pgrig-{env.name}") and not r.is_relative_to(env.dir):
            shutil.rmtree(r, ignore_errors=True)


# --- backups a killed pgrig left ----------------------------------------------------------------

IN_PROGRESS = "backup-in-progress.json"


def _started(pid: int) -> float | None:
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):
        return None


@contextlib.contextmanager
def in_progress(env: Environment, path: Path, what: str) -> Iterator[None]:
    """Mark `path` as a backup (or a restore's scratch server) this process is writing, so that
    if pgrig is killed (kill -9: nothing of its own runs after) the next command finds it and
    removes it (`recover_interrupted`)."""
    pid = os.getpid()
    doc = {"path": str(path), "what": what, "pid": pid, "pid_started": _started(pid),
           "started_at": datetime.now(UTC).isoformat(timespec="seconds")}  # fmt: skip
    f = env.dir / IN_PROGRESS
    safe_write.write_text(f, json.dumps(doc))
    try:
        yield
    finally:
        f.unlink(missing_ok=True)


def _ours(env: Environment, path: Path) -> bool:
    """Only a directory pgrig makes for `env`'s backups and restores is ever removed."""
    return path.parent in (env.dir / "backups", env.dir / "scratch") or (
        path.parent.name == f"pgrig-{env.name}" and path.name[:3].isdigit()
    )


def recover_interrupted(env: Environment) -> list[str]:
    """What a pgrig killed mid-backup (or mid-restore) left, removed now: the partial backup
    directory (never catalogued) or the scratch server (stopped first). One line per thing done.
    A backup still being written by a live pgrig is left alone."""
    if not env.managed or env.member_dir:
        return []
    f = env.dir / IN_PROGRESS
    try:
        doc = json.loads(f.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        doc = {}
    pid = int(doc.get("pid") or 0)
    if pid and _started(pid) is not None and _started(pid) == doc.get("pid_started"):
        return []  # its pgrig is alive: a backup in progress
    lines = []
    path = Path(str(doc.get("path") or ""))
    if doc.get("path") and path.exists() and _ours(env, path):
        _stop_scratch(env, path)
        kill_writers(path)
        written = disk_usage(path)
        shutil.rmtree(path, ignore_errors=True)
        lines.append(
            f"removed the partial {doc.get('what') or 'backup'} {path} ({written:,} bytes) that "
            f"a killed pgrig (pid {pid}, started {doc.get('started_at')}) left; it was never "
            "catalogued"
        )
    f.unlink(missing_ok=True)
    return lines


def kill_writers(path: Path) -> None:
    """Processes still writing into `path`: the tool dies with pgrig (PDEATHSIG), but a child
    it forked does not (pg_basebackup -X stream's WAL receiver outlives it by seconds)."""
    import psutil

    mine = str(path)
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        args = proc.info["cmdline"] or []
        if any(a == mine or a.startswith(mine + "/") for a in args):
            with contextlib.suppress(psutil.Error):
                proc.kill()
                found.append(proc)
    psutil.wait_procs(found, timeout=10)


def _stop_scratch(env: Environment, path: Path) -> None:
    """A restore's scratch server outlives a killed pgrig (pg_ctl starts it detached)."""
    if not (path / "data" / "postmaster.pid").exists():
        return
    from pgrig.provision.server import replicas

    m = replicas.member(env, {"name": path.name, "port": 0})
    m.member_dir = str(path)
    replicas.kill(m)


def disk_usage(path: Path) -> int:
    """Bytes of the files under `path` (apparent sizes)."""
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, f)).st_size
    return total


# --- running a backup tool ----------------------------------------------------------------------

PR_SET_PDEATHSIG = 1
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child must not import


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when pgrig dies, so no backup outlives it."""
    _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:
        os._exit(1)


@dataclass
class ToolResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def last_error(self) -> str:
        lines = [ln.strip() for ln in (self.stderr or self.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if "error" in ln.lower() or "fatal" in ln.lower()]
        full = [ln for ln in errors if "no space left" in ln.lower()]
        # the first error is the cause; later ones are consequences ("background process
        # terminated unexpectedly" after the disk filled up)
        return (full or errors or lines[-1:] or [f"exit code {self.returncode}"])[0][:500]


def run_tool(argv: list[str], timeout: float = 6 * 3600) -> ToolResult:
    """Run a backup program as the server user, timed; killed with pgrig (Ctrl-C included:
    the program is stopped before KeyboardInterrupt goes on)."""
    user = group = None
    extra_groups: list[int] | None = None
    if osuser.is_root():
        u = osuser.server_user()
        user, group, extra_groups = u.uid, u.gid, []
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd="/",
            env=osuser.server_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            user=user,
            group=group,
            extra_groups=extra_groups,
            umask=0o077,
            preexec_fn=_die_with_parent,
            start_new_session=True,  # Ctrl-C reaches pgrig, which stops it (below)
        )
    except OSError as e:
        raise PgrigError(f"cannot run {argv[0]}: {e.strerror or e}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    return ToolResult(proc.returncode, out, err, time.monotonic() - t0)


def free_bytes(path: Path) -> int | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def space_hint(path: Path, error: str) -> str:
    """ " (the backup target ... is full)" when the tool's error says so."""
    if "no space left" not in error.lower():
        return ""
    free = free_bytes(path)
    left = f", {free:,} bytes free" if free is not None else ""
    return f" (the backup target {path} is full{left}: free space or use --backup-dir)"
