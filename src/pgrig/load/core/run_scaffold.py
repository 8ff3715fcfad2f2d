"""Everything around a run's load, opened and closed in one place, whichever runner drives the
load: one client process here (load/core/measure_here.py) or clients on load hosts
(load/core/multi_runner.py). A runner only starts its load, follows it and fills its results:

    with RunScaffold(ctx, load_hosts) as run:   # server log, insights, target commits, the
        ...connect the load...                  #   other hosts' samplers, the wait sources,
        run.load_span(client_pids, partial)      #   the samplers, the server's pinning; then
        ...start the load, follow it...          #   the harness meter and the run's lease
    run.after_load(app_name, engine)             # ended_at, left backends, hosts, files
    ...fill the results, the status...
    return run.conclude(completed, engine)       # plan top-up, server log, pooler, replicas,
                                                 # insights, harness cost, the last write

Whatever ends the block (the load's end, a signal, an error), what was opened is closed in
reverse order; the samplers' series are kept in `series_raw`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from pgrig.archive.records import RunRecord
from pgrig.load.core import (
    guard,
    harness_meter,
    left_backends,
    lifecycle,
    run_files,
    run_steps,
)
from pgrig.load.core.run_context import RunContext
from pgrig.load.core.server_log_follow import RunServerLog
from pgrig.load.engines import results
from pgrig.load.remote import host_samplers
from pgrig.record.documents import BackendEnded, RunExtra, WaitSamplingDoc
from pgrig.record.run import RunSeries

if TYPE_CHECKING:
    from pgrig.insights.collector import Collection
    from pgrig.load.remote.host_samplers import HostSamplers
    from pgrig.metrics.os_metrics import OsSampler
    from pgrig.metrics.pooler_metrics import PoolerSampler
    from pgrig.metrics.sampler import Sampler

T = TypeVar("T")
SeriesSource = Callable[[], RunSeries]


class RunScaffold:
    """One run's scaffold (see the module docstring). Its parts are attributes once entered:
    server_log (None: pgrig reads no log of this server), collection, other_hosts, sampler,
    os_sampler, pooler_source; after the block, files and ended (the backends pgrig ended)."""

    def __init__(self, ctx: RunContext, load_hosts: Sequence[str] = ()) -> None:
        from pgrig.archive import artifacts

        assert ctx.rec.id is not None  # begin_run gave it one
        self.ctx = ctx
        self.rec: RunRecord = ctx.rec
        self.load_hosts = list(load_hosts)  # the run's load hosts (--load-from), by name
        self.art_dir = artifacts.run_artifacts_dir(ctx.rec.id, archive=ctx.archive.url)
        self.art_dir.mkdir(parents=True, exist_ok=True)
        self.series_raw: dict[str, Any] = {}  # filled as the samplers stop
        self.interrupted = ""  # why the user or a signal stopped the run, if they did
        self.pooler_log_offsets = run_steps.pooler_log_offsets(ctx.env, ctx.spec)
        self.server_log: RunServerLog | None = None
        self.ended: list[BackendEnded] = []
        self._stack = contextlib.ExitStack()

    # --- around the load ---------------------------------------------------------------------

    def __enter__(self) -> Self:
        from pgrig.load.core import topology

        ctx, rec = self.ctx, self.rec
        with contextlib.ExitStack() as stack:  # a part that fails to open closes those before
            self.server_log = RunServerLog.open(ctx.env, self.art_dir)  # first: the
            # collection's reloads are the run's own
            self.collection: Collection = stack.enter_context(_insights_collection(ctx))
            if self.server_log is not None:
                self.server_log.feed = self.collection.log_feed()
                self.server_log.follow()
                stack.callback(self.server_log.stop)
            self.commits = topology.TargetCommits(ctx.env, ctx.spec, ctx.dbname, rec)
            self.other_hosts: HostSamplers = stack.enter_context(_other_hosts(ctx, self.series_raw))
            waits = _wait_sources(ctx)  # never raises
            self.sampler: Sampler
            self.os_sampler: OsSampler
            self.pooler_source: PoolerSampler | None
            self.sampler, self.os_sampler, self.pooler_source = stack.enter_context(
                _sampling(ctx, self.series_raw, waits, rec)
            )
            stack.enter_context(_server_pinned(ctx))
            self._stack = stack.pop_all()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return self._stack.__exit__(kind, exc, tb)

    def enter(self, part: contextlib.AbstractContextManager[T]) -> T:
        """A part of the runner's own load, closed before the scaffold's parts."""
        return self._stack.enter_context(part)

    def callback(self, undo: Callable[[], object]) -> None:
        self._stack.callback(undo)

    def load_span(self, client_pids: Callable[[], Iterable[int]], partial: SeriesSource) -> None:
        """What pgrig itself takes over the load (`client_pids`, asked at the end: the load
        generator's processes here, not pgrig's harness) and the run's lease: its heartbeat
        and its partial series (`partial`: the load's own series, beside the samplers')."""
        ctx = self.ctx
        self.enter(harness_meter.metering(ctx.env, ctx.dbname, self.rec, client_pids))
        run_lease = lifecycle.RunLease(
            ctx.archive, self.rec, self.art_dir, lambda: self._partial_series(partial)
        )
        run_lease.start()  # heartbeat and partial series, until the load has ended
        self.callback(run_lease.stop)

    def track_client(self, role: str, *pids: int) -> None:
        """This machine's processes of the load counted as the benchmark's `role` (pgbench, its
        agent), not as neighbours (metrics/cpu_share.py)."""
        from pgrig.metrics.os_metrics import fixed_pids

        with contextlib.suppress(Exception):
            self.os_sampler.track_processes(role, fixed_pids(*pids), children=False)

    def interrupt(self, stop: KeyboardInterrupt) -> None:
        """The load was stopped by the user or a signal: the run ends aborted, said why."""
        self.interrupted = guard.interruption(stop)

    def _partial_series(self, partial: SeriesSource) -> RunSeries:
        """The series gathered so far, as a lost run would keep them (load/core/lifecycle.py)."""
        out = dict(partial())
        origin = results.sample_origin(self.rec)
        if origin is not None:
            for kind, cols in self.sampler.snapshot().items():
                kept = results.rebased(cols, origin)
                if kept is not None:
                    out[kind] = kept
        return out

    # --- after the load ----------------------------------------------------------------------

    def after_load(self, app_name: str | None, engine: str) -> run_files.RunFiles:
        """The load has ended and the scaffold is closed: the run's end, the client's sessions
        left on the server (`app_name`) ended, the hosts' roles; the run's files, to write."""
        ctx, rec = self.ctx, self.rec
        rec.ended_at = datetime.now(UTC)
        self.ended = left_backends.end_left_backends(rec, ctx.env, ctx.spec, app_name, engine)
        host_samplers.record(rec, self.other_hosts, self.load_hosts)
        self.files = run_files.RunFiles(rec, self.art_dir)  # a full disk fails the run
        rec.artifacts = {}
        return self.files

    def conclude(self, completed: bool, engine: str) -> RunRecord:
        """The runner filled the results and the status: what the run measured around its load
        (plans of rare scripts, the server log, the pooler, replicas, insights, pgrig's own
        cost), and its last write."""
        from pgrig.load.core import plan_top_up, topology

        ctx, rec = self.ctx, self.rec
        if completed and engine == "pgbench":  # rare scripts' plans, after the window
            plan_top_up.run(self.collection, ctx.spec, ctx.env, ctx.dbname, rec)
        self.other_hosts.blame(rec)  # the db host cut off: named before the client's errors
        if self.server_log is not None:
            self.server_log.finish(self.files, rec)
        run_steps.pooler_results(
            rec, ctx.env, self.pooler_source, self.pooler_log_offsets, self.art_dir
        )
        if ctx.env.replicas:
            topology.lag_results(rec, ctx.env, self.sampler)
            self.commits.results(rec)
        self.collection.finish(rec, self.art_dir)
        harness_meter.add_server_log(rec)
        run_steps.files_outcome(rec, self.files)
        return run_steps.conclude(rec, self.art_dir, ctx.archive, ctx.console, self.interrupted)


# --- the scaffold's parts, each undone when the load ends -------------------------------------


@contextlib.contextmanager
def _insights_collection(ctx: RunContext) -> Iterator[Collection]:
    """The insights collection (it never raises); its per-run settings undone at the end."""
    from pgrig.insights import collector as insights

    collection = insights.start(ctx.env, ctx.dbname, ctx.spec, ctx.rec)
    try:
        yield collection
    finally:
        collection.stop()


@contextlib.contextmanager
def _other_hosts(ctx: RunContext, series: dict[str, Any]) -> Iterator[HostSamplers]:
    """The samplers of the server's host when it is another machine; their series kept."""
    other = host_samplers.for_env(ctx.env, ctx.spec.via)  # the server's, the pooler's on --via
    try:
        yield other
    finally:
        series.update(other.stop())


@contextlib.contextmanager
def _sampling(
    ctx: RunContext, series: dict[str, Any], waits: Sequence[Any], rec: RunRecord
) -> Iterator[tuple[Sampler, OsSampler, PoolerSampler | None]]:
    """This machine's OS, server and pooler samplers and the wait sources
    (_wait_sources: their cost recorded in rec.extra); their series kept."""
    try:
        sampler, os_sampler, pooler_source = run_steps.start_sampler(
            ctx.env, ctx.conninfo, ctx.dbname, ctx.spec.via, waits
        )
    except BaseException:
        for source in waits:  # the Sampler that would close them was never made
            source.close()
        raise
    try:
        yield sampler, os_sampler, pooler_source
    finally:
        series.update(sampler.stop())
        _record_wait_stats(rec.extra, waits)


@contextlib.contextmanager
def _server_pinned(ctx: RunContext) -> Iterator[None]:
    """--server-cpus for the load's span (journaled: a killed run's pinning is undone later)."""
    unpin = run_steps.pin_server(ctx.env, ctx.spec)
    try:
        yield
    finally:
        unpin()


# The run's wait-event sources, chosen once: pg_stat_activity's rate and pg_wait_sampling.
# _wait_sources returns the extra Sampler sources (metrics/wait_sampler.py) and writes what it
# chose, and why, to RunRecord.extra["wait_sampling"]: {"hz", "why", "pg_wait_sampling":
# {"used", "version", "profile_period_ms", "samples_cpu"} or {"used": false, "reason"}}. The
# insights' wait profile (insights/waits.py) reads it. A source that cannot be opened costs the
# run nothing but its finer profile: the reason is recorded and the run goes on.


def _wait_sources(ctx: RunContext) -> list[Any]:
    from pgrig.metrics import wait_sampler

    hz, why = wait_sampler.choose_hz(ctx.spec.duration_s, ctx.spec.waits_hz)
    chosen: WaitSamplingDoc = {"hz": hz, "why": why}
    sources: list[Any] = []
    if hz > 1:
        sources.append(wait_sampler.WaitSampler(ctx.conninfo, ctx.dbname, hz))
    else:
        chosen["hz"] = 1.0  # the PostgreSQL sampler's own snapshot, once a second
    made = ctx.env.kind != "external"  # pgrig made the server (here or on another host)
    profile, found = wait_sampler.open_wait_sampling(ctx.conninfo, ctx.dbname, made)
    chosen["pg_wait_sampling"] = found
    if profile is not None:
        sources.append(profile)
    else:
        chosen["why"] += f"; pg_stat_activity only: {found['reason']}"
    ctx.rec.extra["wait_sampling"] = chosen
    return sources


def _record_wait_stats(extra: RunExtra, sources: Sequence[Any]) -> None:
    """What the finer sampler cost and took (snapshots, CPU and round trip per snapshot)."""
    for source in sources:
        stats = getattr(source, "stats", None)
        if stats is not None and "wait_sampling" in extra:
            extra["wait_sampling"]["sampler"] = stats()
