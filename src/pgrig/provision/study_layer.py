"""The environment layer a study or a tune borrows: what the environment had before, and who
borrowed it.

While a study (or a tune) runs, each point's settings become its environments' own layer
(study/backend.py). What the environment had before is kept in
<home>/studies/<env>.settings.json, and the borrower (study name, kind, pgrig pid) in
<home>/studies/<env>.study.json, until the settings are put back. A study holds its
environments' run lock for its whole duration (provision/env_lock.py), so a command that gets
the lock while the layer is still borrowed knows the borrower died (kill -9): it names the
dead study and puts the environment's own settings back (put_back).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from pgrig import paths, safe_write
from pgrig.format import pgrig_command


def original_file(env_name: str) -> Path:
    return paths.home() / "studies" / f"{env_name}.settings.json"


def owner_file(env_name: str) -> Path:
    return paths.home() / "studies" / f"{env_name}.study.json"


def saved(env_name: str) -> bool:
    """Whether a study (or a tune) changed the environment's settings and has not yet put its
    own back (a killed process leaves them changed)."""
    return original_file(env_name).exists()


def owner(env_name: str) -> dict[str, Any]:
    """Who borrowed the layer: {"study", "kind", "pid"} (empty when unknown)."""
    with contextlib.suppress(OSError, ValueError):
        doc = json.loads(owner_file(env_name).read_text())
        if isinstance(doc, dict):
            return doc
    return {}


def describe_owner(env_name: str) -> str:
    """`study 'x' (pgrig pid N)`, or `a study` when the borrower is not known."""
    info = owner(env_name)
    if not info.get("study"):
        return "a study"
    kind = "tune" if info.get("kind") == "tune" else "study"
    pid = f" (pgrig pid {info['pid']})" if info.get("pid") else ""
    return f"{kind} {info['study']!r}{pid}"


def remember(env_name: str, settings: dict[str, str], study: str | None, kind: str) -> dict:
    """The environment layer as it was before any study touched it (kept until put back)."""
    f = original_file(env_name)
    f.parent.mkdir(parents=True, exist_ok=True)
    if study and owner(env_name).get("pid") != os.getpid():  # the borrower is this study now
        _write(owner_file(env_name), {"study": study, "kind": kind, "pid": os.getpid()})
    if f.exists():  # a dead study's borrow: its original is still the environment's own
        return dict(json.loads(f.read_text()))
    _write(f, settings)
    return dict(settings)


def original(env_name: str) -> dict[str, str] | None:
    f = original_file(env_name)
    if not f.exists():
        return None
    return dict(json.loads(f.read_text()))


def forget(env_name: str) -> None:
    original_file(env_name).unlink(missing_ok=True)
    owner_file(env_name).unlink(missing_ok=True)


def borrowed(env_name: str, env_dir: Path) -> dict[str, Any] | None:
    """What `env show` and `env repair` say of a borrowed layer (None: not borrowed): by whom,
    whether that study still runs (it holds the environment's run lock: a live one does for
    its whole duration), and in words. A killed tune left its trial's settings as the
    environment's own layer: shown as the environment's, with nothing said, until the next
    command put them back."""
    if not saved(env_name):
        return None
    from pgrig.provision.state import env_lock

    who = describe_owner(env_name)
    if env_lock.holder(env_dir) is not None:
        text = (
            f"its environment layer is borrowed by {who}, running: the settings shown as "
            "'environment' are that study's until it puts its own back"
        )
        return {"by": who, "alive": True, "text": text}
    text = (
        f"its environment layer still holds the settings {who} left when it died: the ones "
        "shown as 'environment' are not its own; its next command (or "
        f"`{pgrig_command('env', 'repair', env_name)}`) puts its own back"
    )
    return {"by": who, "alive": False, "text": text}


def put_back(env_name: str) -> str | None:
    """The environment's own settings back after a dead study; returns what was done."""
    from pgrig.provision import env_settings
    from pgrig.provision.state.environment import Environment

    base = original(env_name)
    if base is None:
        return None
    who = describe_owner(env_name)
    current = Environment.load(env_name)
    reset = [k for k in current.settings if k not in base]
    upd = {k: v for k, v in base.items() if current.settings.get(k) != v}
    if upd or reset:
        env_settings.set_settings(env_name, upd, reset=reset)
    forget(env_name)
    if not (upd or reset):  # killed before its first change (in its baseline): none to undo
        return f"{who} died before it changed {env_name}'s settings: {env_name} has its own"
    changed = ", ".join(sorted([*upd, *reset]))
    return f"{env_name} still had the settings of {who}, which died: its own are back ({changed})"


def put_back_if_dead(env_name: str, env_dir: Path) -> list[str]:
    """For a command that does not hold the environment (`env show`, `runs list`): a borrowed
    layer whose borrower is gone is put back, under the run lock taken for the moment (a live
    study or tune holds it: its layer is left alone). Returns what was done."""
    from pgrig.provision.state import env_lock

    if not saved(env_name) or not env_dir.is_dir() or env_lock.held_here(env_dir):
        return []  # nothing borrowed, no environment left, or this process's own borrow
    try:
        lock = env_lock.EnvLock(env_dir, env_name).acquire("put back a dead study's settings")
    except env_lock.EnvBusy:
        return []
    try:
        done = put_back(env_name)
    finally:
        lock.release()
    return [done] if done else []


def _write(path: Path, doc: dict[str, Any]) -> None:
    safe_write.write_text(path, json.dumps(doc, indent=1, sort_keys=True))
