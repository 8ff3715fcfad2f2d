"""The environment request: a server to create, however it is asked for.

`pgrig env create`'s flags, a study's [environment] table (study/spec.EnvSpec.request), a version
series' servers (track/) and an environment on another host (`--on HOST`: provision/remote asks
that host's pgrig for the same request through its flags, settings_args) are one model, made
by provision/cluster.create_environment or provision/remote/environments.create. The
superuser's SCRAM verifier and a replica's replication password are not part of it: a request
may be shown or stored, a secret never.

The rules a request can judge by itself are its own, written once here and said in the words
of the surface it came from (problems.py): the replicas and their sync mode (shared with a
study's [environment] table, which has no model of its own for them), which flags need
`--on HOST`, a disk limit's syntax and floor, the pooler's kind, --set's NAME=VALUE. What a
value means on a machine is checked where it is made (the version's binaries, the profile, the
settings against that server's catalogue, the port free, the disk's throttle).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Self

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, model_validator

from pgrig.errors import InvalidSetting, PgrigError
from pgrig.request import disk_limit as disk_limits
from pgrig.request.disk_limit import DiskLimit
from pgrig.request.fields import STRICT, flag_field
from pgrig.request.pooler import PoolerKind, Port
from pgrig.request.problems import Refusal, flag_of
from pgrig.request.values import name_values, setting_arg
from pgrig.request.vocabulary import MAX_REPLICAS, SYNC_MODES, pg_version

__all__ = [
    "REMOTE_DISK_LIMIT",
    "EnvironmentRequest",
    "Replicas",
    "SyncMode",
    "Version",
    "check_sync",
    "check_topology",
]


def _disk_limit(value: object) -> object:
    """--disk-limit text ("wbps=50MB", "none") parsed; a DiskLimit as it is."""
    if isinstance(value, str):
        return disk_limits.parse(value)  # a DiskLimitError says the flag, the key, the rule
    return value


def _settings(value: object) -> object:
    """--set's NAME=VALUE arguments as the environment's layer, read as every NAME=VALUE input
    is (values.name_values); a mapping (a study's, a series') as it is."""
    if isinstance(value, list | tuple):
        return name_values([str(v) for v in value], setting=True, error=InvalidSetting)
    return value


def _version(value: object) -> str:
    """A PostgreSQL version: a major ("18", or 18 in a file) or an exact one ("18.6", "18.6.0"
    read as 18.6), in the one syntax binaries.parse_spec reads (vocabulary.pg_version)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise Refusal(f'expected a version such as "18" (got {value!r})')
    try:
        major, exact = pg_version(str(value))
    except ValueError as e:
        raise Refusal(str(e)) from None
    return exact or str(major)


def _replicas(value: int) -> int:
    if not 0 <= value <= MAX_REPLICAS:
        raise Refusal(f"must be between 0 and {MAX_REPLICAS} (got {value})")
    return value


def _sync(value: str) -> str:
    if value not in SYNC_MODES:
        raise Refusal(f"must be one of {', '.join(SYNC_MODES)} (got {value!r})")
    return value


# a server's version, its streaming replicas and their replication mode, for every model that
# has them (a study's [environment] and [sweep] too)
Version = Annotated[str, BeforeValidator(_version)]
Replicas = Annotated[int, AfterValidator(_replicas)]
SyncMode = Annotated[str, AfterValidator(_sync)]


def check_topology(replicas: int, sync: str, replica_on: Sequence[str] = ()) -> None:
    """The rules of replicas and their sync mode together (`env create`'s flags, a study's
    [environment]): a Refusal naming the fields through the surface's namer. With hosts for
    the replicas (--replica-on), --replicas 0 means one on each."""
    twice = next((h for h in replica_on if list(replica_on).count(h) > 1), None)
    if twice is not None:
        raise Refusal(
            lambda n: f"{twice} is given twice (several replicas on one host: {n('replicas')} N)",
            field="replica_on",
            others=("replicas",),
        )
    if replicas and replicas < len(replica_on):
        raise Refusal(
            lambda n: f"{replicas} is fewer than the {len(replica_on)} {n('replica_on')} hosts",
            field="replicas",
            others=("replica_on",),
        )
    count = replicas or len(replica_on)  # --replica-on alone: one replica on each host
    if count > MAX_REPLICAS:
        raise Refusal(f"must be between 0 and {MAX_REPLICAS} (got {count})", field="replicas")
    if sync != "off" and count == 0:
        raise Refusal(
            lambda n: f"{sync} needs replicas (add {n('replicas')} N)",
            field="sync",
            others=("replicas",),
        )


def check_sync(mode: str) -> None:
    """`env set NAME --sync MODE`: the request's rule of a sync mode, in the flag's words."""
    try:
        _sync(mode)
    except Refusal as e:
        raise PgrigError(f"--sync {e}") from None


# what a disk limit on another host's environment hears (`pgrig env create/set` there: a command
# on that host, whatever surface asked here)
ON_HOST_DISK_LIMIT = (
    "is not supported for environments on other hosts: pgrig limits the disk of servers on "
    "this machine only (run `pgrig env create/set ... --disk-limit` on that host's pgrig "
    "instead)"
)


class EnvironmentRequest(BaseModel):
    """A server to create: its name and version, its configuration, its replicas, where it
    listens and runs, its disk limit, its pooler."""

    model_config = ConfigDict(**{**STRICT, "arbitrary_types_allowed": True})

    name: str = flag_field("NAME")
    # a major ("15") or an exact version ("18.6"): a study file's `version`
    pg: Version = flag_field("--pg", default="15", alias="version")
    profile: str = flag_field("--profile", default="default")
    # the env's own layer; --set's NAME=VALUE arguments are read into it
    settings: Annotated[dict[str, str], BeforeValidator(_settings)] = flag_field(
        "--set", default_factory=dict
    )
    port: Port = flag_field("--port", default=None)  # None: a free one
    insights: bool = flag_field("--insights", default=True)  # pgrig's insights layer
    replicas: Replicas = flag_field("--replicas", default=0)  # streaming replicas
    sync: SyncMode = flag_field("--sync", default="off")  # their replication mode
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
    # a pooler's kind (request/pooler.py); --pooler-on alone means pgbouncer
    pooler: PoolerKind | None = flag_field("--pooler", default=None)
    pooler_on: str | None = flag_field("--pooler-on", default=None)  # with --on

    @model_validator(mode="before")
    @classmethod
    def _pooler_on_means_pgbouncer(cls, data: object) -> object:
        if not isinstance(data, dict) or data.get("pooler_on") is None:
            return data
        return {**data, "pooler": "pgbouncer"} if data.get("pooler") is None else data

    @model_validator(mode="after")
    def _rules(self) -> Self:
        if self.on is not None and self.disk_limit is not None:
            raise Refusal(ON_HOST_DISK_LIMIT, field="disk_limit", others=("on",))
        disk_limits.check_floor(self.disk_limit)  # a DiskLimitError, as parse() raises
        if self.on is None and self.replica_on:
            raise Refusal(
                lambda n: f"needs {n('on')} HOST (the primary's host)",
                field="replica_on",
                others=("on",),
            )
        if self.on is None and self.pooler_on is not None:
            raise Refusal(
                lambda n: (
                    f"HOST needs {n('on')} HOST (the server must listen on a host's address "
                    "for a pooler on another host to reach it)"
                ),
                field="pooler_on",
                others=("on",),
            )
        check_topology(self.replicas, self.sync, self.replica_on)
        return self

    def settings_args(self) -> list[str]:
        """--set NAME=VALUE for each setting, as another host's pgrig reads them back exactly."""
        return [arg for k, v in self.settings.items() for arg in ("--set", setting_arg(k, v))]


# `env set --disk-limit` on an environment on another host: the request's rule, said for flags
REMOTE_DISK_LIMIT = f"{flag_of(EnvironmentRequest, 'disk_limit')} {ON_HOST_DISK_LIMIT}"
