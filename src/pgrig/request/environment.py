"""The environment request: a server to create, however it is asked for.

`pgrig env create`'s flags, a study's [environment] table (study/spec.EnvSpec.request), a version
series' servers (track/) and an environment on another host (`--on HOST`: provision/remote asks
that host's pgrig for the same request through its flags, settings_args) are one model, made
by provision/cluster.create_environment or provision/remote/environments.create. The
superuser's SCRAM verifier and a replica's replication password are not part of it: a request
may be shown or stored, a secret never.

What each value means and may be is checked where it is made (the version's binaries, the
profile, the settings against that server's catalogue, the ports, the disk's throttle): the
model holds the values typed, a disk limit parsed (request/disk_limit.py).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict

from pgrig.request import disk_limit as disk_limits
from pgrig.request.disk_limit import DiskLimit
from pgrig.request.fields import STRICT, flag_field
from pgrig.request.values import setting_arg

__all__ = ["EnvironmentRequest"]


def _disk_limit(value: object) -> object:
    """--disk-limit text ("wbps=50MB", "none") parsed; a DiskLimit as it is."""
    if isinstance(value, str):
        return disk_limits.parse(value)  # a DiskLimitError says the flag, the key, the rule
    return value


class EnvironmentRequest(BaseModel):
    """A server to create: its name and version, its configuration, its replicas, where it
    listens and runs, its disk limit, its pooler."""

    model_config = ConfigDict(**{**STRICT, "arbitrary_types_allowed": True})

    name: str = flag_field("NAME")
    # a major ("15") or an exact version ("18.6"): a study file's `version`
    pg: str = flag_field("--pg", default="15", alias="version")
    profile: str = flag_field("--profile", default="default")
    settings: dict[str, str] = flag_field("--set", default_factory=dict)  # the env's own layer
    port: int | None = flag_field("--port", default=None)  # None: a free one
    insights: bool = flag_field("--insights", default=True)  # pgrig's insights layer
    replicas: int = flag_field("--replicas", default=0)  # streaming replicas
    sync: str = flag_field("--sync", default="off")  # their replication mode
    listen: str | None = flag_field("--listen", default=None)  # also on this address
    disk_limit: Annotated[DiskLimit | None, BeforeValidator(_disk_limit)] = flag_field(
        "--disk-limit", default=None
    )
    # a replica of a primary on another host (ADDRESS:PORT), its slot and application name
    standby_of: str | None = flag_field("--standby-of", default=None)
    slot: str | None = flag_field("--slot", default=None)
    application_name: str | None = flag_field("--application-name", default=None)
    on: str | None = flag_field("--on", default=None)  # made by that host's pgrig
    replica_on: list[str] = flag_field("--replica-on", default_factory=list)  # with --on
    pooler: str | None = flag_field("--pooler", default=None)  # a pooler's kind: pgbouncer
    pooler_on: str | None = flag_field("--pooler-on", default=None)  # with --on

    def settings_args(self) -> list[str]:
        """--set NAME=VALUE for each setting, as another host's pgrig reads them back exactly."""
        return [arg for k, v in self.settings.items() for arg in ("--set", setting_arg(k, v))]
