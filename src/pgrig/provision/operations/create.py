"""`env create`: the flags checked together before anything is made, then the environment
made here (its pooler with it, or neither) or through a host's pgrig."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pgrig.errors import PgrigError
from pgrig.provision import cluster, pooler
from pgrig.provision.pooler import PoolerConfig
from pgrig.provision.server import standby
from pgrig.provision.server.standby import Source
from pgrig.provision.settings import config
from pgrig.provision.state.environment import Environment, check_new_name
from pgrig.request import disk_limit as disk_limits
from pgrig.request.disk_limit import DiskLimit
from pgrig.request.environment import EnvironmentRequest

Say = Callable[[str], None]

REMOTE_DISK_LIMIT = (
    "--disk-limit is not supported for environments on other hosts: pgrig limits the disk of "
    "servers on this machine only (run `pgrig env create/set ... --disk-limit` on that host's "
    "pgrig instead)"
)


@dataclass(frozen=True)
class CreateOptions:
    """Everything `env create` is asked: its flags as given (--set and --disk-limit unparsed,
    how the secret comes); check() turns them into the EnvironmentRequest."""

    name: str
    pg: str = "15"
    profile: str = "default"
    sets: list[str] = field(default_factory=list)
    port: int | None = None
    pooler: str | None = None
    pooler_on: str | None = None
    insights: bool = True
    replica_count: int = 0
    sync: str = "off"
    on: str | None = None
    listen: str | None = None
    password_stdin: bool = False
    replica_on: list[str] = field(default_factory=list)
    standby_of: str | None = None
    slot: str | None = None
    application_name: str | None = None
    disk_limit: str | None = None


@dataclass(frozen=True)
class CreatePlan:
    """The flags checked together: the environment requested, and what is made with it."""

    request: EnvironmentRequest
    standby_of: Source | None = None  # a replica of a primary on another host
    pooler: PoolerConfig | None = None  # checked before the server is made

    @property
    def on_host(self) -> bool:
        return self.request.on is not None

    @property
    def disk_limit(self) -> DiskLimit | None:
        return self.request.disk_limit

    @property
    def settings(self) -> dict[str, str]:
        return self.request.settings


def check(opts: CreateOptions) -> CreatePlan:
    """Every flag and their combinations, before anything is made or stdin is read."""
    check_new_name(opts.name)  # first: a reserved name is refused before anything else
    limit = disk_limits.parse(opts.disk_limit) if opts.disk_limit is not None else None
    if limit is not None and opts.on is not None:
        raise PgrigError(REMOTE_DISK_LIMIT)
    disk_limits.check_floor(limit)
    if opts.replica_on and opts.on is None:
        raise PgrigError("--replica-on needs --on HOST (the primary's host)")
    if opts.pooler_on is not None and opts.on is None:
        raise PgrigError(
            "--pooler-on HOST needs --on HOST (the server must listen on a host's address "
            "for a pooler on another host to reach it)"
        )
    if opts.on is not None:  # the settings read here as the host's pgrig reads them
        return CreatePlan(_request(opts, limit, config.parse_assignments(opts.sets)))
    source = None
    if opts.standby_of is not None:
        source = standby.parse(opts.standby_of, opts.slot, opts.application_name)
        if not opts.password_stdin or opts.pooler is not None:
            raise PgrigError("--standby-of takes the replication password on stdin, no --pooler")
    settings = config.parse_assignments(opts.sets)
    pooler_cfg = None
    if opts.pooler is not None:  # pooler: checked before, added after the server (all or none)
        pooler_cfg = pooler.options(kind=opts.pooler)
        pooler.binary()
    return CreatePlan(_request(opts, limit, settings), source, pooler_cfg)


def _request(
    opts: CreateOptions, limit: DiskLimit | None, settings: dict[str, str]
) -> EnvironmentRequest:
    # --pooler-on without --pooler: pgbouncer, the one kind
    kind = opts.pooler if opts.pooler is not None or opts.pooler_on is None else "pgbouncer"
    return EnvironmentRequest(
        name=opts.name, pg=opts.pg, profile=opts.profile, settings=settings, port=opts.port,
        insights=opts.insights, replicas=opts.replica_count, sync=opts.sync, listen=opts.listen,
        disk_limit=limit, standby_of=opts.standby_of, slot=opts.slot,
        application_name=opts.application_name, on=opts.on, replica_on=opts.replica_on,
        pooler=kind, pooler_on=opts.pooler_on,
    )  # fmt: skip


def on_host(plan: CreatePlan, say: Say) -> Environment:
    """The environment made by the pgrig of host `--on` (provision/remote/environments.py)."""
    from pgrig.provision.remote import environments as remote_env

    return remote_env.create(plan.request, say=say)


def here(plan: CreatePlan, secret: str | None, say: Say) -> Environment:
    """The environment made on this machine, its pooler with it or neither. `secret`: the
    superuser's SCRAM verifier, or for a replica (--standby-of) the replication password."""
    replica = plan.standby_of is not None
    env = cluster.create_environment(
        plan.request,
        progress=say,
        password_verifier=None if replica else secret,
        replication_password=secret if replica else None,
    )
    if plan.pooler is not None:
        try:
            env = pooler.add(env, plan.pooler)
        except BaseException:
            cluster.destroy_environment(plan.request.name)
            raise
        say(f"{plan.pooler.kind} on 127.0.0.1:{(env.pooler or {}).get('port')}")
    return env
