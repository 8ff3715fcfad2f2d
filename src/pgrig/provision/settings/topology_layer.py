"""pgrig's topology layer: what replicas and backups need from the primary's configuration.

Synchronous replication (`env create --replicas N --sync MODE`, `env set --sync MODE`) is
synchronous_standby_names = 'ANY 1 (r1, r2, ...)' plus synchronous_commit = MODE; "off" means
asynchronous streaming (nothing set). WAL archiving for pgBackRest (provision/pgbackrest.py) is
archive_mode = on plus its archive-push command. User layers (profile, environment, run)
override this one, like every pgrig layer, so a run can still try synchronous_commit = local.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pgrig.provision.state.environment import Environment


def standby_names(names: list[str]) -> str:
    """The synchronous_standby_names value: a commit waits for any one of the replicas."""
    return f"ANY 1 ({', '.join(names)})"


def settings(env: Environment) -> dict[str, str]:
    """The layer of `env` ({} for a standalone environment without archiving)."""
    out: dict[str, str] = {}
    names = [str(r["name"]) for r in env.replicas] + [str(s["name"]) for s in env.standbys]
    if names and env.sync != "off":
        out["synchronous_standby_names"] = standby_names(names)
        out["synchronous_commit"] = env.sync
    if env.archiving and env.archiving.get("archive_command"):
        out["archive_mode"] = "on"
        out["archive_command"] = str(env.archiving["archive_command"])
    return out
