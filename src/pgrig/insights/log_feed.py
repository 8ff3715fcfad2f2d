"""The run's server log, fed line by line as the runner reads it (load/core/server_log_follow.py):
every record goes to the plan book when it is a plan, else to the digest.

The runner reads the log once, for the insights and for the bounded excerpt it keeps
(insights/log_excerpt.py), so the insights see every record whatever the excerpt leaves out.
Reading may start during the load (when the log grows fast), so the book and the digest are
made at the first record, and the top-up's start (known after the load) is asked for at each
record: plans logged from then on are the top-up's. Nothing here raises: a failure makes both
parts "not collected" with its reason.
"""

from __future__ import annotations

from collections.abc import Callable

from pgrig.errors import first_line
from pgrig.insights.log_digest import LogDigest
from pgrig.insights.plans import PlanBook
from pgrig.insights.server_log import Record, RecordParser
from pgrig.record.documents import InsightsDoc, LogDigestDoc, PlansDoc


class LogFeed:
    def __init__(
        self,
        window_start: Callable[[], float | None],
        log_timezone: str | None,
        plans: bool,
        top_up_from: Callable[[], float | None] = lambda: None,
    ) -> None:
        self.window_start = window_start
        self.plans = plans
        self.top_up_from = top_up_from
        self.parser = RecordParser(log_timezone)
        self.book: PlanBook | None = None
        self.digest: LogDigest | None = None
        self.error: str | None = None
        self.lines = 0

    def line(self, text: str) -> None:
        if self.error is not None:
            return
        self.lines += 1
        try:
            rec = self.parser.feed(text)
            if rec is not None:
                self._add(rec)
        except Exception as e:  # the insights stop; the run goes on
            self.error = f"not collected: reading the server log: {first_line(e, named=True)}"

    def _add(self, rec: Record) -> None:
        digest, book = self._made()
        if book is not None and book.top_up_from is None:
            book.top_up_from = self.top_up_from()
        if book is None or not book.add(rec):
            digest.add(rec)

    def _made(self) -> tuple[LogDigest, PlanBook | None]:
        if self.digest is None:
            start = self.window_start()
            self.digest = LogDigest(start)
            self.book = PlanBook(start) if self.plans else None
        return self.digest, self.book

    def results(self) -> InsightsDoc:
        """{"plans": ..., "log_digest": ...} from every line fed (the last record flushed);
        "plans" only when plans were collected."""
        if self.error is None:
            try:
                if (rec := self.parser.flush()) is not None:
                    self._add(rec)
            except Exception as e:
                self.error = f"not collected: reading the server log: {first_line(e, named=True)}"
        if self.error is not None:
            missing = InsightsDoc(log_digest=LogDigestDoc(collected=False, reason=self.error))
            if self.plans:
                missing["plans"] = PlansDoc(collected=False, reason=self.error)
            return missing
        digest, book = self._made()
        out = InsightsDoc(log_digest=digest.result())
        if book is not None:
            out["plans"] = book.result()
        return out
