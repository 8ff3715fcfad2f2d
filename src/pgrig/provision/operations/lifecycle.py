"""`env start|stop|restart|show|destroy|repair`: what each does to an environment on another
host (through its pgrig, its replicas and pooler with it), and destroying or repairing one
here (refused while a run holds it, unless forced)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pgrig.provision import cluster
from pgrig.provision import repair as repairing
from pgrig.provision.remote import environments as remote_env
from pgrig.provision.server.standby import Source
from pgrig.provision.state import env_lock
from pgrig.provision.state.environment import Environment, check_name

Say = Callable[[str], None]


def on_host(name: str) -> Environment | None:
    """The record of NAME when it is an environment on another host, else None."""
    return remote_env.record(name)


def forward_start(remote: Environment, say: Say) -> int:
    """`env start` on the host, then on the replicas' hosts; a pooler on a host of its own
    after its server. The worst exit status."""
    argv = ["env", "start", remote.name]
    return remote_env.forward(
        remote, argv, say=say, replicas_too=remote_env.same_for_replicas(argv), pooler="start"
    )


def forward_stop(remote: Environment, force: bool, say: Say) -> int:
    """`env stop`: a pooler on a host of its own first, the replicas before their primary."""
    argv = ["env", "stop", remote.name, *(["--force"] if force else [])]
    return remote_env.forward(
        remote, argv, say=say, replicas_too=remote_env.same_for_replicas(argv),
        replicas_first=True, pooler="stop",
    )  # fmt: skip


def forward_restart(remote: Environment, force: bool, say: Say) -> int:
    """`env restart` on the host, then on the replicas' hosts."""
    argv = ["env", "restart", remote.name, *(["--force"] if force else [])]
    return remote_env.forward(
        remote, argv, say=say, replicas_too=remote_env.same_for_replicas(argv)
    )


def forward_show(remote: Environment, say: Say) -> int:
    """`env show` of the host's pgrig (state and lag of every member)."""
    return remote_env.forward(remote, ["env", "show", remote.name], say=say)


def destroy(name: str, force: bool, say: Say) -> str:
    """Stop and delete `name` with its data, here or on its host(s); a damaged environment
    too. Refused while a run holds it, unless `force`. Returns what was done, in words."""
    check_name(name)
    remote = on_host(name)
    if remote is not None:
        remote_env.destroy(remote, force, say=say)
        return f"destroyed {name} (on host {remote.on})"
    env_dir = Environment(name=name).dir
    if env_dir.is_dir():  # a damaged environment can still be destroyed
        env_lock.refuse_if_busy(env_dir, name, "env destroy", force)
    env = cluster.destroy_environment(name, say=say)
    return f"{'forgot' if env is not None and not env.managed else 'destroyed'} {name}"


@dataclass(frozen=True)
class Repaired:
    """What `env repair` did or would do: `doc` for --json, `lines` for a person."""

    doc: dict[str, Any]
    lines: list[str] = field(default_factory=list)


def repair_check(name: str) -> Repaired:
    """`env repair --check`: what would be repaired, nothing changed."""
    from pgrig.provision.remote import repair as remote_repair

    check_name(name)
    remote = on_host(name)
    if remote is not None:
        plan = remote_repair.look(remote)
        return Repaired(plan, remote_repair.plan_lines(remote, plan))
    doc = repairing.diagnose(name).as_dict()
    return Repaired(doc, [f"{name}: {remote_repair.needs_text(doc)}"])


def repair(
    name: str,
    *,
    force: bool,
    say: Say,
    source: Source | None = None,
    password: str | None = None,
    reclone: bool = False,
) -> Repaired:
    """Rebuild a damaged environment, here or on its host(s); refused while a run holds it,
    unless `force`. `source`, `password`: where a replica's primary is now (the control
    machine's, for a replica on another host)."""
    from pgrig.provision.remote import repair as remote_repair

    check_name(name)
    remote = on_host(name)
    if remote is not None:
        done = remote_repair.repair(remote, force=force, say=say)
        return Repaired({"name": name, "done": done}, done or [f"{name}: nothing to repair"])
    env_dir = Environment(name=name).dir
    if env_dir.is_dir():
        env_lock.refuse_if_busy(env_dir, name, "env repair", force)
    done = repairing.repair(name, say, source=source, password=password, reclone=reclone)
    notes = repairing.stopped_notes(name)
    lines = [f"{name}: {line}" for line in (done or ["nothing to repair"]) + notes]
    return Repaired({"name": name, "done": done, "notes": notes}, lines)
