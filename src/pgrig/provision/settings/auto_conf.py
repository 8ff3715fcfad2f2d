"""postgresql.auto.conf: what ALTER SYSTEM wrote, read last by the server, over every layer.

pgrig's layers live in pgrig.conf, included from postgresql.conf; the server reads
postgresql.auto.conf after both, so a setting someone changed with ALTER SYSTEM silently wins
over `env set` and `run --set`. pgrig never edits that file (it is the DBA's); it names every
entry that overrides a layered setting: `env show` lists them, `env set` warns, and the
live-state check before a run refuses the run (provision/live_state.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pgrig.provision.settings import config
from pgrig.provision.state.environment import Environment

AUTO_CONF = "postgresql.auto.conf"

__all__ = ["AUTO_CONF", "Override", "entries", "overrides"]


@dataclass(frozen=True)
class Override:
    name: str
    value: str  # as ALTER SYSTEM wrote it
    layered: str  # what pgrig's layers set
    layer: str  # which layer set it

    def describe(self) -> str:
        return (
            f"{AUTO_CONF} (ALTER SYSTEM) sets {self.name} = {config.quote(self.value)} over "
            f"pgrig's {config.quote(self.layered)} ({self.layer} layer)"
        )

    def fix(self) -> str:
        return f"ALTER SYSTEM RESET {self.name}"


def entries(env: Environment) -> dict[str, str]:
    """The settings of the environment's postgresql.auto.conf ({} when none or unreadable)."""
    if not env.managed:
        return {}
    try:
        text = (env.datadir / AUTO_CONF).read_text()
    except OSError:
        return {}
    return config.parse_conf(text)


def overrides(env: Environment, run: Mapping[str, str] | None = None) -> list[Override]:
    """Entries of postgresql.auto.conf that set a layered setting to another value (layers
    of `env`, with the run layer `run` when given)."""
    found = entries(env)
    if not found:
        return []
    merged = config.layers(env, run).merged()
    out = []
    for name, value in sorted(found.items()):
        layered = merged.get(name)
        if layered is not None and layered[0] != value:
            out.append(Override(name, value, layered[0], layered[1]))
    return out


def message(found: list[Override]) -> str:
    """One line naming every override and its fix."""
    fixes = "; ".join(o.fix() for o in found)
    return (
        "; ".join(o.describe() for o in found)
        + f": the server runs with the ALTER SYSTEM values. Remove them ({fixes}, as a "
        "superuser, then reload) or set the same values"
    )
