"""What a run changes on its environment, written down BEFORE the change, undone after it.

A run may change its server in two ways that must not outlive it: pgrig.conf (per-run
settings `--set`/`--profile`, and the insights layer's auto_explain sampling) and the CPU
affinity of the postmaster, its backends and pgbouncer (`--server-cpus`). Each is noted here
(<env>/run-journal.json) before it is made and struck out once undone. When pgrig dies in
between (kill -9, power cut of the terminal), the next pgrig command that touches the
environment finds the journal, sees that no live run holds the environment's lock
(provision/env_lock.py), and replays the undo: the next run starts from the environment's own
configuration and placement, never from a dead run's.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import TYPE_CHECKING, Final, Literal

import psutil
from typing_extensions import TypedDict

from pgrig import safe_write
from pgrig.errors import PgrigError
from pgrig.provision import study_layer
from pgrig.provision.server import affinity, server_settings
from pgrig.provision.settings import config
from pgrig.provision.state import env_lock
from pgrig.provision.state.environment import Environment
from pgrig.record.doc_read import read_document

if TYPE_CHECKING:
    from pgrig.archive.store import Archive

JOURNAL_FILE = "run-journal.json"
CONF: Final = "conf"  # pgrig.conf holds a run layer: {"names": [...]}
INSIGHTS: Final = "insights"  # pgrig.conf holds auto_explain's run-time sampling
PINNING: Final = "pinning"  # affinities changed: {"roots": [{"pid", "create_time", "mask"}]}
ConfKey = Literal["conf", "insights"]


class ConfNote(TypedDict):
    """Settings pgrig.conf holds for a run only, to clear."""

    names: list[str]


class PinnedRoot(TypedDict):
    """A process whose tree a run pinned, as it was: its mask to put back."""

    pid: int
    create_time: float  # psutil's: the same pid of another process is not this one
    mask: list[int]


class PinningNote(TypedDict):
    roots: list[PinnedRoot]


class Journal(TypedDict, total=False):
    """<env>/run-journal.json: what a run changed and has not undone yet, by kind."""

    conf: ConfNote
    insights: ConfNote
    pinning: PinningNote


def read(env: Environment) -> Journal:
    """The journal (empty: nothing to undo); an entry of another shape reads as missing."""
    try:
        doc = json.loads((env.dir / JOURNAL_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return read_document(Journal, doc)


def _write(env: Environment, doc: Journal) -> None:
    path = env.dir / JOURNAL_FILE
    if not doc:
        path.unlink(missing_ok=True)
        return
    # on disk before the change it announces (fsync inside); a full disk: pgrig/safe_write.py
    safe_write.replace_text(path, json.dumps(doc, indent=2, sort_keys=True))


def note_conf(env: Environment, names: list[str], key: ConfKey = CONF) -> None:
    """Before pgrig.conf gets run-only values for `names` (merged with what is noted)."""
    doc = read(env)
    noted = doc.get(key)
    known = set(noted["names"]) if noted is not None else set()
    doc[key] = {"names": sorted(known | set(names))}
    _write(env, doc)


def note_pinning(env: Environment, roots: list[int]) -> None:
    """Before the trees of `roots` are pinned: their current masks, to put back."""
    entries: list[PinnedRoot] = []
    for pid in roots:
        with contextlib.suppress(psutil.Error, OSError):
            proc = psutil.Process(pid)
            mask = sorted(os.sched_getaffinity(pid))
            entries.append({"pid": pid, "create_time": proc.create_time(), "mask": mask})
    doc = read(env)
    doc[PINNING] = {"roots": entries}
    _write(env, doc)


def done(env: Environment, key: Literal["conf", "insights", "pinning"]) -> None:
    """`key`'s change was undone: struck out (the file goes with its last entry)."""
    doc = read(env)
    if key in doc:
        del doc[key]
        _write(env, doc)


def pending(env: Environment) -> list[str]:
    """What recover() would undo now, in words ("would ..."), changing nothing: empty while a
    live run holds the environment (its changes are its own) or when no run left anything."""
    if not env.managed or not env.dir.is_dir():
        return []
    stale_layer = (env.dir / config.RUN_LAYER_FILE).exists()
    doc = read(env)
    if (not doc and not stale_layer) or env_lock.holder(env.dir) is not None:
        return []
    out = []
    if CONF in doc or INSIGHTS in doc or stale_layer:
        names = set(config.run_layer(env))
        names |= set(_noted_names(doc))
        shown = ", ".join(sorted(names)) or "pgrig.conf"
        out.append(f"would undo the settings of an interrupted run ({shown})")
    pinning = doc.get(PINNING)
    roots = pinning["roots"] if pinning is not None else []
    pids = [p for p in (_alive(root) for root in roots) if p]
    if pids:
        out.append(
            "would put back the CPU affinity an interrupted run set on pid "
            + ", ".join(str(p) for p in pids)
            + " and its children"
        )
    return out


def _noted_names(doc: Journal) -> list[str]:
    """The settings the journal's conf and insights entries note for a run."""
    notes = (doc.get(CONF), doc.get(INSIGHTS))
    return [n for noted in notes if noted is not None for n in noted["names"]]


def _alive(root: PinnedRoot) -> int | None:
    """The pid of a journaled root when it is still the process that was pinned."""
    try:
        proc = psutil.Process(root["pid"])
        same = abs(proc.create_time() - root["create_time"]) < 0.01
    except (psutil.Error, ValueError):
        return None
    return proc.pid if same and root.get("mask") else None


def recover(env: Environment, *, holding_lock: bool = False) -> list[str]:
    """Undo what a dead run left on `env`; returns what was undone (one line each).

    Nothing happens while a live run holds the environment (its changes are its own), unless
    the caller is that run (`holding_lock`) and starts from a clean state.
    """
    if not env.managed or not env.dir.is_dir():
        return []
    stale_layer = (env.dir / config.RUN_LAYER_FILE).exists()
    doc = read(env)
    if not doc and not stale_layer:
        return []
    if not holding_lock and env_lock.holder(env.dir) is not None:
        return []
    undone: list[str] = []
    if PINNING in doc:
        undone += _unpin(doc[PINNING])
        done(env, PINNING)
    if CONF in doc or INSIGHTS in doc or stale_layer:
        names = set(config.run_layer(env))
        names |= set(_noted_names(doc))
        undone.append(_restore_conf(env, sorted(names)))
        done(env, CONF)
        done(env, INSIGHTS)
    return undone


def _unpin(entry: PinningNote) -> list[str]:
    out = []
    for root in entry["roots"]:
        pid = _alive(root)  # None: gone (restarted since): a new process was never pinned
        if pid is not None:
            affinity.set_tree(pid, set(root["mask"]))
            out.append(f"CPU affinity of pid {pid} and its children put back")
    return out


def _restore_conf(env: Environment, names: list[str]) -> str:
    action = server_settings.clear_run_layer(env, names)
    shown = ", ".join(names) or "pgrig.conf"
    return f"settings of an interrupted run undone ({shown}; {action})"


def recovered(name: str) -> tuple[Environment, list[str]]:
    """The environment `name` after undoing what a killed run left on it (settings, pinning,
    an interrupted backup) or a killed study or tune (its borrowed layer), and a line for each
    undo."""
    from pgrig.provision.server import backups

    env = Environment.load(name)
    lines = [*recover(env), *backups.recover_interrupted(env)]
    put_back = study_layer.put_back_if_dead(name, env.dir) if env.managed else []
    if put_back:
        lines += put_back
        env = Environment.load(name)  # its own settings again
    return env, lines


def recover_lost_runs(archive: Archive) -> list[str]:
    """A run the archive just marked lost may have left its settings and pinning on its
    environment: undone now, not only when a later command touches that environment. A line
    for each undo; an environment gone or damaged is left to `env repair`."""
    lines: list[str] = []
    for name in sorted({archive.get_run(run_id).env_name for run_id in archive.lost_runs}):
        with contextlib.suppress(PgrigError, OSError):
            lines += recovered(name)[1]
    return lines
