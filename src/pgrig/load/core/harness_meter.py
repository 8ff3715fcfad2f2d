"""The harness's own cost over a run's load, recorded in extra["harness_cost"].

    with harness_meter.metering(env, dbname, rec, client_pids):   # samplers already running
        ...the load generator runs...
    # on exit (before the samplers stop): CPU of pgrig's processes and of its sessions' backends
    harness_meter.add_server_log(rec)   # after the server log was read: plans and bytes

The CPU is read from /proc (metrics/harness_cost.py) at both ends of the load's span, and
pgrig's own context switches (getrusage: every thread of this process, not its children)
with it: its wake-ups, a cost on a saturated machine that its CPU-s do not show. The
backends are pgrig's sessions on the server (application_name pgrig or pgrig-*: the
PostgreSQL sampler, the wait sampler, the insights collection), listed by pid at both ends;
their /proc entries are readable when the server runs on this machine (a managed
environment). Never raises: what cannot be measured is recorded with its reason.
"""

from __future__ import annotations

import contextlib
import os
import resource
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pgrig.errors import first_line
from pgrig.metrics import harness_cost
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import HarnessCostDoc, HarnessLoadHost
from pgrig.record.run import RunRecord

OWN_SESSIONS_SQL = (
    "SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
    "AND (application_name = 'pgrig' OR application_name LIKE 'pgrig-%')"
)


class Meter:
    """One run's load span: start() before the load generator starts, stop() after it ended
    (see the module docstring)."""

    def __init__(self, env: Environment, dbname: str, proc: str = "/proc") -> None:
        self.env, self.dbname, self.proc = env, dbname, proc
        self.t0 = time.monotonic()
        self.own_before: dict[int, harness_cost.ProcTimes] = {}
        self.backends_before: dict[int, harness_cost.ProcTimes] = {}
        self.backends_reason: str | None = None
        self.switches_before = _own_switches()
        if not env.managed:
            self.backends_reason = "the server is not on this machine under pgrig"

    def start(self) -> None:
        self.own_before = harness_cost.snapshot(harness_cost.tree(os.getpid(), proc=self.proc))
        if self.backends_reason is None:
            pids = self._backend_pids()
            if pids is not None:
                self.backends_before = harness_cost.snapshot(pids, self.proc)
        self.switches_before = _own_switches()
        self.t0 = time.monotonic()

    def stop(self, exclude: Iterable[int] = ()) -> HarnessCostDoc:
        span = time.monotonic() - self.t0
        own = harness_cost.snapshot(harness_cost.tree(os.getpid(), exclude, self.proc), self.proc)
        doc = HarnessCostDoc(
            span_s=round(span, 3),
            cpus=os.cpu_count(),
            pgrig_cpu_s=round(harness_cost.cpu_seconds(self.own_before, own), 3),
            pgrig_processes=len(own),
        )
        voluntary, involuntary = _own_switches()
        doc["pgrig_wakeups"] = voluntary - self.switches_before[0]
        doc["pgrig_preempted"] = involuntary - self.switches_before[1]
        if self.backends_reason is None:
            pids = self._backend_pids()
            if pids is not None:
                # a backend of the start that is gone: its last figures are unknown
                after = harness_cost.snapshot(pids, self.proc)
                doc["backends_cpu_s"] = round(
                    harness_cost.cpu_seconds(self.backends_before, after), 3
                )
                doc["backends"] = len(after)
        if "backends_cpu_s" not in doc:
            doc["backends_cpu_s"] = None
            doc["backends_reason"] = self.backends_reason
        return doc

    def _backend_pids(self) -> list[int] | None:
        from pgrig.workloads import database

        try:
            with database.connect(self.env, self.dbname, application_name="pgrig-harness") as c:
                return [int(r[0]) for r in c.execute(OWN_SESSIONS_SQL).fetchall()]
        except Exception as e:
            self.backends_reason = f"pgrig's sessions not listed: {first_line(e)}"
            return None


def _own_switches() -> tuple[int, int]:
    """This process's context switches so far, every thread's (voluntary, involuntary)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nvcsw, usage.ru_nivcsw


@contextlib.contextmanager
def metering(
    env: Environment,
    dbname: str,
    rec: Any,
    exclude: Callable[[], Iterable[int]] = tuple,
) -> Iterator[Meter]:
    """Measure the span of the block; on exit extra["harness_cost"] holds the CPU figures
    (`exclude`: the load generator's pids, asked at the end)."""
    meter = Meter(env, dbname)
    with contextlib.suppress(Exception):
        meter.start()
    try:
        yield meter
    finally:
        with contextlib.suppress(Exception):
            rec.extra["harness_cost"] = meter.stop(exclude())


def add_load_hosts(rec: RunRecord, hosts: dict[str, HarnessLoadHost]) -> None:
    """The load hosts' agents' CPU (load/core/multi_runner.py)."""
    doc = rec.extra.get("harness_cost")
    if isinstance(doc, dict) and hosts:
        doc["load_hosts"] = hosts


def add_server_log(rec: RunRecord) -> None:
    """Plans and bytes the server logged during the run, from what the run read of its log
    (extra["server_log"], load/core/server_log_follow.py)."""
    doc = rec.extra.get("harness_cost")
    if not isinstance(doc, dict):
        return
    log = rec.extra.get("server_log")
    if isinstance(log, dict) and log.get("written_bytes") is not None:
        doc["plans"] = int((log.get("records") or {}).get("plan", 0))
        doc["log_bytes"] = int(log["written_bytes"])
        return
    doc["plans"] = doc["log_bytes"] = None
    plans = (rec.insights or {}).get("plans") if isinstance(rec.insights, dict) else None
    if isinstance(plans, dict) and plans.get("collected"):
        # logging_collector's files: the plans read, the bytes not counted
        doc["plans"] = int(plans.get("samples") or 0) + int(plans.get("top_up_samples") or 0)
        doc["log_reason"] = "the server log's size was not measured (logging_collector)"
    else:
        doc["log_reason"] = "the run did not read the server log"
