"""Per-run settings: a run's `--set`/`--profile` layer validated against the exact server,
noted in the run journal before any file changes, applied and put back when the run ends
(provision/server/server_settings.py applies and clears it; undoing what a dead run left is
provision/run_journal.py's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pgrig.errors import PgrigError
from pgrig.provision import run_journal
from pgrig.provision.server import server_settings
from pgrig.provision.settings import catalog, config, validator
from pgrig.provision.state.environment import Environment, require_managed


def apply_run_settings(env: Environment, settings: Mapping[str, str]) -> Callable[[], str]:
    """Validate and apply per-run settings (reload or restart as needed).

    Returns a callable that restores the environment's own configuration (its `action` says
    what applying did: "restart", "reload" or "none"; `changed` the names it changed).
    """
    if not settings:
        return server_settings.RunLayer(env, [], "none")
    require_managed(env, "change its configuration for a run (--set, --profile)")
    run = validator.normalize(settings)
    validator.check_reserved(run)
    major = env.major or 0
    cat = catalog.load_catalog(env.bindir or "", env.version or "")
    validator.validate(env.bindir or "", major, cat, run, config.layers(env, run).origins())
    try:
        return server_settings.set_run_layer(
            env,
            run,
            noting=lambda names: run_journal.note_conf(env, names),  # before any change
            cleared=lambda: run_journal.done(env, run_journal.CONF),
        )
    except server_settings.NotApplied as e:
        msg = "run settings not applied: " + e.said("previous settings restored")
        raise PgrigError(msg) from None
