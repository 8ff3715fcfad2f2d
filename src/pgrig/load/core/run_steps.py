"""The steps every measured run takes, whichever way its load is driven: one local process
(load/core/measure_here.py) or pgbench on load hosts (load/core/multi_runner.py). Where the client
connects,
the samplers, pinning the server, the server's and the pooler's logs over the run, the run's
last write. Both runners import this module; neither imports the other's steps.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from pgrig import paths
from pgrig.archive.records import RunRecord
from pgrig.errors import Interrupted, first_line
from pgrig.format import pgrig_command
from pgrig.load.core import guard, lifecycle, pooler_log, run_files
from pgrig.provision.state import env_lock
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import ForcedChange, forced_after_s, forced_during_setup
from pgrig.record.protocol import RunStore
from pgrig.request import RunRequest

if TYPE_CHECKING:
    from pgrig.load.core.pinning import Placement
    from pgrig.metrics.os_metrics import OsSampler
    from pgrig.metrics.pooler_metrics import PoolerSampler
    from pgrig.metrics.sampler import Sampler


StopIf = Callable[[float | None], str | None]


class RunInterrupted(Interrupted):
    """Raised after an aborted run has been archived, so the CLI can exit 130."""

    def __init__(self, record: RunRecord):
        super().__init__(f"run {record.id} aborted")
        self.record = record


def client_env(env: Environment, spec: RunRequest, dbname: str) -> dict[str, str]:
    from pgrig.provision import pooler

    if spec.target_role != "primary":  # replicas: load/core/topology.py
        from pgrig.load.core import topology

        return topology.client_env(env, spec.target_role, dbname)

    return pooler.client_env(env, dbname, spec.via, spec.connect)


def placement(spec: RunRequest) -> Placement:
    """The CPUs of each side (--server-cpus/--client-cpus: lists, or counts resolved here)."""
    from pgrig.load.core import pinning

    return pinning.placement(spec.server_cpus, spec.client_cpus)


def client_prefix(spec: RunRequest) -> list[str]:
    """taskset for --client-cpus (it execs: the client keeps its pid)."""
    from pgrig.load.core import pinning

    return pinning.client_prefix(placement(spec).client)


def pin_server(env: Environment, spec: RunRequest) -> Callable[[], None]:
    """Pin the server's processes, and the pooler's on the same CPUs, for the run; returns
    the function that unpins them."""
    from pgrig.provision import pooler
    from pgrig.provision.server import postmaster

    cpus = placement(spec).server
    root = postmaster.pid(env) if cpus and env.managed else None
    if not cpus or root is None:
        return lambda: None
    roots = [root] + (pooler.pids(env) if spec.via != "direct" else [])
    return guard.pin_journaled(env, roots, cpus)


def start_sampler(
    env: Environment,
    conninfo: str,
    dbname: str,
    via: str = "direct",
    wait_sources: Sequence[Any] = (),
    pgrig_children: bool = False,
) -> tuple[Sampler, OsSampler, PoolerSampler | None]:
    """This machine's OS sampler (pgrig, the server and the pooler tracked), the server's and
    the pooler's, replica lag and the wait sources, started. `pgrig_children`: pgrig's child
    processes count as pgrig (a backup's tools, load/backup); a run's client is its own."""
    from pgrig.metrics.os_metrics import OsSampler, fixed_pids, pids_from_file
    from pgrig.metrics.pg_metrics import PgSampler
    from pgrig.metrics.sampler import Sampler

    os_sampler = OsSampler()
    # pgrig's own CPU (this sampler, the live view) is neither the benchmark nor a neighbour.
    os_sampler.track_processes("pgrig", fixed_pids(os.getpid()), children=pgrig_children)
    if env.managed:
        os_sampler.track_processes("server", pids_from_file(env.datadir / "postmaster.pid"))
    pooler_source = None
    if via != "direct":  # pgbouncer's SHOW POOLS/STATS (series "pooler") and its CPU
        from pgrig.metrics.pooler_metrics import PoolerSampler
        from pgrig.provision import pooler

        pooler_source = PoolerSampler(pooler.console_params(env), dbname)
        os_sampler.track_processes("pooler", pooler.pids_callable(env), children=False)
    extra: list[Any] = [pooler_source] if pooler_source is not None else []
    if env.replicas and env.kind in ("managed", "remote"):  # replica lag every second
        from pgrig.load.core import topology

        extra.append(topology.lag_sampler(env))
    extra.extend(wait_sources)  # metrics/wait_sampler.py (load/core/run_scaffold.py chose them)
    sampler = Sampler(os_sampler, PgSampler(conninfo, dbname), extra=extra)
    sampler.start()
    return sampler, os_sampler, pooler_source


def owner() -> str:
    """Who ran it: PGRIG_OWNER, else the login name (a run's and a backup run's record)."""
    with contextlib.suppress(Exception):
        return os.environ.get("PGRIG_OWNER") or getpass.getuser()
    return "unknown"


def pooler_log_offsets(env: Environment, spec: RunRequest) -> pooler_log.LogMark | None:
    return pooler_log.mark(env, spec.via)


def pooler_results(
    rec: RunRecord,
    env: Environment,
    source: Any,
    offsets: pooler_log.LogMark | None,
    art_dir: Path,
) -> None:
    """The pooler's totals over the run and what it logged meanwhile (artifact pooler.log,
    bounded, from this machine or the pooler's host: load/core/pooler_log.py)."""
    if source is None:
        return
    with contextlib.suppress(Exception):
        source.sample()  # a last look after pgbench ended, so the totals cover the whole run
        source.close()
        rec.extra.setdefault("pooler", {})["totals"] = source.summary()
    pooler_log.keep(rec, env, offsets, art_dir)


def measured_nothing(rec: RunRecord) -> str | None:
    """Why a run whose load ended well is still not ok: it measured nothing (no measured time,
    or not one transaction in it, e.g. clients that took the whole run to connect); None when
    it measured something. Both runners ask it before they call a run ok."""
    measured = rec.measured_s if rec.measured_s is not None and rec.measured_s > 0 else 0.0
    if measured > 0 and (rec.transactions or rec.failed):
        return None
    why = f"measured nothing: {measured:g} s measured, {rec.transactions or 0} transactions"
    window = rec.extra.get("window")
    late = window.get("late_start_s") if isinstance(window, dict) else None
    if late:
        why += f" (the clients took {late} s longer than the warm-up to connect)"
    return why


def files_outcome(rec: RunRecord, files: run_files.RunFiles) -> None:
    """A run whose files a full disk cut short fails if it was ok, else says so in a warning."""
    if (disk := files.failure()) is not None:
        if rec.status == "ok":
            rec.status, rec.error = "failed", disk[:2000]
        else:
            rec.add_warning("files_incomplete", disk)


def conclude(
    rec: RunRecord, art_dir: Path, archive: RunStore, console: Console, interrupted: str
) -> RunRecord:
    """The run's artifacts named relative to the artifacts root (an archive stays valid if the
    home moves), its last write, and RunInterrupted when a user or a signal stopped it."""
    from pgrig.archive import artifacts

    rec.artifacts = {k: f"{artifacts.relative(art_dir)}/{v}" for k, v in rec.artifacts.items()}
    finish(rec, archive, console)
    if interrupted:
        raise RunInterrupted(rec)
    return rec


def end_anyway(rec: RunRecord, archive: RunStore, console: Console) -> None:
    """The last write of a run that stopped early: its whole record (or spooled); failing
    that, its status alone, and why said (a run left "running" is called lost later, for a
    reason that is not the real one). The runners' and the backup runs' alike."""
    try:
        finish(rec, archive, console)
    except Exception as e:
        why = first_line(e, named=True)
        ended = lifecycle.end_without_record(archive, rec, f"not stored: {why}")
        console.print(
            f"pgrig: run {rec.id}: its record could not be stored: {why}{ended}", markup=False
        )


CHANGED_UNDER_RUN = "changed_under_run"  # the warning code of forced_changes


def forced_changes(rec: RunRecord, since: float | None = None, last: bool = False) -> None:
    """What commands forced on the environment while the run ran (provision/state/env_lock.py
    note_forced), as events of the run: extra["changed_under_run"] and a warning every surface
    shows, and which keeps comparisons involving the run from a verdict (analysis/compare.py).
    Its settings and disk limit as recorded are the ones at its start. Read from `since` (the
    runner: when it took the environment, so a change during its set-up, before its record
    read the settings, counts too) or its start, to its end; asked again, it adds what came
    since. The `last` read (its last write's) seals the notes: a command forced after it is
    told the run is ending, not promised an event the record would not have."""
    if rec.started_at is None or not rec.env_name:
        return
    start = rec.started_at.timestamp()
    load_end = rec.ended_at.timestamp() if rec.ended_at is not None else None
    env_dir = paths.envs_dir() / rec.env_name
    # to now: the run holds its environment until its last write, and the forced command
    # told its user the change is an event of this run
    since = min(since or start, start)
    if last:
        found = env_lock.sealed_notes(env_dir, since, rec.id)
    else:
        found = env_lock.forced_between(env_dir, since, time.time())
    events: list[ForcedChange] = list(rec.extra.get("changed_under_run") or [])
    for f in found:
        event = ForcedChange(
            after_s=forced_after_s(float(f["at"]), start),
            command=str(f.get("command") or "?"),
            change=str(f.get("change") or "?"),
        )
        if event not in events:
            events.append(event)
    if not events:
        return
    rec.extra["changed_under_run"] = events
    ran_s = load_end - start if load_end is not None else None
    said = "; ".join(
        f"{_when(e['after_s'], ran_s)}, `pgrig {e['command']}`: {e['change']}" for e in events
    )
    # changed only before its start: its load ran wholly on the changed configuration
    figures = (
        "its figures are of the configuration after the change"
        if all(forced_during_setup(e["after_s"]) for e in events)
        else "its figures mix the configurations before and after"
    )
    rec.add_warning(
        CHANGED_UNDER_RUN,
        f"the environment was changed while this run ran ({said}): {figures}, and its "
        "recorded settings and disk limit are those at its start; not comparable as it is: "
        "repeat it without changes under it",
    )
    _cause_first(rec, events, ran_s)


FORCED_CAUSE = "changed under it with --force"  # how a failed run's reason starts then


def _cause_first(rec: RunRecord, events: Sequence[ForcedChange], ran_s: float | None) -> None:
    """A run that failed after a change was forced under it during its load (a restart cuts
    its clients: "terminating connection due to administrator command", a sysbench SIGSEGV)
    failed of that change: its reason leads with it, the symptom after."""
    if rec.status != "failed" or not rec.error or rec.error.startswith(FORCED_CAUSE):
        return
    during = [e for e in events if ran_s is None or e["after_s"] <= ran_s]
    if not during:
        return
    cause = "; ".join(
        f"`pgrig {e['command']}` ({e['change']}) {_when(e['after_s'], ran_s)}" for e in during
    )
    rec.error = f"{FORCED_CAUSE}: {cause}; then {rec.error}"[:2000]


def _when(after_s: float, ran_s: float | None) -> str:
    if forced_during_setup(after_s):
        return "during its set-up"
    if ran_s is not None and after_s > ran_s:
        return f"{after_s:g} s after it started, after its load, while it was being recorded"
    return f"{after_s:g} s after it started"


def finish(rec: RunRecord, archive: RunStore, console: Console) -> None:
    """The run's last write; if the archive cannot take it, the record is spooled (and said).
    Changes forced on the environment meanwhile are recorded first (forced_changes)."""
    with contextlib.suppress(Exception):  # reading the notes must not lose the run
        forced_changes(rec, last=True)
    spooled = lifecycle.finish_or_spool(archive, rec)
    if spooled is not None:
        console.print(
            f"[yellow]warning:[/yellow] archive {escape(archive.url)} is unavailable: run "
            f"{rec.id} is saved in {escape(str(spooled))}; the next pgrig command imports it "
            f"(or `{escape(pgrig_command('runs', 'import', spooled))}`)",
            highlight=False,
            soft_wrap=True,
        )
