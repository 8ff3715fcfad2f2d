"""Turning the insights layer of a managed environment on or off (`pgrig env set --insights`)."""

from __future__ import annotations

from pgrig.errors import PgrigError
from pgrig.provision.server import postmaster
from pgrig.provision.settings import config
from pgrig.provision.state.environment import Environment


def set_enabled(name: str, enabled: bool) -> tuple[str, list[str]]:
    """Apply or remove the insights layer; returns (action, changed setting names) as
    `env set` does: "restart" when shared_preload_libraries changed, "reload", or "none"."""
    env = Environment.load(name)
    if not env.managed:
        raise PgrigError(
            f"environment {name!r} is external: pgrig does not change its configuration "
            "(insights use what the server offers)"
        )
    if env.insights == enabled:
        return "none", []
    before = config.layers(env).effective()
    env.insights = enabled
    after = config.write_conf(env).effective()
    env.save()
    changed = config.changed_names(before, after)
    return postmaster.restart_or_reload(env, changed), changed
