"""One run at a time per environment: an flock on <env>/run.lock that dies with its holder.

The holder writes what it is (pid, run id once the archive gave one) into the file, so a
refused command can name the run in progress. The kernel drops the lock when the holder's
process ends, however it ends (kill -9 included): nothing to clean up, nothing stale. The file
itself stays (deleting a lock file races with the next locker).

A command let through a run's hold with --force (env set, restart, stop, db generate...) notes
what it changes in <env>/forced.jsonl (note_forced) before it changes it; the run reads the
notes of its own span at its end (sealed_notes) and records them as events of the run: its
figures then mix two configurations, and its record says so instead of its start's alone.
Noting (holder read, line appended) and the run's last read (notes read, holder no longer
"run N") each happen under one flock on forced.jsonl, so a note is either read by the run it
names or its command is told the run is ending: none is promised and then lost.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

from typing_extensions import TypedDict

from pgrig.errors import PgrigError
from pgrig.record.doc_read import read_document

LOCK_FILE = "run.lock"
FORCED_FILE = "forced.jsonl"  # changes forced under a run, one JSON object a line


class LockHolder(TypedDict, total=False):
    """What the holder of the run lock wrote into it (EnvLock.describe)."""

    pid: int | None
    run_id: int | None  # once the archive gave it one
    what: str  # "run", or the command that holds it ("env set", "tune"...)
    within: str  # a nested hold: what holds it outside (a tune's run: "tune")
    ending: bool  # the run has read its last notes (sealed_notes): a change now is no event of it


class ForcedNote(TypedDict, total=False):
    """One line of forced.jsonl: a change forced under another process's hold (note_forced)."""

    at: float  # epoch seconds
    command: str  # "env set --force"
    change: str  # in words: "settings work_mem=64MB"
    holder: LockHolder


class EnvBusy(PgrigError):
    """The environment has a run in progress."""


# Locks this process holds, by path: a tune or a study holds its environment for its whole
# duration, and each of its runs takes the same lock again (nested, released by the outer).
_HELD: dict[str, EnvLock] = {}
# The hold whose description the lock file has now (a tune's run while it runs), by path.
_DESCRIBED: dict[str, EnvLock] = {}


class EnvLock:
    """The run lock of one environment, held from acquire() to release()."""

    def __init__(self, env_dir: Path, env_name: str) -> None:
        self.path = env_dir / LOCK_FILE
        self.env_name = env_name
        self.fd: int | None = None
        self.what = "run"
        self.outer: EnvLock | None = None  # set when nested in this process's own hold
        self.since = 0.0  # when acquire() took it (a nested one: when it was asked for)
        self.run_id: int | None = None  # the run it holds for, once described with one

    def acquire(self, what: str = "run", hint: str = "") -> EnvLock:
        """Take the lock for `what` (a run, or a command such as "env set") or raise EnvBusy
        naming what holds it; `hint` ends the message (" (or add --force)")."""
        self.since = time.time()
        outer = _HELD.get(str(self.path))
        if outer is not None and outer.fd is not None:  # this process holds it already
            self.outer, self.fd, self.what = outer, outer.fd, what
            return self
        # under the notes' lock: a forced command's note is about the hold before, or this one
        with contextlib.ExitStack() as stack:
            notes: int | None = None
            with contextlib.suppress(OSError):  # a full disk: the lock all the same
                notes = stack.enter_context(_notes(self.path.parent))
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise EnvBusy(busy_message(self.env_name, _read(self.path), what) + hint) from None
            self.fd, self.what = fd, what
            _HELD[str(self.path)] = self
            if notes is not None:
                os.ftruncate(notes, 0)  # notes of earlier holds: no run of this one's
            self.describe()
        return self

    def describe(self, run_id: int | None = None, ending: bool = False) -> None:
        """Write who holds the lock (and, once known, the run id, inside which holder)."""
        if self.fd is None:
            return
        self.run_id = run_id
        doc: LockHolder = {"pid": os.getpid(), "run_id": run_id, "what": self.what}
        if self.outer is not None:
            doc["within"] = self.outer.what
        if ending:
            doc["ending"] = True
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, json.dumps(doc).encode(), 0)
        _DESCRIBED[str(self.path)] = self

    def release(self) -> None:
        if self.fd is None:
            return
        if self.outer is not None:  # nested: the outer hold goes on
            self.fd, outer, self.outer = None, self.outer, None
            outer.describe(outer.run_id)
            return
        if _HELD.get(str(self.path)) is self:
            del _HELD[str(self.path)]
        _DESCRIBED.pop(str(self.path), None)
        with contextlib.ExitStack() as notes:
            with contextlib.suppress(OSError):  # a note is made before this, or finds nobody
                notes.enter_context(_notes(self.path.parent))
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            os.close(self.fd)  # closing the descriptor drops the flock
            self.fd = None

    def __enter__(self) -> EnvLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def holder(env_dir: Path) -> LockHolder | None:
    """Who holds the run lock of an environment (None: nobody). Creates nothing."""
    path = env_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read(path) or {"pid": None, "run_id": None}
    finally:
        os.close(fd)  # a shared lock we got is dropped at once
    return None


def held_here(env_dir: Path) -> bool:
    """Whether this very process holds the environment (a tune or study between its runs)."""
    lock = _HELD.get(str(env_dir / LOCK_FILE))
    return lock is not None and lock.fd is not None


def refuse_if_busy(env_dir: Path, env_name: str, what: str, force: bool = False) -> None:
    """For `env set/restart/destroy`, `db generate`: refuse while a run is in progress (of
    another process: a study's own dataset and settings changes go on under its hold)."""
    if held_here(env_dir):
        return
    if force:
        note_forced(env_dir, f"{what} --force", what)
        return
    info = holder(env_dir)
    if info is not None:
        raise EnvBusy(busy_message(env_name, info, what) + " (or add --force)")


def note_forced(env_dir: Path, command: str, change: str) -> LockHolder | None:
    """Before a --force command changes an environment: when another process holds it (a run
    in progress), note the change for that run (its end reads it: sealed_notes) and return
    the holder; None (nothing noted) when nobody else holds it."""
    if held_here(env_dir) or holder(env_dir) is None:
        return None
    with _notes(env_dir) as notes:  # the run's last read is before or after this, not during
        info = holder(env_dir)
        if info is None:
            return None
        if not info.get("ending"):
            line: ForcedNote = {
                "at": time.time(),
                "command": command,
                "change": change,
                "holder": info,
            }
            os.write(notes, (json.dumps(line) + "\n").encode())  # O_APPEND: whole lines
        return info


def sealed_notes(env_dir: Path, start: float, run_id: int | None) -> list[ForcedNote]:
    """The run's last read of the changes forced under it (from `start`, epoch seconds):
    under the notes' lock, after which the lock file no longer names run `run_id` in
    progress, so a later forced command is told the run is ending (guard.forced_note) instead
    of a promise that its note cannot keep. A run this process does not hold (a backup run
    inside a load run's hold) only reads."""
    if run_id is None:
        return forced_between(env_dir, start, time.time())
    with _notes(env_dir):
        found = forced_between(env_dir, start, time.time())
        lock = _DESCRIBED.get(str(env_dir / LOCK_FILE))
        if lock is not None and lock.fd is not None and lock.run_id == run_id:
            if lock.outer is not None:  # a tune's run: the tune holds it between runs
                lock.outer.describe(lock.outer.run_id)
            else:
                lock.describe(run_id, ending=True)
        return found


@contextlib.contextmanager
def _notes(env_dir: Path) -> Iterator[int]:
    """forced.jsonl open for appending under its exclusive flock (a short wait at most)."""
    fd = os.open(
        env_dir / FORCED_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644
    )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)  # drops the flock


def forced_between(env_dir: Path, start: float, end: float) -> list[ForcedNote]:
    """The changes forced under a run between `start` and `end` (epoch seconds), oldest first."""
    try:
        text = (env_dir / FORCED_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out: list[tuple[float, ForcedNote]] = []
    for raw in text.splitlines():
        with contextlib.suppress(ValueError):
            doc = read_document(ForcedNote, json.loads(raw))
            at = doc.get("at")
            if at is not None and start <= at <= end:
                out.append((at, doc))
    return [doc for _at, doc in sorted(out, key=lambda a: a[0])]


def busy_message(env_name: str, info: LockHolder | None, what: str) -> str:
    info = info or LockHolder()
    if info.get("run_id") is not None:
        holder = f"run {info['run_id']}"
        if info.get("within") not in (None, "run"):
            holder += f" of `pgrig {info['within']}`"
    elif info.get("what") not in (None, "run"):
        holder = f"`pgrig {info['what']}`"
    else:
        holder = "a run (starting)"
    pid = f", pgrig pid {info['pid']}" if info.get("pid") else ""
    return (
        f"environment {env_name!r} is busy: {holder} is in progress{pid}; "
        f"{what} refused until it ends"
    )


def _read(path: Path) -> LockHolder | None:
    with contextlib.suppress(OSError, ValueError):
        doc = json.loads(path.read_text() or "null")
        return read_document(LockHolder, doc) if isinstance(doc, dict) else None
    return None
