"""pgbench on several load hosts as one run: agents, clocks, one start instant, one merged log.

Sequence (load/core/multi_runner.py drives it):
  connect()  every agent answers (remote/agent_client.py), its clock offset is measured from round
             trips and its OS sampler starts (one row a second, series "os@HOST");
  network()  round-trip times from each load host to where pgbench connects (remote/network.py);
  launch()   script files sent, then every pgbench starts at one instant: the control machine
             picks a start time far enough ahead for the slowest round trip and each agent waits
             for it on its own clock (start + its offset); each agent says when it really
             launched, and the spread of those launches on the control clock is the start skew;
  wait       per-transaction log lines stream in and are merged as they arrive
             (analysis/txlog_merge.py); progress lines give the live TPS (summed over hosts);
  close()    on every exit path: pgbench stopped on every host still reachable, agents told
             goodbye (they remove their files); an agent that cannot be reached stops pgbench by
             itself after 15 s without a word from us, and at its deadline in any case.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pgrig.analysis.txlog import TxlogStream
from pgrig.analysis.txlog_merge import ClockOffset, TxlogMerge, launch_skew_us
from pgrig.load.engines import pgbench_output, sysbench_output
from pgrig.load.engines.process import failure_reason
from pgrig.load.remote import agent_program, host_samplers
from pgrig.load.remote.agent_client import AgentClient, AgentState, Transport
from pgrig.load.remote.network import RTT_SAMPLES, path_facts
from pgrig.record.documents import LoadDoc, LoadHost, NetworkPath
from pgrig.record.run import RunSeries

START_MARGIN_S = 0.3  # the start instant is this far ahead, plus the slowest round trip x 3
SKEW_WARNING_MS = 100.0
SATURATED_PCT = 90.0
SILENT_LOST_S = 10.0  # an agent sends an OS row every second: this long silent, it is lost


@dataclass
class HostLoad:
    """What one load host runs."""

    host: str
    argv: list[str]  # "@WORK@" stands for the agent's private directory
    env: dict[str, str]
    files: dict[str, str] = field(default_factory=dict)  # name in @WORK@ -> text
    passfile: str | None = None
    clients: int = 0
    threads: int = 0
    rate: float | None = None
    stdout_lines: bool = False  # sysbench: its per-second reports are on stdout


class MultiHostLoad:
    def __init__(self, transports: Sequence[Transport], program: str = "pgbench") -> None:
        self.program = program  # what the hosts run: pgbench, or sysbench (no per-tx log)
        self.agents: dict[str, AgentClient] = {}
        self.offsets: dict[str, ClockOffset] = {}
        self.merge: TxlogMerge | None = None
        self.feed_error: str | None = None
        self.os_rows: dict[str, list[tuple[float, dict[str, Any]]]] = {}
        self.progress: dict[str, float] = {}  # host -> latest progress tps
        self.start_at_us: int | None = None
        self.stopped = False
        self.lost_after_s = min(SILENT_LOST_S, agent_program.silence_s())
        self.tracked_local = False  # this machine's sampler knows the local agent's pgbench
        self.threads_started: dict[str, float] = {}  # sysbench: host -> when it said so (epoch)
        self._lock = threading.Lock()
        for t in transports:
            self.agents[t.name] = AgentClient(
                t,
                on_log=self._on_log,
                on_os=self._on_os,
                on_stderr=self._on_stderr,
                on_stdout=self._on_stdout,
            )
            self.os_rows[t.name] = []

    # --- before the load ------------------------------------------------------------------------
    def connect(self) -> None:
        """Every agent ready, its clock offset measured and its sampler started: all hosts at
        once (each its own round trips; one host's latency does not add to another's)."""

        def one(agent: AgentClient) -> ClockOffset:
            agent.wait_ready()
            offset = agent.measure_clock()
            agent.sample(1.0)
            return offset

        self.offsets.update(at_once(self.agents, one))

    def network(self, host: str, port: int) -> list[NetworkPath]:
        """The round trips from every load host to host:port, measured on all hosts at once."""
        found = at_once(self.agents, lambda agent: agent.measure_rtt(host, port, RTT_SAMPLES))
        return [path_facts(name, found[name]) for name in self.agents]

    def launch(
        self, loads: Sequence[HostLoad], stream: TxlogStream | None, deadline_s: float
    ) -> int:
        """Start every pgbench at one instant; returns the grid origin (control clock, us).
        stream: where the per-transaction logs merge (None: sysbench, which keeps none)."""
        if stream is not None:
            self.merge = TxlogMerge(stream, self.offsets)
        for load in loads:
            agent = self.agents[load.host]
            for name, text in load.files.items():
                agent.put_file(name, text)
        slowest = max((o.rtt_us for o in self.offsets.values()), default=0)
        start = time.time_ns() // 1000 + int(START_MARGIN_S * 1e6) + 3 * slowest
        # pgbench's -T deadline follows its launch: an origin no later than every launch keeps
        # the window's last second whole for all (analysis/txlog_merge.launch_origin_us)
        origin = start - max((o.error_us for o in self.offsets.values()), default=0)
        if stream is not None:
            stream.set_origin(origin)
        self.start_at_us = start
        for load in loads:
            self.agents[load.host].start(
                start + self.offsets[load.host].offset_us,
                load.argv,
                load.env,
                deadline_s,
                load.passfile,
                stdout_lines=load.stdout_lines,
            )
        return origin

    # --- while it runs --------------------------------------------------------------------------
    def _on_log(self, host: str, chunks: list[tuple[str, bytes]]) -> None:
        if self.merge is None or self.feed_error is not None:
            return
        try:
            self.merge.feed(host, chunks)
        except Exception as e:  # a broken log must not lose the run: its other figures stay
            self.feed_error = f"{host}: {type(e).__name__}: {e}"

    def _on_os(self, host: str, ts: float, row: dict[str, Any]) -> None:
        with self._lock:
            self.os_rows[host].append((ts, row))

    def _on_stderr(self, host: str, line: str) -> None:
        point = pgbench_output.parse_progress_line(line)
        if point is not None and point.tps is not None:
            self.progress[host] = float(point.tps)

    def _on_stdout(self, host: str, line: str) -> None:
        if line.startswith("Threads started!"):
            self.threads_started.setdefault(host, time.time())
            return
        report = sysbench_output.parse_interval(line)
        if report is not None:
            self.progress[host] = report.tps

    def live_tps(self) -> float | None:
        return sum(self.progress.values()) if self.progress else None

    def running_after(self, seconds: float) -> bool:
        """Wait up to seconds; False once every agent's pgbench ended (or its agent was lost),
        or as soon as one agent is lost (the run cannot be whole any more)."""
        end = time.monotonic() + seconds
        for agent in self.agents.values():
            agent.exited.wait(max(0.0, end - time.monotonic()))
        for name, agent in self.agents.items():
            if not agent.exited.is_set() and agent.silent_for() > self.lost_after_s:
                agent.lose(
                    f"no word from host {name} for {agent.silent_for():.0f} s "
                    "(cut off, or its agent died)"
                )
        if any(a.state.lost for a in self.agents.values()):
            return False
        return not all(a.exited.is_set() for a in self.agents.values())

    def interrupt(self, grace_s: float = 5.0) -> None:
        self.stopped = True
        for agent in self.agents.values():
            agent.stop(grace_s)
        deadline = time.monotonic() + grace_s + 5.0
        for agent in self.agents.values():
            agent.exited.wait(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        """pgbench stopped and agents gone on every reachable host (idempotent)."""
        for agent in self.agents.values():
            if not agent.exited.is_set():
                self.stopped = True
                agent.stop(2.0)
        for agent in self.agents.values():
            with contextlib.suppress(Exception):
                agent.close()

    # --- results --------------------------------------------------------------------------------
    def return_code(self) -> int:
        """0 when every pgbench ended well; else the first failure's code (-1: a host lost)."""
        for agent in self.agents.values():
            if agent.state.lost and agent.state.exit_rc is None:
                return -1
        for agent in self.agents.values():
            if agent.state.exit_rc not in (0, None):
                return int(agent.state.exit_rc or 1)
        return 0 if all(a.state.exit_rc == 0 for a in self.agents.values()) else -1

    def failure(self) -> str | None:
        """One line naming each host that failed and why."""
        first: list[str] = []  # the causes (lost hosts) before the consequences
        out: list[str] = []
        for name, agent in self.agents.items():
            st = agent.state
            if st.lost and st.exit_rc is None:
                first.append(f"load host {name} lost: {st.lost}")
            elif st.exit_rc not in (0, None) and self.stopped and not self.errors_of(st):
                out.append(f"load host {name}: {self.program} stopped by pgrig")
            elif st.exit_rc not in (0, None):
                errs = self.errors_of(st)
                why = failure_reason(st.exit_rc, errs[:2], "", self.program)
                out.append(f"load host {name}: {why}")
            elif st.exit_rc is None:
                out.append(f"load host {name}: {self.program} did not finish")
            out += [f"load host {name}: {e}" for e in st.errors[:2]]
        return "; ".join(first + out) or None

    def errors_of(self, state: AgentState) -> list[str]:
        """The error lines of one host's load generator."""
        if self.program == "sysbench":
            return sysbench_output.error_lines(state.stdout, "\n".join(state.stderr_lines))
        return errs_of(state)

    def os_series(self) -> RunSeries:
        """Columnar OS rows per host, kind "os@HOST" (epoch "ts", as the local sampler's)."""
        with self._lock:
            return host_samplers.columns(self.os_rows)

    def facts(self) -> LoadDoc:
        """extra["load"]: hosts, clocks, launches and the start skew."""
        launches = {
            n: a.state.launched_us
            for n, a in self.agents.items()
            if a.state.launched_us is not None
        }
        skew = launch_skew_us(launches, self.offsets) if len(launches) > 1 else 0
        first_tx = self.merge.first_tx_skew_us() if self.merge is not None else None
        hosts: dict[str, LoadHost] = {}
        for name, agent in self.agents.items():
            off = self.offsets.get(name)
            counts = self.merge.counts.get(name) if self.merge is not None else None
            launched = launches.get(name)
            hosts[name] = {
                "clock": off.as_dict() if off is not None else None,
                "launch_delay_ms": (
                    (off.to_control(launched) - self.start_at_us) / 1000.0
                    if off is not None and launched is not None and self.start_at_us
                    else None
                ),
                "exit_code": agent.state.exit_rc,
                "lost": agent.state.lost,
                "log_bytes_compressed": agent.state.log_bytes,
                "ncpu": agent.state.ncpu,
                "generator": counts.as_dict() if counts is not None else None,
            }
        return {
            "hosts": hosts,
            "start_skew_ms": skew / 1000.0,
            "first_tx_skew_ms": first_tx / 1000.0 if first_tx is not None else None,
            "start_at_us": self.start_at_us,
        }


T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")


def at_once(items: Mapping[K, V], work: Callable[[V], T]) -> dict[K, T]:
    """work(value) for every item, each in a thread of its own; the results by key. The first
    failure, in the items' order, is raised once every one has ended."""
    if len(items) <= 1:
        return {k: work(v) for k, v in items.items()}
    with ThreadPoolExecutor(max_workers=len(items)) as pool:
        futures = {k: pool.submit(work, v) for k, v in items.items()}
        wait(futures.values())
    return {k: f.result() for k, f in futures.items()}


def open_transports(names: Sequence[str], opener: Callable[[str], Transport]) -> list[Transport]:
    """A transport (an SSH session and its agent) to every host, opened at once; when one
    cannot be opened, those that were are closed again and its error is raised."""
    if len(names) <= 1:
        return [opener(n) for n in names]
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        futures = [pool.submit(opener, n) for n in names]
        wait(futures)
    failed = next((f.exception() for f in futures if f.exception() is not None), None)
    if failed is not None:
        for f in futures:
            if f.exception() is None:
                with contextlib.suppress(Exception):
                    f.result().close(0.5)
        raise failed
    return [f.result() for f in futures]


def saturated_hosts(
    series: RunSeries, hosts: Sequence[str], start_s: float, end_s: float
) -> dict[str, float]:
    """Load hosts whose CPUs were busy more than SATURATED_PCT on average over [start, end]
    (busy = 100 - idle - iowait, of all the host's CPUs): host -> busy %."""
    out = {}
    for host in hosts:
        kind = f"os@{host}"
        cols = series.get(kind)
        if not cols:
            continue
        busy = [
            100.0 - float(idle) - float(wait or 0.0)
            for ts, idle, wait in zip(
                cols.get("ts", []), cols.get("cpu_idle", []), cols.get("cpu_iowait", []),
                strict=False,
            )
            if idle is not None and ts is not None and start_s < ts <= end_s + 0.5
        ]  # fmt: skip
        if busy and sum(busy) / len(busy) > SATURATED_PCT:
            out[kind[3:]] = round(sum(busy) / len(busy), 1)
    return out


def errs_of(state: AgentState) -> list[str]:
    """pgbench's own error lines of one host."""
    return pgbench_output.error_lines("\n".join(state.stderr_lines))
