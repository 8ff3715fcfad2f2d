"""The server log a run keeps (its `server.log` artifact): bounded, whatever the run's length.

The insights read every record of the run's log as it streams by (plans, digest); the file a
run keeps is for people and holds, in the server's order:
- the head: the first HEAD_BYTES of records, whatever they are;
- from the middle, the records that tell a story (errors, warnings, checkpoints, autovacuum,
  lock waits, temp files: all but auto_explain's plans), up to MIDDLE_BYTES per class
  ("errors": ERROR, FATAL, PANIC, WARNING; "other": everything else but plans);
- the tail: the last TAIL_BYTES of records, whatever they are.
What is left out is said where it was, in a line starting with "[pgrig]" (the log reader skips
lines that are not the server's), and counted by kind in summary(). A record longer than
RECORD_BYTES is cut (said in the record). Memory stays flat: the head and the middle go to
the file as they come, only the tail is held.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Callable
from pathlib import Path
from typing import IO

from pgrig.format import size as byte_size
from pgrig.insights.server_log import PART_SEVERITIES, line_severity
from pgrig.record.documents import LogExcerptDoc

HEAD_BYTES = 256 * 1024
TAIL_BYTES = 256 * 1024
MIDDLE_BYTES = {"errors": 2 * 1024 * 1024, "other": 1024 * 1024}
RECORD_BYTES = 64 * 1024
KINDS = ("plan", "error", "warning", "log", "other")  # as counted in summary()
_ERRORS = frozenset(("ERROR", "FATAL", "PANIC"))
_PLAN = re.compile(r"\bLOG:  duration: [\d.]+ ms  plan:")


def kind_of(first_line: str) -> str:
    """What a record is, from its first line: plan, error, warning, log or other (a line
    that is not the server's, e.g. pg_ctl's)."""
    sev = line_severity(first_line)
    if sev is None:
        return "other"
    if sev in _ERRORS:
        return "error"
    if sev == "WARNING":
        return "warning"
    return "plan" if sev == "LOG" and _PLAN.search(first_line) else "log"


class _Record:
    __slots__ = ("cut", "kind", "lines", "size")

    def __init__(self, first_line: str, kind: str) -> None:
        self.kind = kind
        self.lines = [first_line]
        self.size = len(first_line.encode()) + 1
        self.cut = 0  # bytes left out of a record longer than RECORD_BYTES

    def add(self, line: str) -> None:
        n = len(line.encode()) + 1
        if self.size + n > RECORD_BYTES:
            self.cut += n
            return
        self.lines.append(line)
        self.size += n

    def text(self) -> str:
        out = "\n".join(self.lines) + "\n"
        if self.cut:
            out += f"[pgrig] this record was cut: {byte_size(self.cut)} more left out\n"
        return out


class LogExcerpt:
    """Feed the lines of the run's log in order (line(), without their newline); close()
    writes what is still held and returns summary()."""

    def __init__(
        self,
        path: Path,
        head_bytes: int | None = None,
        tail_bytes: int | None = None,
        middle_bytes: dict[str, int] | None = None,
        classify: Callable[[str], str] = kind_of,
    ) -> None:
        self.path = path
        self.classify = classify  # a record's kind from its first line (pgbouncer's: its own)
        self.head_left = HEAD_BYTES if head_bytes is None else head_bytes
        self.tail_bytes = TAIL_BYTES if tail_bytes is None else tail_bytes
        self.middle_left = dict(MIDDLE_BYTES if middle_bytes is None else middle_bytes)
        self.current: _Record | None = None
        self.tail: deque[_Record] = deque()
        self.tail_size = 0
        self.read_bytes = 0
        self.kept_bytes = 0
        self.records: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self.dropped_bytes = 0
        self.gap: Counter[str] = Counter()  # left out since the last record written
        self.gap_bytes = 0
        self.out: IO[str] | None = None
        self.error: OSError | None = None  # the file could not be written: counting goes on
        self.closed = False

    def line(self, text: str) -> None:
        self.read_bytes += len(text.encode()) + 1
        if self.current is not None and (
            text.startswith("\t") or line_severity(text) in PART_SEVERITIES
        ):
            self.current.add(text)
            return
        self._done()
        self.current = _Record(text, self.classify(text))

    def _done(self) -> None:
        rec, self.current = self.current, None
        if rec is None:
            return
        self.records[rec.kind] += 1
        if self.head_left > 0 and not self.tail:
            self.head_left -= rec.size
            self._write(rec)
            return
        self.head_left = 0
        self.tail.append(rec)
        self.tail_size += rec.size
        while self.tail_size > self.tail_bytes and len(self.tail) > 1:
            old = self.tail.popleft()
            self.tail_size -= old.size
            self._middle(old)

    def _middle(self, rec: _Record) -> None:
        cls = "errors" if rec.kind in ("error", "warning") else "other"
        if rec.kind != "plan" and self.middle_left.get(cls, 0) >= rec.size:
            self.middle_left[cls] -= rec.size
            self._write(rec)
            return
        self.dropped[rec.kind] += 1
        self.dropped_bytes += rec.size
        self.gap[rec.kind] += 1
        self.gap_bytes += rec.size

    def _write(self, rec: _Record) -> None:
        if self.gap:
            self._emit(self._gap_line())
        self._emit(rec.text())

    def _gap_line(self) -> str:
        n = sum(self.gap.values())
        kinds = ", ".join(f"{c} {_plural(k, c)}" for k, c in _ordered(self.gap))
        line = f"[pgrig] {n} records ({byte_size(self.gap_bytes)}) left out here: {kinds}\n"
        self.gap.clear()
        self.gap_bytes = 0
        return line

    def _emit(self, text: str) -> None:
        if self.error is not None:
            return
        try:
            if self.out is None:
                self.out = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 (see close)
            self.out.write(text)
        except OSError as e:
            self.error = e
            return
        self.kept_bytes += len(text.encode())

    def close(self) -> LogExcerptDoc:
        """The rest written and the file closed; raises the OSError that stopped the writing
        (the caller records it and removes the file), if one did."""
        if not self.closed:
            self.closed = True
            self._done()
            while self.tail:
                self._write(self.tail.popleft())
            if self.gap:
                self._emit(self._gap_line())
            if self.out is None:
                self._emit("")  # an empty part still leaves its (empty) file
            if self.out is not None:
                try:
                    self.out.close()
                except OSError as e:
                    self.error = self.error or e
        if self.error is not None:
            raise self.error
        return self.summary()

    def summary(self) -> LogExcerptDoc:
        """What the server wrote during the run and what the kept file holds."""
        return LogExcerptDoc(
            written_bytes=self.read_bytes,
            kept_bytes=self.kept_bytes,
            records=dict(_ordered(self.records)),
            dropped=dict(_ordered(self.dropped)),
            dropped_bytes=self.dropped_bytes,
        )


def describe(doc: LogExcerptDoc) -> str:
    """The run's extra["server_log"] in a line: '1.2 GiB written, 3.1 MiB kept, 812,004 plans,
    12 errors left out'."""
    text = f"{byte_size(doc.get('written_bytes'))} written, {byte_size(doc.get('kept_bytes'))} kept"
    dropped = [(k, int(n)) for k, n in (doc.get("dropped") or {}).items() if n]
    if dropped:
        text += ", " + ", ".join(f"{n:,} {_plural(k, n)}" for k, n in dropped) + " left out"
    return text


def _ordered(counts: Counter[str] | dict[str, int]) -> list[tuple[str, int]]:
    return [(k, counts[k]) for k in KINDS if counts.get(k)]


def _plural(kind: str, n: int) -> str:
    name = {"log": "other LOG", "other": "non-server line"}.get(kind, kind)
    return name if n == 1 else name + "s"
