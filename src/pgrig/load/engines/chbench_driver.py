"""CH-benCHmark behind the driver seam (load/engines/driver.py): TPC-C's transactions and M
analytic streams over the same tables, in one measured window.

The transactions are pgrig's TPC-C exactly as `-w tpcc` runs them: this driver holds a
PgbenchDriver (the TPC-C scripts, pgbench's per-transaction log, NOPM, TPM, the latencies, the
cross-check) and passes every call of the seam to it; nothing of TPC-C is driven twice. Beside
it, it starts the analytic streams' process (workloads/chbench/stream.py, on TPC-H's stream
machinery) before the launch, its sessions connected, and at the launch gives it the measured
window's planned end as its deadline: both sides share the lead-in and the window. When the
run is over, the streams' events and the window pgbench's log gave become extra["chbench"]
(workloads/chbench/metrics.py: analytic queries per hour, per query count, median and max,
timeouts, the queries cut at the window's end). With --analytic-clients 0 no stream runs: the
run is TPC-C on the CH data, the baseline of the analytic streams' cost (`runs compare`).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgrig.errors import PgrigError
from pgrig.load.engines.driver import Stream
from pgrig.load.engines.pgbench_driver import PgbenchDriver
from pgrig.load.engines.process import die_with_parent
from pgrig.record.stream_docs import ChbenchDoc, StreamEvent, stream_event
from pgrig.request.values import number_text

if TYPE_CHECKING:
    from rich.console import Console

    from pgrig.archive.records import RunRecord
    from pgrig.request import RunRequest

STREAM_MODULE = "pgrig.workloads.chbench.stream"
STOP_GRACE_S = 30.0  # past the deadline: the streams cancel what runs and report it by then
READY_S = 60.0  # Python's start-up and M connections on a loaded host


class ChbenchDriver:
    engine = "pgbench"  # the transactions' engine: the analytic streams are recorded beside it

    def __init__(
        self,
        spec: RunRequest,
        tpcc: PgbenchDriver,
        client_env: dict[str, str],
        prefix: list[str],
        work: Path,
    ) -> None:
        self.spec = spec
        self.tpcc = tpcc
        self.progress_on: Stream = tpcc.progress_on
        self.lead_in_s = tpcc.lead_in_s
        self.total_s = tpcc.total_s
        self.client_env = client_env
        self.txlog_mode = tpcc.txlog_mode
        self.prefix = prefix  # --client-cpus: the streams are the client's too
        self.streams = spec.analytic_clients or 0
        self.err_path = work / "chbench-analytic.stderr"
        self.proc: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self.lines: list[str] = []  # the streams' stdout: one JSON event a line
        self.ready = threading.Event()  # the sessions connected, or the process ended
        self.saw_ready = False
        self.until: float | None = None  # epoch seconds: the window's planned end
        self.rc: int | None = None

    def version(self) -> str:
        return self.tpcc.version()

    def before_launch(self, console: Console) -> None:
        """The streams' process started and its sessions connected before the launch (its
        Python start-up and connections never inside the window); it waits for the deadline."""
        self.tpcc.before_launch(console)
        if not self.streams or self.total_s is None:
            return
        with self.err_path.open("wb") as err:
            self.proc = subprocess.Popen(
                self.stream_command(),
                env=self.client_env,  # the target's libpq variables and the run's session name
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                cwd=self.err_path.parent,
                preexec_fn=die_with_parent,  # kill -9 of pgrig: the streams end too
            )
        self._reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self._reader.start()
        try:
            self.ready.wait(READY_S)
        except BaseException:  # Ctrl-C before the launch: the streams never outlive it
            self._stop_streams()
            raise
        errors = [str(e.get("error")) for e in self.events() if e.get("event") == "error"]
        if not self.saw_ready or errors:  # the transactions would run for nothing
            self._stop_streams()
            tail = self.err_path.read_text(errors="replace").strip().splitlines()[-3:]
            raise PgrigError(
                "the analytic streams could not connect: "
                + (" / ".join(errors[:1] or tail) or f"not ready within {READY_S:g} s")
            )

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            self.lines.append(line)
            if line.startswith('{"event": "ready"'):
                self.saw_ready = True
                self.ready.set()
        self.ready.set()  # ended: nobody waits for a ready that cannot come

    def command(self) -> list[str]:
        return self.tpcc.command()

    def stream_command(self) -> list[str]:
        argv = [*self.prefix, sys.executable, "-m", STREAM_MODULE, "--streams", str(self.streams)]
        if self.spec.query_timeout_s is not None:
            argv += ["--query-timeout", number_text(self.spec.query_timeout_s)]  # not %g: 6 digits
        return argv

    def start(self, origin_us: int, art_dir: Path) -> None:
        self.tpcc.start(origin_us, art_dir)
        bounds = self.tpcc.plan.bounds_us(origin_us)
        proc = self.proc
        if proc is None or bounds is None or proc.stdin is None:
            return
        self.until = bounds[1] / 1e6  # the window's planned end: the streams' deadline
        with contextlib.suppress(OSError):  # gone: its events say why
            proc.stdin.write(f"{self.until:.6f}\n".encode())
            proc.stdin.close()

    def other_pids(self) -> list[int]:
        return [self.proc.pid] if self.proc is not None else []

    def on_line(self, line: str) -> None:
        self.tpcc.on_line(line)

    def live(self) -> tuple[float | None, float | None]:
        return self.tpcc.live()

    def stop(self) -> None:
        try:
            self._stop_streams()
        finally:
            self.tpcc.stop()

    def _stop_streams(self) -> None:
        """The streams end by themselves at the deadline; a run stopped before it stops them
        (SIGTERM: they cancel what runs and report it as cut; never started: their stdin
        closed); one that does not end is killed."""
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        until = self.until if self.until is not None else time.time()
        if proc.stdin is not None and not proc.stdin.closed:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        if time.time() < until - 0.5 and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        try:
            self.rc = proc.wait(timeout=max(0.0, until - time.time()) + STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            self.rc = proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=5)

    def partial_series(self, warmup_s: float) -> dict[str, list[Any]]:
        return self.tpcc.partial_series(warmup_s)

    def fill(
        self,
        rec: RunRecord,
        completed: bool,
        stdout: str,
        stderr: str,
        series_raw: dict[str, dict[str, list]],
    ) -> None:
        from pgrig.workloads.chbench import metrics

        self.tpcc.fill(rec, completed, stdout, stderr, series_raw)  # TPC-C's figures, NOPM
        doc = metrics.summarize(
            self.events(), self.streams, _window(rec), self.spec.query_timeout_s
        )
        doc["streams_exit"] = self.rc
        rec.extra["chbench"] = doc
        if doc["timed_out"]:
            limit = self.spec.query_timeout_s
            rec.add_warning(
                "chbench_timeout",
                f"{doc['timed_out']} analytic queries exceeded "
                + (f"--query-timeout {limit:g} s" if limit else "the server's statement_timeout")
                + " and were cancelled: recorded as timed out, not counted in queries per hour",
            )
        late = doc.get("started_s")
        if self.streams and isinstance(late, int | float) and late > 0:
            rec.add_warning(
                "chbench_late_streams",
                f"the analytic streams started {late:g} s into the measured window (a longer "
                "--warmup gives them time): queries per hour reads low",
            )
        if self.streams and doc["completed"] == 0 and rec.measured_s:
            rec.add_warning(
                "chbench_no_query",
                "no analytic query completed inside the measured window: queries per hour is "
                "0 (a longer -T lets the streams complete queries)",
            )

    def events(self) -> list[StreamEvent]:
        """The streams' events (one JSON object a line; a torn last line is left out)."""
        return [e for e in map(stream_event, self.lines) if e is not None]

    def cross_check(self, rec: RunRecord, stdout: str, stderr: str) -> str | None:
        """TPC-C's own cross-check, then the analytic side: a stream that failed fails the
        run (a silent gap in the queries would read as a lower rate)."""
        found = self.tpcc.cross_check(rec, stdout, stderr)
        if found is not None or not self.streams:
            return found
        doc: ChbenchDoc = rec.extra.get("chbench") or {}
        errors = [
            f"Q{r.get('query')}: {r.get('error')}"
            for r in doc.get("queries") or []
            if r.get("status") == "error"
        ] + [f"stream {e.get('stream')}: {e.get('error')}" for e in doc.get("stream_errors") or []]
        if errors:
            return "the analytic streams failed: " + "; ".join(errors[:3])
        if self.rc not in (0, None):
            tail = self.err_path.read_text(errors="replace").strip().splitlines()[-3:]
            return f"the analytic streams exited with {self.rc}: " + (
                " / ".join(tail) or "no message"
            )
        return None

    def output_error(self) -> tuple[str, str] | None:
        return self.tpcc.output_error()

    def failure(self, stdout: str, stderr: str, rc: int) -> str:
        return self.tpcc.failure(stdout, stderr, rc)


def _window(rec: RunRecord) -> tuple[float, float] | None:
    """The measured window [start, end) in epoch seconds, as the transactions' log gave it
    (load/engines/results.py): None when nothing was measured."""
    window: Any = rec.extra.get("window") or {}
    start_us = window.get("start_us")
    if not isinstance(start_us, int | float) or not rec.measured_s:
        return None
    return start_us / 1e6, start_us / 1e6 + float(rec.measured_s)
