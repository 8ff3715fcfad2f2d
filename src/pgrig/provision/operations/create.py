"""`env create`: the request (its flags, request/environment.EnvironmentRequest) checked before
anything is made, then the environment made here (its pooler with it, or neither) or through a
host's pgrig."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pgrig.errors import PgrigError
from pgrig.provision import cluster, pooler
from pgrig.provision.pooler import PoolerConfig
from pgrig.provision.server import standby
from pgrig.provision.server.standby import Source
from pgrig.provision.state.environment import Environment, check_new_name
from pgrig.request.disk_limit import DiskLimit
from pgrig.request.environment import EnvironmentRequest

Say = Callable[[str], None]


@dataclass(frozen=True)
class CreatePlan:
    """The request checked: the environment requested, and what is made with it."""

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


def check(request: EnvironmentRequest, *, password_stdin: bool = False) -> CreatePlan:
    """What the request cannot judge alone, before anything is made or stdin is read (its
    own rules were checked when it was made: request/environment.py): the name a new
    environment may take, how a replica of another host's primary gets its password, the
    pooler's binary here."""
    check_new_name(request.name)
    if request.on is not None:  # the host's pgrig checks the rest
        return CreatePlan(request)
    source = None
    if request.standby_of is not None:
        source = standby.parse(request.standby_of, request.slot, request.application_name)
        if not password_stdin or request.pooler is not None:
            raise PgrigError("--standby-of takes the replication password on stdin, no --pooler")
    pooler_cfg = None
    if request.pooler is not None:  # pooler: checked before, added after the server (all or none)
        pooler_cfg = pooler.options(kind=request.pooler)
        pooler.binary()
    return CreatePlan(request, source, pooler_cfg)


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
