"""The digest of a run's server log: what the server said while the load ran, counted.

Fed one server_log.Record at a time (memory stays flat: counters and the first few examples
of each kind). Message texts are PostgreSQL's (14 to 18, English; lc_messages stays C in
pgrig's environments):
- "checkpoints are occurring too frequently (N seconds apart)" (with a HINT to increase
  max_wal_size): WAL fills max_wal_size faster than checkpoint_warning (30 s);
- "checkpoint starting: <flags>" (log_checkpoints): the reasons are its flags (time, wal,
  immediate/fast, force, shutdown, end-of-recovery, ...; one checkpoint may carry several);
  "requested" counts those started by a request (WAL volume or a command) rather than time;
- "automatic vacuum|analyze of table "db.schema.table"" (log_autovacuum_min_duration = 0);
- errors (ERROR, FATAL, PANIC) by message with numbers and literals masked; deadlocks;
- "process N still waiting for <lock> on <object> after X ms" (log_lock_waits);
- "temporary file: path ..., size N" (log_temp_files = 0).
Times are seconds from the start of the measured window (negative during the warm-up).
"""

from __future__ import annotations

import re
from collections import Counter

from pgrig.insights.server_log import Record
from pgrig.record.documents import (
    AutovacuumDoc,
    CheckpointsDoc,
    LockWaitsDoc,
    LogCount,
    LogDigestDoc,
    LogErrorsDoc,
    LogExample,
    LogFirst,
    LogInterval,
    LogMessage,
    LogWarningsDoc,
    TempFilesDoc,
)

EXAMPLES = 3
TOP_MESSAGES = 10
EXAMPLE_CHARS = 300

_CKPT_WARNING = re.compile(r"^checkpoints are occurring too frequently")
_CKPT_START = re.compile(r"^checkpoint starting:(?P<flags>.*)$")
_CKPT_DONE = re.compile(
    r"^checkpoint complete: wrote (?P<buffers>\d+) buffers.*?total=(?P<total>[\d.]+) s"
)
_AUTOVAC = re.compile(
    r"^automatic (?:aggressive )?(?P<kind>vacuum|analyze)(?: to prevent wraparound)? of table "
    r'"(?P<table>[^"]+)"'
)
_LOCK_WAIT = re.compile(r"^process \d+ still waiting for (?P<mode>\S+) on (?P<object>[a-z ]+?) ")
_LOCK_ACQUIRED = re.compile(r"^process \d+ acquired \S+ on ")
_TEMP_FILE = re.compile(r'^temporary file: path "[^"]*", size (?P<size>\d+)')
_REQUESTED_FLAGS = frozenset(("wal", "xlog", "immediate", "fast", "force"))
_NOT_REQUESTED = frozenset(("shutdown", "end-of-recovery"))
_ERRORS = ("ERROR", "FATAL", "PANIC")
_MASK = (
    (re.compile(r"'(?:[^']|'')*'"), "'?'"),
    (re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?"), "N"),
)


def mask_message(text: str) -> str:
    """A message with literals and numbers masked, so equal errors count together."""
    text = text.splitlines()[0] if text else ""
    for pattern, repl in _MASK:
        text = pattern.sub(repl, text)
    return text[:EXAMPLE_CHARS]


class _Kind:
    """A count and the first examples of one kind of message."""

    def __init__(self) -> None:
        self.count = 0
        self.examples: list[LogExample] = []

    def add(self, text: str, t: float | None) -> None:
        self.count += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(LogExample(t=t, text=_clip(text)))

    def as_dict(self) -> LogCount:
        return LogCount(count=self.count, examples=self.examples)


class _ByMessage:
    """Counts by masked message, with the first full example of each."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.first: dict[str, LogFirst] = {}

    def add(self, text: str, t: float | None, severity: str) -> None:
        key = mask_message(text)
        self.counts[key] += 1
        if key not in self.first and len(self.first) < 1000:  # bounded on chatty logs
            self.first[key] = LogFirst(t=t, severity=severity, text=_clip(text))

    def as_list(self) -> list[LogMessage]:
        return [
            LogMessage(message=key, count=n, first=self.first.get(key))
            for key, n in self.counts.most_common(TOP_MESSAGES)
        ]


class LogDigest:
    """Feed records with add(); result() is the `log_digest` document of a run."""

    def __init__(self, window_start: float | None) -> None:
        self.window_start = window_start
        self.records = 0
        self.first_t: float | None = None
        self.last_t: float | None = None
        self.checkpoint_warnings = _Kind()
        self.checkpoints = _Kind()
        self.checkpoint_reasons: Counter[str] = Counter()
        self.checkpoints_requested = 0
        self.checkpoints_timed = 0
        self.checkpoints_completed = 0
        self.checkpoint_buffers = 0
        self.checkpoint_seconds = 0.0
        self.autovacuum: dict[str, Counter[str]] = {}
        self.autovacuum_examples = _Kind()
        self.errors = _ByMessage()
        self.severities: Counter[str] = Counter()
        self.deadlocks = _Kind()
        self.lock_waits = _Kind()
        self.lock_modes: Counter[str] = Counter()
        self.locks_acquired = 0
        self.temp_files = _Kind()
        self.temp_bytes = 0
        self.temp_max = 0
        self.warnings = _ByMessage()

    def add(self, rec: Record) -> None:
        self.records += 1
        t = self._t(rec.ts)
        if t is not None:
            self.first_t = t if self.first_t is None else self.first_t
            self.last_t = t
        self.severities[rec.severity] += 1
        msg = rec.message
        if _CKPT_WARNING.match(msg):
            self.checkpoint_warnings.add(msg, t)
            return
        if rec.severity in _ERRORS:
            self.errors.add(msg, t, rec.severity)
            if msg.startswith("deadlock detected"):
                self.deadlocks.add(_with_detail(rec), t)
            return
        if rec.severity == "WARNING":
            self.warnings.add(msg, t, rec.severity)
            return
        if rec.severity == "LOG":
            self._log(msg, t)

    def _log(self, msg: str, t: float | None) -> None:
        if m := _CKPT_START.match(msg):
            flags = set(m.group("flags").split())
            self.checkpoints.add(msg, t)
            self.checkpoint_reasons.update(sorted(flags))
            if flags & _REQUESTED_FLAGS and not flags & _NOT_REQUESTED:
                self.checkpoints_requested += 1
            elif "time" in flags:
                self.checkpoints_timed += 1
        elif m := _CKPT_DONE.match(msg):
            self.checkpoints_completed += 1
            self.checkpoint_buffers += int(m.group("buffers"))
            self.checkpoint_seconds += float(m.group("total"))
        elif m := _AUTOVAC.match(msg):
            table = _table_name(m.group("table"))
            self.autovacuum.setdefault(table, Counter())[m.group("kind")] += 1
            self.autovacuum_examples.add(msg, t)
        elif m := _LOCK_WAIT.match(msg):
            self.lock_waits.add(msg, t)
            self.lock_modes[f"{m.group('mode')} on {m.group('object')}"] += 1
        elif _LOCK_ACQUIRED.match(msg):
            self.locks_acquired += 1
        elif m := _TEMP_FILE.match(msg):
            size = int(m.group("size"))
            self.temp_files.add(msg, t)
            self.temp_bytes += size
            self.temp_max = max(self.temp_max, size)

    def _t(self, ts: float | None) -> float | None:
        if ts is None or self.window_start is None:
            return None
        return round(ts - self.window_start, 3)

    def result(self) -> LogDigestDoc:
        vacuums = sum(c["vacuum"] for c in self.autovacuum.values())
        analyzes = sum(c["analyze"] for c in self.autovacuum.values())
        tables = sorted(self.autovacuum.items(), key=lambda kv: -sum(kv[1].values()))
        return LogDigestDoc(
            collected=True,
            records=self.records,
            interval=LogInterval(first_t=self.first_t, last_t=self.last_t),
            checkpoint_warnings=self.checkpoint_warnings.as_dict(),
            checkpoints=CheckpointsDoc(
                **self.checkpoints.as_dict(),
                requested=self.checkpoints_requested,
                timed=self.checkpoints_timed,
                by_reason=dict(self.checkpoint_reasons.most_common()),
                completed=self.checkpoints_completed,
                buffers_written=self.checkpoint_buffers,
                seconds=round(self.checkpoint_seconds, 3),
            ),
            autovacuum=AutovacuumDoc(
                vacuum=vacuums,
                analyze=analyzes,
                tables={name: dict(c) for name, c in tables},
                examples=self.autovacuum_examples.examples,
            ),
            errors=LogErrorsDoc(
                count=sum(self.severities[s] for s in _ERRORS),
                by_severity={s: self.severities[s] for s in _ERRORS if self.severities[s]},
                messages=self.errors.as_list(),
            ),
            deadlocks=self.deadlocks.as_dict(),
            lock_waits=LockWaitsDoc(
                **self.lock_waits.as_dict(),
                by_lock=dict(self.lock_modes.most_common()),
                acquired=self.locks_acquired,
            ),
            temp_files=TempFilesDoc(
                **self.temp_files.as_dict(), bytes=self.temp_bytes, max_bytes=self.temp_max
            ),
            warnings=LogWarningsDoc(
                count=sum(self.warnings.counts.values()), messages=self.warnings.as_list()
            ),
        )


def _table_name(qualified: str) -> str:
    """'db.schema.table' -> 'schema.table' (the run's database is known)."""
    parts = qualified.split(".", 1)
    return parts[1] if len(parts) == 2 else qualified


def _with_detail(rec: Record) -> str:
    detail = rec.parts.get("DETAIL")
    return f"{rec.message}\n{detail}" if detail else rec.message


def _clip(text: str) -> str:
    return text if len(text) <= EXAMPLE_CHARS else text[: EXAMPLE_CHARS - 1] + "…"
