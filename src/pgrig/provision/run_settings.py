"""Per-run settings: a run's `--set`/`--profile` layer validated against the exact server,
noted in the run journal before any file changes, applied (reload or restart as needed) and
put back when the run ends. The layers and pgrig.conf are provision/config.py's; undoing what a
dead run left is provision/run_journal.py's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping

from pgrig.errors import PgrigError
from pgrig.provision import run_journal
from pgrig.provision.server import postmaster
from pgrig.provision.settings import catalog, config, validator
from pgrig.provision.state.environment import Environment


class RunSettings:
    """Returned by apply_run_settings: call it (once or more) to restore the previous config.

    `action` says what applying did: "restart", "reload" or "none"; `changed` lists the names
    whose effective value changed.
    """

    def __init__(self, env: Environment, changed: list[str], action: str) -> None:
        self.env, self.changed, self.action = env, changed, action
        self.restored = not changed and not (env.dir / config.RUN_LAYER_FILE).exists()

    def __call__(self) -> str:
        """Restore; returns what that took ("restart", "reload" or "none")."""
        if self.restored:
            return "none"
        (self.env.dir / config.RUN_LAYER_FILE).unlink(missing_ok=True)
        config.write_conf(self.env, run={})
        self.restored = True
        action = postmaster.restart_or_reload(self.env, self.changed)
        run_journal.done(self.env, run_journal.CONF)
        return action


def apply_run_settings(env: Environment, settings: Mapping[str, str]) -> Callable[[], str]:
    """Validate and apply per-run settings (reload or restart as needed).

    Returns a callable that restores the environment's own configuration.
    """
    if not settings:
        return RunSettings(env, [], "none")
    if not env.managed:
        raise PgrigError(
            f"environment {env.name!r} is external: pgrig cannot change its configuration "
            "(per-run settings need a managed environment)"
        )
    run = validator.normalize(settings)
    validator.check_reserved(run)
    major = env.major or 0
    cat = catalog.load_catalog(env.bindir or "", env.version or "")
    new = config.layers(env, run)
    validator.validate(env.bindir or "", major, cat, run, new.origins())
    before = config.layers(env, {}).effective()
    run_journal.note_conf(env, config.changed_names(before, new.effective()))  # before any change
    tmp = env.dir / f".{config.RUN_LAYER_FILE}.tmp"
    tmp.write_text(json.dumps(run, indent=2, sort_keys=True))
    os.replace(tmp, env.dir / config.RUN_LAYER_FILE)
    config.write_conf(env, run)
    changed = config.changed_names(before, new.effective())
    restore = RunSettings(env, changed, "none")
    try:
        restore.action = postmaster.restart_or_reload(env, changed)
    except PgrigError as e:
        restore()  # put the previous configuration back before reporting the failure
        if not postmaster.is_running(env):
            postmaster.start(env)
        raise PgrigError(f"run settings not applied: {e}; previous settings restored") from None
    return restore
