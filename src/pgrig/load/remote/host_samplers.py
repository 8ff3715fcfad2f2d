"""OS samplers on the other hosts of a run that drive no load: the database host of an
environment created with `--on HOST` and its pooler's host (`--pooler-on`). Each is a load agent
(load/remote/remote_agent.py) that only samples, once a second, into series "os@HOST"; the
postmaster's processes count as the group "server" (its pid file on the host)."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from pgrig.load.remote import load_hosts
from pgrig.load.remote.agent_client import AgentClient
from pgrig.provision.state.environment import Environment
from pgrig.record.run import RunRecord, RunSeries, SeriesColumns

REMOTE_HOME = "/var/lib/pgrig"  # the home of the pgrig that `pgrig host provision` installs
SILENT_S = 5.0  # a sampler without a row this long at the end of a run: its host went away
SILENT_LOST_S = 10.0  # as a load host's agent (load/remote/multi_load.py)
QUIET_S = 2.5  # rows come every second: silent this long, a host may be going


def lost_after_s() -> float:
    """A sampling agent sends a row every second: this long silent, its host is lost."""
    from pgrig.load.remote.agent_program import silence_s

    return min(SILENT_LOST_S, silence_s())


def db_host(env: Environment) -> str | None:
    """The registered host an environment's server runs on (None: this machine)."""
    on = getattr(env, "on", None)
    return str(on) if on else None


class HostSamplers:
    def __init__(self) -> None:
        self.agents: dict[str, AgentClient] = {}
        self.rows: dict[str, list[tuple[float, dict[str, Any]]]] = {}
        self.roles: dict[str, list[str]] = {}
        self.errors: dict[str, str] = {}
        self.silent: dict[str, float] = {}  # seconds without a row when the run ended
        self.lost_line: str | None = None  # a host lost by the end of the run (see lost())

    def add(self, host: str, role: str, pid_files: dict[str, str]) -> None:
        """Start sampling host (an error is kept, never raised: samplers are not the run)."""
        self.roles.setdefault(host, []).append(role)
        if host in self.agents:
            return
        try:
            agent = AgentClient(load_hosts.transport(host), on_os=self._on_os)
            agent.wait_ready()
            agent.sample(1.0, pid_files)
        except Exception as e:
            self.errors[host] = str(e)
            return
        self.agents[host] = agent
        self.rows[host] = []

    def _on_os(self, host: str, ts: float, row: dict[str, Any]) -> None:
        self.rows[host].append((ts, row))

    def lost(self, after_s: float) -> str | None:
        """A host of the run that fell silent (its agent sends a row every second): cut off,
        or down. One line naming it and its role, None while every host speaks.

        A host already silent a few seconds is waited for, up to after_s: the load that just
        failed (its connections to that host timed out) is then blamed on the right cause,
        whichever of the two timeouts came first."""
        deadline = time.monotonic() + after_s
        while True:
            for host, agent in self.agents.items():
                silent = agent.silent_for()
                if agent.state.lost or silent > after_s:
                    role = " and ".join(self.roles.get(host) or ["sampled"])
                    why = agent.state.lost or f"no word from it for {silent:.0f} s"
                    return f"{role} host {host} lost ({why}: cut off, or down)"
            quiet = any(a.silent_for() > QUIET_S for a in self.agents.values())
            if not quiet or time.monotonic() > deadline:
                return None
            time.sleep(0.2)

    def blame(self, rec: RunRecord) -> None:
        """A failed run whose host was lost says so first (the cause before its consequence:
        pgbench's connections to that host timing out)."""
        if self.lost_line and rec.status == "failed":
            rec.error = f"{self.lost_line}; {rec.error}"[:2000]

    def stop(self) -> RunSeries:
        """The samplers' series; a silent host is named (lost_line) and given up, not waited
        for."""
        self.lost_line = self.lost(lost_after_s())
        for host, agent in self.agents.items():
            self.silent[host] = agent.silent_for()
            if self.silent[host] >= SILENT_S:
                agent.lose(f"no row for {self.silent[host]:.0f} s")  # not waited for on close
            with contextlib.suppress(Exception):
                agent.close()
        return columns(self.rows)


def columns(rows: dict[str, list[tuple[float, dict[str, Any]]]]) -> dict[str, dict[str, list]]:
    """Rows per host -> columnar series "os@HOST" (epoch "ts"; a late column backfilled)."""
    out: RunSeries = {}
    for host, kept in rows.items():
        if not kept:
            continue
        keys: list[str] = []
        for _ts, row in kept:
            keys += [k for k in row if k not in keys]
        cols: SeriesColumns = {"ts": [ts for ts, _ in kept]}
        cols["up"] = [1 if row else 0 for _, row in kept]
        for k in keys:
            cols[k] = [row.get(k) for _, row in kept]
        out[f"os@{host}"] = cols
    return out


def pooler_host(env: Environment) -> str | None:
    """The registered host an environment's pooler runs on (None: none, or this machine)."""
    pooler = getattr(env, "pooler", None) or {}
    if not db_host(env) or not pooler:
        return None
    return str(pooler.get("on") or db_host(env))


def for_env(env: Any, via: str = "direct") -> HostSamplers:
    """Samplers for the environment's own host, when it is another machine, and for its
    pooler's host on a run through the pooler (pgbouncer's processes: the group "pooler")."""
    samplers = HostSamplers()
    wanted: dict[str, tuple[list[str], dict[str, str]]] = {}
    host = db_host(env)
    if host is not None:
        pid = f"{REMOTE_HOME}/envs/{env.name}/data/postmaster.pid"
        wanted[host] = (["db"], {"server": pid})
        for rep in getattr(env, "replicas", None) or []:  # replicas on their own hosts
            if rep.get("env") and rep.get("on") and rep["on"] != host:
                roles, pid_files = wanted.setdefault(str(rep["on"]), ([], {}))
                roles.append("replica")
                pid_files.setdefault(
                    "server", f"{REMOTE_HOME}/envs/{rep['env']}/data/postmaster.pid"
                )
    pooled = pooler_host(env) if via != "direct" else None
    if pooled is not None:
        roles, pid_files = wanted.setdefault(pooled, ([], {}))
        roles.append("pooler")
        pid_files["pooler"] = f"{REMOTE_HOME}/envs/{env.name}/pooler/pgbouncer-0.pid"
    for name, (roles, pid_files) in wanted.items():
        samplers.add(name, roles[0], pid_files)  # one agent per host, every group at once
        samplers.roles[name].extend(roles[1:])
    return samplers


def record(rec: RunRecord, samplers: HostSamplers, load_hosts_: list[str] | None = None) -> None:
    """The roles of the run's hosts (extra["host_roles"]) and samplers that could not start."""
    roles = {h: ["load"] for h in load_hosts_ or []}
    for host, rs in samplers.roles.items():
        roles.setdefault(host, []).extend(r for r in rs if r not in roles.get(host, []))
    if roles:
        rec.extra["host_roles"] = roles
    if samplers.errors:
        rec.extra["host_sampler_errors"] = dict(samplers.errors)
    for host, quiet in samplers.silent.items():
        if quiet >= SILENT_S:
            what = "/".join(samplers.roles.get(host, [])) or "sampled"
            rec.add_warning(
                f"host_{host}_silent",
                f"host {host} ({what}) stopped answering {quiet:.0f} s before the run ended "
                "(cut off or down?): its samples end there",
            )
