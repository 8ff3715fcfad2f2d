"""Changing a managed environment's own settings layer and its disk limit (`env set`), with
the previous state put back when the change fails."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping

from pgrig.errors import InvalidSetting, PgrigError
from pgrig.provision.cluster import managed
from pgrig.provision.server import disk_throttle, postmaster, replicas, server_settings
from pgrig.provision.settings import catalog, config, validator
from pgrig.provision.state.environment import Environment
from pgrig.request.disk_limit import DiskLimit


def set_settings(
    name: str, assignments: Mapping[str, str], reset: Iterable[str] = ()
) -> tuple[str, list[str]]:
    """Change the environment layer; returns (action, changed names).

    action is "restart", "reload" or "none" (nothing changed or server stopped). On a failed
    restart the previous settings are put back and the server started again.
    """
    env = managed(name, "configure it")
    upd = validator.normalize(assignments)
    validator.check_reserved(upd)
    resets = [raw.strip().lower() for raw in reset]
    # one word per setting, as a study's iteration takes it: set and reset, or reset twice,
    # would leave one of them silently ignored
    twice = sorted({k for k in resets if resets.count(k) > 1})
    if twice:
        raise InvalidSetting(f"--reset {twice[0]} is given twice: give it once")
    both = [k for k in resets if k in upd]
    if both:
        raise InvalidSetting(f"{both[0]} is both set and reset: give one of them")
    new = dict(env.settings)
    for key in resets:
        if key not in new:
            raise InvalidSetting(f"{key} is not set in environment {name!r}, nothing to reset")
        del new[key]
    new.update(upd)
    cat = catalog.load_catalog(env.bindir or "", env.version or "")
    major = env.major or 0
    validator.check_names(upd, major, cat)

    def mutate(env: Environment) -> None:
        env.settings = new
        validator.check_values(env.bindir or "", upd, major, cat, config.layers(env).origins())

    try:
        applied = server_settings.change_layers(env, mutate)
    except server_settings.NotApplied as e:
        raise PgrigError(e.said("settings unchanged, previous settings restored")) from None
    action, changed = applied.action, applied.changed
    if not changed:
        return "none", []
    replicas.follow_settings(env, changed)
    return action, changed


def set_disk_limit(name: str, limit: DiskLimit | None) -> tuple[dict[str, int] | None, bool]:
    """Change (None: remove) the environment's disk limit; in force at once when its server
    runs, else at its next start. Returns (the limit before, whether it changed). On failure
    the previous limit is put back."""
    env = managed(name, "limit its disk")
    if limit is not None:
        disk_throttle.check(env)
    old = env.disk_limit
    new = limit.as_dict() if limit is not None else None
    if new == old:
        return old, False
    env.disk_limit = new
    try:
        disk_throttle.apply(env, postmaster.pid(env))
    except PgrigError as e:
        env.disk_limit = old
        with contextlib.suppress(PgrigError):
            disk_throttle.apply(env, postmaster.pid(env))
        raise PgrigError(f"{e}; nothing changed") from None
    env.save()
    return old, True
