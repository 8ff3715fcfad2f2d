"""A run's hold on its environment: one run at a time, nothing of a dead run left, nothing
misrecorded, nothing of this run left behind.

- holding(): the environment's run lock (provision/env_lock.py) for the whole run, and the
  undo of whatever a killed run left (provision/run_journal.py) before anything starts.
- verify_live(): the live server's configuration and CPU placement equal what the run will
  record (provision/live_state.py), restored once or refused.
- pin_journaled(): --server-cpus noted in the journal before the server is pinned.
- interruption(): why a run stopped early (Ctrl-C, or SIGTERM/SIGHUP turned into it by the CLI).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape

from pgrig.errors import Terminated
from pgrig.provision import live_state, pooler, run_journal
from pgrig.provision.server import postmaster
from pgrig.provision.settings import config
from pgrig.provision.state import env_lock
from pgrig.provision.state.env_lock import EnvLock, LockHolder
from pgrig.provision.state.environment import Environment


@contextmanager
def holding(env: Environment, console: Console) -> Iterator[EnvLock]:
    """The environment's run lock (EnvBusy naming the run in progress when taken)."""
    lock = EnvLock(env.dir, env.name).acquire()
    try:
        lines = run_journal.recover(env, holding_lock=True)
        if lock.outer is None:  # not a run of a live study: a borrowed layer is a dead one's
            lines += put_back_dead_study(env)
        for line in lines:
            console.print(f"[yellow]note:[/yellow] {escape(line)}", highlight=False, soft_wrap=True)
        yield lock
    finally:
        lock.release()


@contextmanager
def exclusive(
    name: str,
    what: str,
    force: bool = False,
    note: Callable[[str], None] = lambda _: None,
    change: str = "",
) -> Iterator[Environment]:
    """For commands that change an environment under a run (env set/restart/stop/destroy,
    db generate): refused while a run holds it, naming the run, unless `force`; held for the
    command's duration so no run starts meanwhile. What a killed run or a dead study left is
    undone first, each undo told to `note`. Forced under a run, the `change` (in words: "disk
    limit riops=500") is noted first for that run, which records it as an event of its own."""
    env = _recovered(name, note)
    if not env.dir.is_dir():
        yield env
        return
    if force:
        held = env_lock.note_forced(env.dir, f"{what} --force", change or what)
        if held is not None:
            note(forced_note(env.name, held, change))
        yield env
        return
    lock = EnvLock(env.dir, env.name).acquire(what, hint=" (or add --force)")
    try:
        for line in put_back_dead_study(env):  # before the command changes anything
            note(line)
        yield _recovered(name, note)
    finally:
        lock.release()


def forced_note(env_name: str, held: LockHolder, change: str = "") -> str:
    """What a forced command tells its user about the run it changes under; under a tune or
    a study, that a settings change lasts only until it puts the environment's own back."""
    if held.get("run_id") is not None and held.get("ending"):
        return (
            f"run {held['run_id']} on {env_name} is ending: its figures are taken and being "
            "recorded, so this change is no event of it"
        )
    if held.get("run_id") is not None:
        run = f"run {held['run_id']} on {env_name} is in progress"
    elif held.get("what") not in (None, "run"):
        run = f"`pgrig {held['what']}` holds {env_name}"
    else:
        run = f"a run on {env_name} is starting"
    if held.get("run_id") is None and str(held.get("what") or "").startswith(
        ("tune ", "study run")
    ):  # between two of its runs: no run's span holds the change
        said = f"{run} between two of its runs: no run records this change"
    else:
        said = (
            f"{run}: this change is recorded as an event of the run it comes under, and that "
            "run's figures as not comparable as they are"
        )
    within = str(held.get("within") or held.get("what") or "")
    if change.startswith(("settings ", "reset ")) and within.startswith(("tune ", "study run")):
        said += (
            f"; `pgrig {within}` changes {env_name}'s settings for its runs and puts its own "
            "back at its end, undoing this change"
        )
    return said


def _recovered(name: str, note: Callable[[str], None]) -> Environment:
    env, lines = run_journal.recovered(name)
    for line in lines:
        note(line)
    return env


def put_back_dead_study(env: Environment) -> list[str]:
    """The environment's own settings, when a study or tune that borrowed its layer died
    (kill -9): the caller holds the run lock, which a live study would hold."""
    from pgrig.provision import study_layer

    if not env.managed or not study_layer.saved(env.name):
        return []
    done = study_layer.put_back(env.name)
    env.settings = Environment.load(env.name).settings  # the caller's copy, current again
    return [done] if done else []


def verify_live(env: Environment, console: Console) -> list[str]:
    """Restore the server's settings (its layers and the run layer in force) and placement
    to what the run records, or refuse; returns what was restored."""
    if not env.managed or not postmaster.is_running(env):
        return []
    notes = live_state.ensure_settings(env, config.run_layer(env))
    root = postmaster.pid(env)
    roots = ([root] if root else []) + (pooler.pids(env) if env.pooler else [])
    notes += live_state.ensure_unpinned(env, roots)
    for line in notes:
        console.print(f"[yellow]note:[/yellow] {escape(line)}", highlight=False, soft_wrap=True)
    return notes


def pin_journaled(env: Environment, roots: list[int], cpus: list[int]) -> Callable[[], None]:
    """Pin the trees of `roots` on `cpus`, journaled first; returns the undo."""
    from pgrig.load.core import pinning

    run_journal.note_pinning(env, roots)
    try:
        previous = pinning.pin_trees(roots, cpus)
    except BaseException:
        run_journal.done(env, run_journal.PINNING)
        raise

    def unpin() -> None:
        pinning.restore(previous)
        run_journal.done(env, run_journal.PINNING)

    return unpin


def interruption(stop: KeyboardInterrupt) -> str:
    """The archived reason of an aborted run."""
    if isinstance(stop, Terminated):
        return f"stopped by {stop.signal_name}"
    return "interrupted by the user (Ctrl-C)"
