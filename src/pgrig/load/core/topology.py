"""What a run records about its environment's replicas: who they were, their lag over the run
(series "replication", metrics/replication_metrics.py) and warnings when one fell behind or
stopped streaming while the run lasted."""

from __future__ import annotations

import time
from typing import cast

from pgrig.archive.records import RunRecord
from pgrig.metrics.replication_metrics import ReplicationSampler
from pgrig.metrics.sampler import Sampler
from pgrig.provision.server import replicas
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import ReplicaDoc, TargetServer, TopologyDoc
from pgrig.request import RunRequest

BEHIND_BYTES = 64 * 1024 * 1024  # replay lag at the end of a run that counts as "behind"


def lag_sampler(env: Environment) -> ReplicationSampler:
    return ReplicationSampler(env.conninfo("postgres"), replicas.replica_names(env))


def describe(env: Environment) -> TopologyDoc:
    """The topology at the start of a run (RunRecord.extra["topology"]); a replica on another
    host names it (`on`) and its address."""
    keys = ("name", "on", "host", "port", "slot")
    return {
        "sync": env.sync,
        # env.json's replica entries, the keys a ReplicaDoc declares
        "replicas": [
            cast(ReplicaDoc, {k: r[k] for k in keys if r.get(k) is not None}) for r in env.replicas
        ],
    }


def members(env: Environment) -> list[Environment]:
    """The replicas as servers a client reaches: managed members here, or (an environment on
    another host) each at its host's address, with the environment's passfile."""
    if env.kind != "remote":
        return replicas.members(env)
    return [
        Environment(
            name=f"{env.name}/{r['name']}", kind="remote", major=env.major, version=env.version,
            bindir=env.bindir, host=str(r["host"]), port=int(r["port"]), user=env.user,
            on=r.get("on"), member_dir=str(env.dir),  # its passfile is the environment's
        )
        for r in env.replicas
    ]  # fmt: skip


def _down(servers: list[Environment]) -> list[str]:
    """The servers that do not answer now (a managed one: its postmaster; else a connection)."""
    import psycopg

    from pgrig.provision.server import postmaster

    out = []
    for m in servers:
        if m.managed:
            if not postmaster.is_running(m):
                out.append(m.name)
            continue
        try:
            with psycopg.connect(m.conninfo("postgres"), connect_timeout=5):
                pass
        except psycopg.Error:
            out.append(m.name)
    return out


def lag_results(rec: RunRecord, env: Environment, sampler: Sampler) -> None:
    """Per-replica maxima into extra["topology"]["lag"], warnings for a replica that stopped
    streaming or ended the run far behind. The run's own figures stay as measured."""
    source = sampler.source(ReplicationSampler.name)
    if not isinstance(source, ReplicationSampler):
        return
    cols = rec.series.get("replication") or {}
    samples = len(cols.get("t") or cols.get("ts") or [])
    summary = source.summary(samples)
    rec.extra.setdefault("topology", describe(env))["lag"] = summary
    for name, figures in summary.items():
        flags = cols.get(f"{name}_connected")
        if flags:  # counted over the rows kept, the ones `samples` counts (not every call)
            figures["samples_not_streaming"] = sum(1 for v in flags if v == 0)
        missed = figures["samples_not_streaming"]
        if missed:
            rec.add_warning(
                f"replica_{name}_not_streaming",
                f"replica {name} was not streaming in {missed} of {samples} samples",
            )
        last = [v for v in cols.get(f"{name}_lag_bytes") or [] if v is not None]
        if last and last[-1] >= BEHIND_BYTES:
            rec.add_warning(
                f"replica_{name}_behind",
                f"replica {name} ended the run {last[-1] / 1048576:.0f} MiB behind the primary",
            )


# --- load on replicas: --target replica | split --------------------------------------------------

WRITING_WORKLOADS = (
    "pgbench:tpcb", "pgbench:simple-update", "tpcc", "chbench", "tickets:write"
)  # fmt: skip
LOAD_BALANCE_MAJOR = 16  # libpq's load_balance_hosts, which spreads pgbench's connections


def targets(env: Environment, role: str) -> list[Environment]:
    """The servers a run's load goes to: the primary, the replicas, or all of them."""
    reps = members(env)
    if role == "replica":
        return reps
    if role == "split":
        return [env, *reps]
    return [env]


def check_target(env: Environment, spec: RunRequest, pgbench_major: int | None) -> None:
    """--target replica/split: refused before anything starts when it cannot work."""
    role = spec.target_role
    if role == "primary":
        return
    from pgrig.errors import PgrigError

    if env.kind not in ("managed", "remote") or not env.replicas:
        raise PgrigError(
            f"--target {role} needs an environment with replicas "
            f"(`pgrig env create NAME --replicas N`); {env.name!r} has none"
        )
    if spec.via != "direct":
        raise PgrigError(f"--target {role} connects directly: drop --via {spec.via}")
    writes = [w for w in WRITING_WORKLOADS if spec.workload.startswith(w)]
    if writes:
        raise PgrigError(
            f"--target {role}: replicas are read-only hot standbys and {spec.workload} writes; "
            "use a read-only workload (pgbench:select-only, a SELECT-only script)"
        )
    down = _down(members(env))
    if down:
        raise PgrigError(f"--target {role}: replica {down[0]} is not running (`pgrig env start`)")
    if len(targets(env, role)) > 1 and (pgbench_major or 0) < LOAD_BALANCE_MAJOR:
        raise PgrigError(
            f"--target {role} spreads connections with libpq's load_balance_hosts "
            f"(PostgreSQL {LOAD_BALANCE_MAJOR}+ client): pgbench {pgbench_major} cannot"
        )


def client_env(env: Environment, role: str, dbname: str) -> dict[str, str]:
    """PG* variables for pgbench: every target host and port, connections spread at random
    (libpq's load_balance_hosts; each pgbench client connects once)."""
    servers = targets(env, role)
    out = {
        "PGHOST": ",".join(s.host for s in servers),
        "PGPORT": ",".join(str(s.port) for s in servers),
        "PGUSER": env.user,
        "PGDATABASE": dbname,
        "PGCONNECT_TIMEOUT": "5",
    }
    if len(servers) > 1:
        out["PGLOADBALANCEHOSTS"] = "random"
    if env.kind == "remote" and env.passfile.exists():  # every server's line is in it
        out["PGPASSFILE"] = str(env.passfile)
    return out


def commits(env: Environment, role: str, dbname: str) -> dict[str, int | None]:
    """pg_stat_database.xact_commit of `dbname` on every target (None: unreachable)."""
    import psycopg

    out: dict[str, int | None] = {}
    for server in targets(env, role):
        try:
            with psycopg.connect(server.conninfo(dbname)) as conn:
                row = conn.execute(
                    "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
                ).fetchone()
                out[server.name] = int(row[0]) if row else None
        except psycopg.Error:
            out[server.name] = None
    return out


def target_results(
    rec: RunRecord, before: dict[str, int | None], after: dict[str, int | None], seconds: float
) -> None:
    """Per target: transactions its server committed while pgbench ran (its
    pg_stat_database.xact_commit delta: pgbench's plus a few of pgrig's own queries), their
    share, and that count over the wall time (warm-up included). extra["targets"]."""
    rows: list[TargetServer] = []
    deltas = {
        name: (after.get(name) or 0) - (before.get(name) or 0)
        for name in before
        if before.get(name) is not None and after.get(name) is not None
    }
    total = sum(deltas.values())
    for name in before:
        delta = deltas.get(name)
        rows.append(
            {
                "server": name,
                "transactions": delta,
                "share": round(delta / total, 4) if delta is not None and total else None,
                "tps": round(delta / seconds, 1) if delta is not None and seconds > 0 else None,
            }
        )
        if delta is None:
            rec.add_warning(f"target_{name}_unreachable", f"{name} could not be read after the run")
    rec.extra["targets"] = {"role": rec.extra.get("target_role"), "seconds": round(seconds, 3),
                            "servers": rows}  # fmt: skip


class TargetCommits:
    """Transactions per target server over the run (extra["targets"]); nothing without
    replicas."""

    def __init__(self, env: Environment, spec: RunRequest, dbname: str, rec: RunRecord) -> None:
        self.env, self.role, self.dbname = env, spec.target_role, dbname
        self.before: dict[str, int | None] | None = None
        self.t0 = time.monotonic()
        if env.replicas:
            rec.extra["target_role"] = spec.target_role
            self.before = commits(env, self.role, dbname)

    def results(self, rec: RunRecord) -> None:
        if self.before is None:
            return
        seconds = time.monotonic() - self.t0
        after = commits(self.env, self.role, self.dbname)
        target_results(rec, self.before, after, seconds)
