"""The runner's hooks: collect a run's insights around pgbench, never failing the run.

    collection = start(env, dbname, spec, rec)   # before pgbench: checks, extension, plans on
    feed = collection.log_feed()                 # the runner feeds it the server log's lines
    ...pgbench runs...
    collection.stop()                            # pgbench ended: last snapshot, plans off
    collection.finish(rec, art_dir)              # rec.insights from snapshots, log, samples

start() looks at what the server offers (the settings snapshot in rec.settings says which
libraries are loaded), creates pg_stat_statements in the run's database of a managed
environment when the library is loaded, and starts one thread that takes the statements
snapshot when the measured window opens (after the warm-up) and keeps auto_explain's sample
rate within the plan budget (insights/sampling.py) by rewriting the insights layer's run-time
values and reloading. stop() takes the closing snapshot and puts the layer back. The server
log's plans and digest come from every line of the run's part of pgrig's log file, which the
runner reads once and feeds (insights/log_feed.py; the file it keeps is a bounded excerpt),
or, with logging_collector on, from the collector's files read here. Everything
that cannot be collected becomes {"collected": false, "reason": "not collected: ..."} in its
part; no exception leaves these hooks.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pgrig import interrupts
from pgrig.errors import first_line
from pgrig.format import pgrig_command
from pgrig.insights import log_digest, plans, sampling, server_log, statements, waits
from pgrig.insights.log_feed import LogFeed
from pgrig.provision import run_journal
from pgrig.provision.settings import config, insights_layer
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import (
    InsightPart,
    InsightsDoc,
    LogDigestDoc,
    PlansDoc,
    PlanTopUpDoc,
    StatementsDoc,
    WaitsDoc,
)
from pgrig.record.json_values import JsonValue
from pgrig.record.run import RunRecord

if TYPE_CHECKING:
    from pgrig.request import RunRequest

APPLICATION_NAME = "pgrig-insights"
STATEMENT_TIMEOUT_MS = 5000


class Collection:
    """One run's collection; see the module docstring for the life cycle."""

    def __init__(self, env: Environment, dbname: str, spec: RunRequest, rec: RunRecord) -> None:
        self.env, self.dbname, self.rec = env, dbname, rec
        self.warmup_s = float(spec.warmup_s or 0.0)
        self.duration_s = spec.duration_s
        self.timed = spec.duration_s is not None
        self.started = time.time()
        self.reasons: dict[str, str] = {}
        self.notes: list[str] = []
        self.conn: Any = None
        self.ext: statements.Extension | None = None
        self.start_snap: statements.Snapshot | None = None
        self.end_snap: statements.Snapshot | None = None
        self.snap_times: list[float] = []
        self.texts: dict[int, str] = {}
        self.budget: sampling.PlanBudget | None = None
        self.sampling: dict[str, JsonValue] = {}
        self.runtime_on = False
        self.last_calls = 0.0
        self.last_check = self.started
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None
        self.stopped = False
        self.lock = threading.Lock()  # the connection: the thread, then stop()
        self.collector_dir: Path | None = None  # logging_collector's directory, when on
        self.collector_sizes: dict[str, int] = {}
        self.top_up: PlanTopUpDoc | None = None  # load/core/plan_top_up.py, when it ran
        self.feed: LogFeed | None = None  # the runner's reading of pgrig's log file

    # --- start ------------------------------------------------------------------------------
    def begin(self) -> None:
        loaded = _setting(self.rec, "shared_preload_libraries") or ""
        missing = insights_layer.missing_libraries(loaded)
        self._check_log()
        self._connect()
        self._refresh_conf()
        self._prepare_statements(missing)
        self._prepare_plans(missing)
        if (self.ext and self.start_snap is None) or self.budget:
            self.thread = threading.Thread(target=self._run, name="pgrig-insights", daemon=True)
            self.thread.start()

    def _connect(self) -> None:
        import psycopg

        self.conn = psycopg.connect(
            self.env.conninfo(self.dbname), autocommit=True, application_name=APPLICATION_NAME
        )
        self.conn.execute(f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}")
        # its own writes (CREATE EXTENSION) never wait for synchronous replicas: with them
        # gone, the run would hang here, before its load and the load's own end
        self.conn.execute("SET synchronous_commit = local")
        with contextlib.suppress(psycopg.Error):
            self.conn.execute(insights_layer.QUIET_SESSION_SQL)

    def _refresh_conf(self) -> None:
        """A pgrig.conf out of date is rewritten and reloaded: an environment made before the
        insights layer existed gets it (the log settings at once, the libraries at the next
        restart, which the parts not collected ask for), and run-time sampling values left by
        a killed run are reset."""
        if not self.env.managed or not self.env.insights:
            return
        path = self.env.datadir / config.CONF_NAME
        if path.exists() and path.read_text() != config.render(config.layers(self.env)):
            config.write_conf(self.env)
            self._reload()
            self.notes.append("pgrig.conf was out of date: rewritten and reloaded")

    def _check_log(self) -> None:
        """The server log is readable for managed environments: pgrig's log file, or with
        logging_collector on the collector's text files (their sizes now mark the start)."""
        reason = None
        destinations = (_setting(self.rec, "log_destination") or "stderr").split(",")
        collector_on = (_setting(self.rec, "logging_collector") or "off") == "on"
        if self.env.kind == "external":
            reason = "pgrig cannot read the log of an external server"
        elif "stderr" not in [d.strip() for d in destinations]:
            reason = "log_destination has no stderr: pgrig reads the server's text log"
        elif self.env.kind == "remote":  # its log file is read over SSH after the load
            if collector_on:
                reason = (
                    f"logging_collector is on: pgrig reads the log of a server on host "
                    f"{self.env.on} from its own log file only"
                )
            else:
                self.reasons["plans"] = "not collected: " + _remote_plans_reason(self.env)
        elif collector_on:
            directory = Path(_setting(self.rec, "log_directory") or "log")
            self.collector_dir = (
                directory if directory.is_absolute() else (self.env.datadir / directory)
            )
            self.collector_sizes = server_log.text_log_sizes(self.collector_dir)
        elif not self.env.logfile.exists():
            reason = f"the server log {self.env.logfile} does not exist"
        if reason:
            self.reasons["log_digest"] = self.reasons["plans"] = f"not collected: {reason}"

    def _prepare_statements(self, missing: list[str]) -> None:
        if "pg_stat_statements" in missing:
            self.reasons["statements"] = "not collected: " + self._not_loaded("pg_stat_statements")
            return
        self.ext = statements.find_extension(self.conn)
        if self.ext is None and self.env.kind != "external":  # pgrig made it, here or there
            self.conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            self.notes.append(f"created extension pg_stat_statements in database {self.dbname}")
            self.ext = statements.find_extension(self.conn)
        if self.ext is None:
            self.reasons["statements"] = (
                f"not collected: pg_stat_statements is not installed in database {self.dbname} "
                "(CREATE EXTENSION pg_stat_statements)"
            )
            return
        if not self.timed or self.warmup_s <= 0:  # the window opens with pgbench
            self._take_start()

    def _prepare_plans(self, missing: list[str]) -> None:
        if "plans" in self.reasons:
            return
        if "auto_explain" in missing:
            self.reasons["plans"] = "not collected: " + self._not_loaded("auto_explain")
            return
        if not self.env.insights:
            self.sampling = {"set_by": "user"}  # whatever auto_explain the user configured
            return
        merged = config.layers(self.env).merged()
        user_set = {
            k: v for k in insights_layer.RUNTIME_KEYS if (v := merged.get(k)) and v[1] != "insights"
        }
        if user_set:
            self.sampling = {"set_by": "user", **{k: v[0] for k, v in user_set.items()}}
            self.notes.append("plan sampling as the user set it: " + ", ".join(user_set))
            return
        if self.ext is None:
            self.reasons["plans"] = (
                "not collected: plan sampling needs pg_stat_statements to keep the number of "
                "plans per run within its budget"
            )
            return
        self.budget = sampling.PlanBudget()
        self.last_calls = statements.total_calls(self.conn, self.ext)
        self.last_check = time.time()
        if self.budget.rate > 0:
            self._apply_rate(self.budget.rate)
        else:  # silent until the statement rate is measured: as the layer is, no reload
            self.budget.history.append((round(time.time() - self.window_start(), 3), 0.0))

    def _not_loaded(self, lib: str) -> str:
        if not self.env.managed:
            return f"{lib} is not in the server's shared_preload_libraries"
        if not self.env.insights:
            return (
                f"{lib} is not loaded and insights are off for {self.env.name} "
                f"({pgrig_command('env', 'set', self.env.name, '--insights')})"
            )
        if lib not in insights_layer.available_libraries(self.env.bindir or ""):
            return f"this PostgreSQL build has no {lib} module"
        return (
            f"{lib} is not loaded yet: restart the environment to load it "
            f"({pgrig_command('env', 'restart', self.env.name)})"
        )

    # --- the thread ---------------------------------------------------------------------------
    def window_start(self) -> float:
        """Epoch seconds at which the measured window opens (pgbench's launch + warm-up)."""
        launched = float(self.rec.extra.get("pgbench_launched_at") or self.started)
        return launched + (self.warmup_s if self.timed else 0.0)

    def _window_end(self) -> float | None:
        if self.duration_s is None:
            return None
        return self.window_start() + self.duration_s

    def _run(self) -> None:
        next_check = self.started + sampling.next_check(0.0) if self.budget else float("inf")
        while not self.stop_event.is_set():
            opens = self.window_start() if self.ext and self.start_snap is None else float("inf")
            wake = min(next_check, opens)
            if wake == float("inf") or self.stop_event.wait(max(0.0, wake - time.time())):
                return
            now = time.time()
            try:
                if self.ext and self.start_snap is None and now >= self.window_start():
                    self._take_start()
                if self.budget and now >= next_check:
                    self._revise(now)
                    next_check = self.started + sampling.next_check(now - self.started)
            except Exception as e:  # the collection stops; the run goes on
                self.notes.append(f"insights collection stopped: {first_line(e, named=True)}")
                if self.start_snap is None:
                    self.reasons.setdefault(
                        "statements", f"not collected: {first_line(e, named=True)}"
                    )
                return

    def _take_start(self) -> None:
        assert self.ext is not None
        with self.lock:
            self.start_snap = statements.take(self.conn, self.ext)
        self.snap_times.append(time.time())

    def _revise(self, now: float) -> None:
        assert self.budget is not None and self.ext is not None
        with self.lock:
            calls = statements.total_calls(self.conn, self.ext)
        end = self._window_end()
        new = self.budget.revise(
            calls - self.last_calls, now - self.last_check, None if end is None else end - now
        )
        self.last_calls, self.last_check = calls, now
        if new is not None:
            self._apply_rate(new)

    def _apply_rate(self, rate: float) -> None:
        """The insights layer's run-time values for `rate`, in pgrig.conf, reloaded."""
        assert self.budget is not None
        runtime = sampling.runtime_settings(rate)
        run_journal.note_conf(self.env, sorted(runtime), run_journal.INSIGHTS)  # before
        # env.json as it is now: a setting forced under the run stays (Environment.current)
        config.write_conf(self.env.current(), insights_runtime=runtime)
        self.runtime_on = True
        self._reload()
        t = round(time.time() - self.window_start(), 3)
        self.budget.history.append((t, rate))

    def _reload(self) -> None:
        """SIGHUP through our own session, and wait until it has re-read the files."""
        with self.lock:
            before = self.conn.execute("SELECT pg_conf_load_time()").fetchone()[0]
            self.conn.execute("SELECT pg_reload_conf()")
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                if self.conn.execute("SELECT pg_conf_load_time()").fetchone()[0] != before:
                    break
                time.sleep(0.02)

    # --- stop ---------------------------------------------------------------------------------
    def stop(self) -> None:
        """pgbench has ended: the closing snapshot, auto_explain silent again (idempotent)."""
        if self.stopped:
            return
        self.stopped = True
        self.stop_event.set()
        if self.thread is not None:
            interrupts.join(self.thread, timeout=STATEMENT_TIMEOUT_MS / 1000 + 5)
        try:
            self._close_statements()
        except Exception as e:
            self.reasons.setdefault("statements", f"not collected: {first_line(e, named=True)}")
        finally:
            self._restore()

    def _close_statements(self) -> None:
        if self.ext is None or "statements" in self.reasons:
            return
        if self.start_snap is None:
            self.reasons["statements"] = (
                "not collected: the run ended before its measured window began"
            )
            return
        with self.lock:
            self.end_snap = statements.take(self.conn, self.ext)
            self.snap_times.append(time.time())
            changed, _ = statements.deltas(self.ext, self.start_snap, self.end_snap)
            keys = statements.top_keys(changed)
            self.texts = statements.fetch_texts(self.conn, self.ext, [k[2] for k in keys])

    def _restore(self) -> None:
        try:
            if self.runtime_on:
                config.write_conf(self.env.current())
                self.runtime_on = False
                try:
                    self._reload()
                except Exception:  # our session is gone: reload the way the CLI does
                    from pgrig.provision.server import postmaster

                    postmaster.reload(self.env)
            run_journal.done(self.env, run_journal.INSIGHTS)
        except Exception as e:
            self.notes.append(
                f"could not silence auto_explain after the run: {first_line(e, named=True)}"
            )
        finally:
            if self.conn is not None:
                with contextlib.suppress(Exception):
                    self.conn.close()

    # --- finish -------------------------------------------------------------------------------
    def finish(self, rec: RunRecord, art_dir: Path) -> None:
        """rec.insights: the four parts, each collected or with its reason."""
        self.stop()
        doc = InsightsDoc(waits=_guard(WaitsDoc, lambda: self._waits(rec)))
        if "statements" in self.reasons:
            doc["statements"] = _missing(StatementsDoc, self.reasons["statements"])
        else:
            doc["statements"] = _guard(StatementsDoc, lambda: self._statements(rec))
        doc.update(self._from_log())
        doc["notes"] = list(self.notes)
        rec.insights = doc

    def _waits(self, rec: RunRecord) -> WaitsDoc:
        return waits.profile(
            rec.series.get("pg"),
            0.0,
            (rec.measured_s or 0.0) + 0.5,
            waits=rec.series.get("waits"),
            sampling=rec.extra.get("wait_sampling"),
            wait_sampling=rec.series.get("wait_sampling"),
        )

    def _statements(self, rec: RunRecord) -> StatementsDoc:
        """The snapshots bracket the measured window (the closing one comes up to a second
        after pgbench's end, when nothing runs), so rates are per second of that window."""
        assert self.ext is not None and self.start_snap and self.end_snap
        changed, resets = statements.deltas(self.ext, self.start_snap, self.end_snap)
        span = round(self.snap_times[-1] - self.snap_times[0], 3)
        doc = statements.summarize(self.ext, changed, self.texts, rec.measured_s or span)
        doc["snapshots_span_s"] = span
        if resets:
            doc["notes"] = [f"{resets} statement(s) were reset during the run and left out"]
        a, b = self.start_snap.dealloc, self.end_snap.dealloc
        if a is not None and b is not None and b > a:
            doc.setdefault("notes", []).append(
                f"pg_stat_statements evicted {b - a} entries during the run "
                "(pg_stat_statements.max): rare statements may be missing"
            )
        return doc

    def log_feed(self) -> LogFeed | None:
        """Where the runner feeds the lines of the run's part of pgrig's server log file as it
        reads them (load/core/server_log_follow.py); None when the log is not used, or is read from
        the logging collector's files."""
        if ("plans" in self.reasons and "log_digest" in self.reasons) or self.collector_dir:
            return None
        if self.feed is None:
            self.feed = LogFeed(
                self.window_start,
                _setting(self.rec, "log_timezone"),
                plans="plans" not in self.reasons,
                top_up_from=lambda: self.top_up.get("from") if self.top_up else None,
            )
        return self.feed

    def _from_log(self) -> InsightsDoc:
        out = InsightsDoc()
        if "plans" in self.reasons:
            out["plans"] = _missing(PlansDoc, self.reasons["plans"])
        if "log_digest" in self.reasons:
            out["log_digest"] = _missing(LogDigestDoc, self.reasons["log_digest"])
        if len(out) == 2:
            return out
        if self.feed is not None:
            got = self.feed.results()
        elif self.collector_dir is not None:
            got = self._read_collector_files()
        else:
            reason = "not collected: the run kept no server log"
            return InsightsDoc(
                plans=out.get("plans", _missing(PlansDoc, reason)),
                log_digest=_missing(LogDigestDoc, reason),
            )
        if "plans" in got and got["plans"].get("collected"):
            got["plans"] = PlansDoc(**got["plans"], sampling=self._sampling_doc())
            if self.top_up:
                got["plans"]["top_up"] = self.top_up
        return InsightsDoc(**got, **out)

    def _read_collector_files(self) -> InsightsDoc:
        """The logging collector's text files, what they grew by since the start."""
        assert self.collector_dir is not None
        sources = server_log.grown_since(self.collector_dir, self.collector_sizes)
        start = self.window_start()
        top_up_from = self.top_up.get("from") if self.top_up else None
        book = (
            plans.PlanBook(start, top_up_from=top_up_from) if "plans" not in self.reasons else None
        )
        digest = log_digest.LogDigest(start)
        tz = _setting(self.rec, "log_timezone")
        try:
            for path, offset in sources:
                for record in server_log.records(path, tz, offset=offset):
                    if book is None or not book.add(record):
                        digest.add(record)
        except Exception as e:
            reason = f"not collected: reading the server log: {first_line(e, named=True)}"
            return InsightsDoc(
                plans=_missing(PlansDoc, reason), log_digest=_missing(LogDigestDoc, reason)
            )
        out = InsightsDoc(log_digest=digest.result())
        if book is not None:
            out["plans"] = book.result()
        return out

    # --- the top-up of rare transaction types (load/core/plan_top_up.py) --------------------------
    def plan_shortfall(self, transactions: list[tuple[str, int]]) -> list[dict[str, Any]]:
        """Scripts whose statements expect too few plans at the run's mean sample rate
        (insights/sampling.shortfall); none when pgrig did not sample the plans itself."""
        if self.budget is None or "plans" in self.reasons:
            return []
        return sampling.shortfall(self.budget.mean_rate(), transactions)

    def _sampling_doc(self) -> dict[str, JsonValue]:
        if self.budget is None:
            return dict(self.sampling)
        return {
            "set_by": "pgrig",
            "budget": self.budget.budget,
            "rates": [{"t": t, "rate": r} for t, r in self.budget.history],
            "threshold_ms": 0,
        }


def start(env: Environment, dbname: str, spec: RunRequest, rec: RunRecord) -> Collection:
    """Begin collecting (never raises: what fails is recorded as not collected)."""
    coll = Collection(env, dbname, spec, rec)
    try:
        coll.begin()
    except Exception as e:
        for part in ("statements", "plans"):
            coll.reasons.setdefault(part, f"not collected: {first_line(e, named=True)}")
        coll.ext, coll.budget = None, None
        coll.stop()
    except BaseException:  # Ctrl-C/SIGTERM while starting: nothing of the run stays on
        coll.ext, coll.budget = None, None
        coll.stop()
        raise
    return coll


def _setting(rec: RunRecord, name: str) -> str | None:
    value = (rec.settings or {}).get(name, {}).get("setting")
    return None if value is None else str(value)


Part = TypeVar("Part", bound=InsightPart)


def _missing(part: type[Part], reason: str) -> Part:
    """A part not collected, with why."""
    return part(collected=False, reason=reason)


def _guard(part: type[Part], build: Callable[[], Part]) -> Part:
    try:
        return build()
    except Exception as e:
        return _missing(part, f"not collected: {first_line(e, named=True)}")


def _remote_plans_reason(env: Environment) -> str:
    """Why a run of a server on another host has no plans: auto_explain logs only while a
    run's collection sets its rate, in the server's pgrig.conf, which is on that host."""
    return (
        f"auto_explain's sample rate is set during a run in pgrig.conf, which is on host "
        f"{env.on}: this machine does not drive it there yet"
    )
