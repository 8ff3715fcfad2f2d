"""The one owner of what a managed server runs with (in the spirit of patroni's ConfigHandler,
which alone writes and applies a server's configuration).

Every change of a settings layer goes through here: the layer written (env.json for the
profile, environment, topology and insights layers; <env>/run-layer.json for the run layer),
pgrig.conf rendered from all of them (provision/settings/config.py), what changed worked out,
and the server made to take it the cheapest way the changed settings' contexts allow (reload,
or restart). A change the server refuses is rolled back one way, whoever asked for it
(`_roll_back`): the previous layers and pgrig.conf put back, then the server brought to them:
started when the failure left it stopped (a restart whose start refused the new values), else
reloaded (a reload that failed may have applied part of the change, and a restart whose stop
failed left the old server running). The run layer is set and cleared here only.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pgrig import safe_write
from pgrig.errors import PgrigError
from pgrig.provision.server import postmaster
from pgrig.provision.settings import config
from pgrig.provision.state.environment import Environment


@dataclass
class Applied:
    """What a change did: "restart", "reload" or "none" (nothing changed, or the server is
    stopped: the new pgrig.conf takes effect at its next start), and the setting names whose
    effective value changed."""

    action: str
    changed: list[str]


class NotApplied(PgrigError):
    """The server refused a change; the previous settings are back (`reason`: why it refused,
    for callers that say it in their own words, with `said`). `restarted`: the server had been
    stopped to take the change, did not start with it, and was started again with the previous
    settings: the settings are as before, the server is not (sessions cut, cache emptied), and
    an error exit must not hide that."""

    def __init__(self, reason: str, restarted: bool = False) -> None:
        self.reason, self.restarted = reason, restarted
        super().__init__(self.said("previous settings restored"))

    def said(self, outcome: str) -> str:
        """The reason, what the server went through, then the caller's `outcome`."""
        restarts = (
            "the server was stopped to take the change and did not start with it, then was "
            "started again (its connections were cut, its cache emptied); "
            if self.restarted
            else ""
        )
        return f"{self.reason}; {restarts}{outcome}"


def take(env: Environment, changed: list[str]) -> str:
    """Make the running server take the pgrig.conf on disk for `changed`: a restart when one of
    them needs it, else a reload ("none": nothing changed, or the server is stopped)."""
    return postmaster.restart_or_reload(env, changed)


def change_layers(
    env: Environment, mutate: Callable[[Environment], None], *, keep_unchanged: bool = False
) -> Applied:
    """Change the layers env.json holds: `mutate` sets them on `env` (and may check them: an
    exception leaves `env` as it was); pgrig.conf and env.json written, the server told.

    Nothing is written when no effective value changed, unless `keep_unchanged` (the change
    is itself worth keeping: the insights switch, where the archive goes). NotApplied, with
    everything back as before, when the server refuses the change."""
    snapshot = _fields(env)
    before = config.layers(env).effective()
    try:
        mutate(env)
        changed = config.changed_names(before, config.layers(env).effective())
    except BaseException:
        _put_fields(env, snapshot)
        raise
    if not changed and not keep_unchanged:
        _put_fields(env, snapshot)
        return Applied("none", [])
    config.write_conf(env)
    env.save()
    try:
        return Applied(take(env, changed), changed)
    except PgrigError as e:

        def put_back() -> None:
            _put_fields(env, snapshot)
            config.write_conf(env)
            env.save()

        restarted = _roll_back(env, put_back, e)
        raise NotApplied(str(e), restarted) from None


def reapply(env: Environment, changed: list[str], run: Mapping[str, str] | None = None) -> str:
    """pgrig.conf rewritten from the layers (`run`: the run layer, else the recorded one) and
    taken by the server: the cheapest way for `changed`, a reload when no name is known (a
    live server found to differ from its file). No rollback: the layers themselves did not
    change, the server is only brought to them (a replica following its primary too)."""
    config.write_conf(env, run)
    if changed:
        return take(env, changed)
    postmaster.reload(env)
    return "reload" if postmaster.is_running(env) else "none"


# --- the run layer --------------------------------------------------------------------------


class RunLayer:
    """A run's layer in force: call it (once or more) to clear it; returns what that took
    ("restart", "reload" or "none"). `action` says what setting it did, `changed` the names
    whose effective value it changed."""

    def __init__(
        self,
        env: Environment,
        changed: list[str],
        action: str,
        cleared: Callable[[], None] = lambda: None,
    ) -> None:
        self.env, self.changed, self.action, self._cleared = env, changed, action, cleared
        self.restored = not changed and not (env.dir / config.RUN_LAYER_FILE).exists()

    def __call__(self) -> str:
        if self.restored:
            return "none"
        _drop_run_layer(self.env, write_conf=True)
        self.restored = True  # the files are back: a failed reload or restart is not retried
        action = take(self.env, self.changed)
        self._cleared()
        return action


def set_run_layer(
    env: Environment,
    run: Mapping[str, str],
    *,
    noting: Callable[[list[str]], None] = lambda names: None,
    cleared: Callable[[], None] = lambda: None,
) -> RunLayer:
    """Put the (checked) run layer `run` in force. `noting(names)` runs before any file
    changes (the run journal: a killed run's layer is undone from it), `cleared()` once the
    layer is gone again. NotApplied, with the environment's own configuration back, when the
    server refuses it."""
    before = config.layers(env, {}).effective()
    changed = config.changed_names(before, config.layers(env, run).effective())
    noting(changed)
    safe_write.write_text(
        env.dir / config.RUN_LAYER_FILE, json.dumps(dict(run), indent=2, sort_keys=True)
    )
    config.write_conf(env, run)
    layer = RunLayer(env, changed, "none", cleared)
    try:
        layer.action = take(env, changed)
    except PgrigError as e:
        restarted = _roll_back(env, lambda: _drop_run_layer(env, write_conf=True), e)
        layer.restored = True
        cleared()
        raise NotApplied(str(e), restarted) from None
    return layer


def clear_run_layer(env: Environment, changed: list[str] | None = None) -> str:
    """The run layer gone (a run's end, or what a killed one left): pgrig.conf back to the
    environment's own layers and, with `changed` (the names the run layer touched), taken by
    the running server. Without it only the files change: for a server about to start, or
    one that is stopped."""
    _drop_run_layer(env, write_conf=True)
    return take(env, changed) if changed is not None else "none"


def drop_run_layer(env: Environment) -> None:
    """Only the run layer's file removed: a data directory about to be made anew writes its
    pgrig.conf itself."""
    _drop_run_layer(env, write_conf=False)


def _drop_run_layer(env: Environment, *, write_conf: bool) -> None:
    (env.dir / config.RUN_LAYER_FILE).unlink(missing_ok=True)
    if write_conf:  # with what was forced on the environment while the layer was on
        config.write_conf(env.current(), run={})


# --- rollback ---------------------------------------------------------------------------------


def _roll_back(env: Environment, put_back: Callable[[], None], failure: PgrigError) -> bool:
    """The previous layers and pgrig.conf back (`put_back`), then the server brought to them:
    started when the failure left it stopped (True: a restart that failed, and a start), else
    reloaded (False). A rollback that fails too is said with the failure that caused it."""
    try:
        put_back()
        if not postmaster.is_running(env):
            postmaster.start(env)
            return True
        postmaster.reload(env)
        return False
    except (PgrigError, OSError) as e:
        raise PgrigError(f"{failure}; the previous settings could not be restored: {e}") from None


def _fields(env: Environment) -> dict[str, Any]:
    return {f.name: copy.deepcopy(getattr(env, f.name)) for f in dataclasses.fields(env)}


def _put_fields(env: Environment, snapshot: dict[str, Any]) -> None:
    for name, value in snapshot.items():
        setattr(env, name, value)
