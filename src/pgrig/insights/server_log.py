"""A PostgreSQL server log (stderr format, PostgreSQL 14 to 18) read as records, streamed.

One record is one ereport: a line `<prefix>SEVERITY:  message`, its continuation lines (the
server starts every further line of a message with a tab) and the DETAIL, HINT, CONTEXT,
STATEMENT... lines that follow it. The prefix is whatever log_line_prefix made of it; pgrig's
environments keep PostgreSQL's default '%m [%p] ', so a record gets its time and process id
when the prefix starts with %m or %t and holds [%p]; any other prefix still parses (without
them). The file is read line by line and a record is capped (max_record_bytes), so memory
stays flat whatever the size of the log.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path

PART_SEVERITIES = frozenset(("DETAIL", "HINT", "QUERY", "CONTEXT", "LOCATION", "STATEMENT"))
_LINE = re.compile(
    r"^(?P<prefix>.*?)\b(?P<sev>DEBUG[1-5]|INFO|NOTICE|WARNING|ERROR|LOG|FATAL|PANIC|DETAIL"
    r"|HINT|QUERY|CONTEXT|LOCATION|STATEMENT):  (?P<msg>.*)$"
)
_TIME = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)"
    r"(?: (?P<zone>[+-]\d\d(?::?\d\d)?|[A-Za-z][A-Za-z0-9_+\-/]*))?"
)
_PID = re.compile(r"\[(\d+)\]")
_UTC_NAMES = frozenset(("UTC", "GMT", "Z", "Etc/UTC", "UCT"))


@dataclass
class Record:
    severity: str
    message: str  # the first line and its continuation lines, joined by newlines
    ts: float | None = None  # epoch seconds, when the prefix carries a time
    pid: int | None = None
    parts: dict[str, str] = field(default_factory=dict)  # DETAIL, HINT, CONTEXT, ... (first)
    truncated: bool = False  # longer than max_record_bytes: the message was cut


class _Builder:
    def __init__(self, severity: str, message: str, ts: float | None, pid: int | None) -> None:
        self.record = Record(severity, "", ts, pid)
        self.lines = [message]
        self.size = len(message)
        self.part: str | None = None
        self.part_lines: list[str] = []

    def add_line(self, text: str, limit: int) -> None:
        if self.size + len(text) > limit:
            self.record.truncated = True
            return
        self.size += len(text)
        (self.part_lines if self.part else self.lines).append(text)

    def start_part(self, name: str, text: str) -> None:
        self._close_part()
        self.part, self.part_lines = name, [text]
        self.size += len(text)

    def _close_part(self) -> None:
        if self.part and self.part not in self.record.parts:
            self.record.parts[self.part] = "\n".join(self.part_lines)
        self.part, self.part_lines = None, []

    def build(self) -> Record:
        self._close_part()
        self.record.message = "\n".join(self.lines)
        return self.record


def records(
    path: str | Path,
    log_timezone: str | None = None,
    max_record_bytes: int = 1 << 20,
    offset: int = 0,
) -> Iterator[Record]:
    """The records of a log file from `offset` on, in order (lines before the first record
    are skipped)."""
    parser = RecordParser(log_timezone, max_record_bytes)
    with open(path, "rb") as f:
        f.seek(offset)
        for raw in f:
            if (done := parser.feed(raw.decode("utf-8", "replace").rstrip("\r\n"))) is not None:
                yield done
    if (last := parser.flush()) is not None:
        yield last


class RecordParser:
    """Lines in, records out, one line at a time: feed() returns the record a line ended (a
    record ends when the next one starts, so the last one comes from flush()). For a log read
    piece by piece while the server writes it (load/core/server_log_follow.py)."""

    def __init__(self, log_timezone: str | None = None, max_record_bytes: int = 1 << 20) -> None:
        self.zone = _zone(log_timezone)
        self.limit = max_record_bytes
        self.current: _Builder | None = None

    def feed(self, line: str) -> Record | None:
        current = self.current
        if line.startswith("\t"):
            if current is not None:
                current.add_line(line[1:], self.limit)
            return None
        m = _LINE.match(line)
        if m is None:  # not the server's (pg_ctl's own output): ends the record
            self.current = None
            return current.build() if current is not None else None
        sev, msg = m.group("sev"), m.group("msg")
        if sev in PART_SEVERITIES:
            if current is not None:
                current.start_part(sev, msg)
            return None
        prefix = m.group("prefix")
        pid = _PID.search(prefix)
        self.current = _Builder(
            sev, msg, parse_time(prefix, self.zone), int(pid.group(1)) if pid else None
        )
        return current.build() if current is not None else None

    def flush(self) -> Record | None:
        """The record still open (the log's last), if any."""
        current, self.current = self.current, None
        return current.build() if current is not None else None


def line_severity(line: str) -> str | None:
    """The severity a log line starts a record or a part with (LOG, ERROR, DETAIL, ...);
    None for a continuation line or a line that is not the server's."""
    if line.startswith("\t"):
        return None
    m = _LINE.match(line)
    return m.group("sev") if m else None


def text_log_sizes(log_dir: Path) -> dict[str, int]:
    """Sizes of the logging collector's text (stderr) files in log_dir now."""
    sizes = {}
    for path in log_dir.iterdir() if log_dir.is_dir() else []:
        if path.is_file() and path.suffix not in (".csv", ".json"):
            sizes[path.name] = path.stat().st_size
    return sizes


def grown_since(log_dir: Path, before: dict[str, int]) -> list[tuple[Path, int]]:
    """(file, offset) of what the collector wrote since `before`: the new part of files that
    grew and the whole of new files, oldest first (the collector rotates by time or size)."""
    out = []
    for name, size in text_log_sizes(log_dir).items():
        start = before.get(name, 0)
        if size > start:
            out.append((log_dir / name, start))
    return sorted(out, key=lambda item: (item[0].stat().st_mtime, item[0].name))


def parse_time(prefix: str, zone: tzinfo | None = None) -> float | None:
    """Epoch seconds of a prefix starting with %m or %t ('2025-01-02 03:04:05.678 UTC')."""
    m = _TIME.match(prefix)
    if m is None:
        return None
    text = m.group("ts")
    try:
        naive = datetime.strptime(
            text, "%Y-%m-%d %H:%M:%S.%f" if "." in text else "%Y-%m-%d %H:%M:%S"
        )
    except ValueError:
        return None
    return naive.replace(tzinfo=_zone_of(m.group("zone"), zone)).timestamp()


def _zone_of(token: str | None, zone: tzinfo | None) -> tzinfo | None:
    """A numeric offset is exact; a name is taken from log_timezone (abbreviations such as
    CET are ambiguous), UTC/GMT are UTC; otherwise the local time zone (tzinfo None)."""
    if token and token[0] in "+-":
        digits = token[1:].replace(":", "")
        minutes = int(digits[:2]) * 60 + (int(digits[2:4]) if len(digits) >= 4 else 0)
        return timezone(timedelta(minutes=minutes if token[0] == "+" else -minutes))
    if zone is not None:
        return zone
    if token in _UTC_NAMES:
        return UTC
    return None


def _zone(name: str | None) -> tzinfo | None:
    if not name:
        return None
    if name in _UTC_NAMES:
        return UTC
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    except (ValueError, OSError, KeyError):
        return None
