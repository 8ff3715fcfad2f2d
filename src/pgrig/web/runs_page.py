"""The runs list: query parameters → RunFilter / order / page, and runs → table rows and CSV.

Everything is done by the archive in SQL (filter, order, LIMIT/OFFSET, COUNT), so the page
costs the same with 100 or 10,000 runs archived.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlencode

from pgrig.archive.export import LOAD_FIELDS
from pgrig.archive.protocol import RunReader
from pgrig.archive.records import RunFilter, RunRecord
from pgrig.archive.store import RUN_STATUSES
from pgrig.errors import PgrigError
from pgrig.record.host_docs import host_cpus
from pgrig.request.values import check_int64, name_value
from pgrig.views import runs_list
from pgrig.views.runs_list import RunRow

PAGE_SIZES = (25, 50, 100, 200, 500)
DEFAULT_PAGE_SIZE = 100
DEFAULT_ORDER = "-id"
STATUSES = RUN_STATUSES
# Sortable columns of the table: the key used in URLs → the archive's runs column.
SORT_COLUMNS = {
    "id": "id",
    "date": "started_at",
    "engine": "server_major",
    "env": "env_name",
    "workload": "workload",
    "result": "tps",
    "nopm": "nopm",
    "cpus": "host_cpus",
    "clients": "clients",
    "duration": "measured_s",  # the list shows the measured window (views/runs_list.py)
    "p95": "latency_p95",
    "failed": "failed",
    "volume": "db_size_bytes",
    "status": "status",
    "note": "note",
}
FILTER_PARAMS = ("env", "status", "study", "workload", "major", "tag", "q")
CSV_BATCH = 1000


@dataclass
class RunsQuery:
    """The validated query of the runs page (what the URL says)."""

    flt: RunFilter = field(default_factory=RunFilter)
    params: dict[str, str] = field(default_factory=dict)  # the non-empty filter params
    sort: str = "id"
    desc: bool = True
    page: int = 1
    per_page: int = DEFAULT_PAGE_SIZE

    @property
    def order(self) -> str:
        return ("-" if self.desc else "") + SORT_COLUMNS[self.sort]

    def url(self, **changes: str | int | None) -> str:
        """Query string of this page with some parameters changed (None drops one)."""
        q: dict[str, str | int] = dict(self.params)
        q["sort"] = ("-" if self.desc else "") + self.sort
        if self.per_page != DEFAULT_PAGE_SIZE:
            q["per"] = self.per_page
        if self.page != 1:
            q["page"] = self.page
        for k, v in changes.items():
            if v is None:
                q.pop(k, None)
            else:
                q[k] = v
        if q.get("sort") == "-id":  # the default order needs no parameter
            q.pop("sort")
        return "?" + urlencode(q) if q else "?"

    def sort_url(self, key: str) -> str:
        """Clicking a header: sort by it (descending first for numbers), or flip direction."""
        if key == self.sort:
            value = key if self.desc else "-" + key
        else:
            value = key if key in ("env", "workload", "status", "note") else "-" + key
        return self.url(sort=value, page=None)


def parse_query(params: Mapping[str, str]) -> RunsQuery:
    """Validate the runs page's query parameters; a bad one raises a one-line PgrigError."""
    get = {k: (params.get(k) or "").strip() for k in (*FILTER_PARAMS, "sort", "page", "per")}
    q = RunsQuery(flt=_filter(get), params={k: get[k] for k in FILTER_PARAMS if get[k]})
    _order(q, get["sort"])
    _paging(q, get["per"], get["page"])
    return q


def _filter(get: Mapping[str, str]) -> RunFilter:
    """The archive filter the page's filter parameters ask for ("" = not filtered)."""
    flt = RunFilter()
    if get["env"]:
        flt.env_name = get["env"]
    if get["status"]:
        if get["status"] not in STATUSES:
            raise PgrigError(f"status must be one of {', '.join(STATUSES)}, not {get['status']!r}")
        flt.status = get["status"]
    if get["study"]:
        flt.study = get["study"]
    if get["workload"]:
        flt.workload = get["workload"]
    if get["major"]:
        flt.server_major = _int(get["major"], "major")
    if get["tag"]:
        pair = name_value(get["tag"])  # read as every NAME=VALUE input is
        if pair is None:
            raise PgrigError(f"tag filter must look like key=value, not {get['tag']!r}")
        flt.tag = pair
    if get["q"]:
        flt.text = get["q"]
    return flt


def _order(q: RunsQuery, sort: str) -> None:
    """`sort=key` (ascending) or `sort=-key` (descending) over SORT_COLUMNS."""
    if not sort:
        return
    key = sort.lstrip("-")
    if key not in SORT_COLUMNS:
        raise PgrigError(f"cannot sort by {key!r}: use one of {', '.join(SORT_COLUMNS)}")
    q.sort, q.desc = key, sort.startswith("-")


def _paging(q: RunsQuery, per: str, page: str) -> None:
    """`per` (one of PAGE_SIZES) and `page` (1 or more; its offset fits a bigint)."""
    if per:
        q.per_page = _int(per, "per")
        if q.per_page not in PAGE_SIZES:
            raise PgrigError(f"per must be one of {', '.join(map(str, PAGE_SIZES))}")
    if page:
        q.page = _int(page, "page")
        if q.page < 1:
            raise PgrigError("page must be 1 or more")
        check_int64((q.page - 1) * q.per_page, "page x per")


def _int(value: str, name: str) -> int:
    try:
        return check_int64(int(value), name)
    except ValueError:
        raise PgrigError(f"{name} must be a whole number, not {value!r}") from None


@dataclass
class RunsPage:
    query: RunsQuery
    runs: list[RunRecord]
    total: int
    pages: int
    rows: list[RunRow] = field(default_factory=list)  # views/runs_list.py, as `runs list`
    columns: tuple[tuple[str, str], ...] = runs_list.PAGE_COLUMNS

    @property
    def numeric(self) -> set[str]:
        return {c.key for c in runs_list.COLUMNS if c.numeric} | {"result"}

    @property
    def first_no(self) -> int:
        return (self.query.page - 1) * self.query.per_page + 1 if self.runs else 0

    @property
    def last_no(self) -> int:
        return self.first_no + len(self.runs) - 1 if self.runs else 0


def load_page(archive: RunReader, q: RunsQuery) -> RunsPage:
    """One page of runs (light records) and the total count for the filter."""
    total = archive.count_runs(q.flt)
    pages = max(1, math.ceil(total / q.per_page))
    q.page = min(q.page, pages)
    runs = archive.list_runs(
        q.flt, limit=q.per_page, offset=(q.page - 1) * q.per_page, order=q.order
    )
    rows = runs_list.rows(runs_list.with_documents(archive, runs))
    shown = {c.key for c in runs_list.shown_columns(rows)} | {"result", "note"}  # note: tags too
    columns = tuple(c for c in runs_list.PAGE_COLUMNS if c[0] in shown)
    return RunsPage(q, runs, total, pages, rows, columns)


# --- CSV -----------------------------------------------------------------------------------------

CSV_COLUMNS = (
    "id",
    "started_at",
    "ended_at",
    "status",
    "env_name",
    "engine",
    "server_version",
    "workload",
    "scenario",
    *LOAD_FIELDS,
    "measured_s",
    "tps",
    "nopm",
    "tpm",
    "transactions",
    "failed",
    "latency_avg_ms",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "latency_max_ms",
    "cpus",
    "hostname",
    "study",
    "study_point",
    "repeat",
    "note",
    "tags",
    "error",
)


def csv_row(rec: RunRecord) -> list[object]:
    lat = rec.latency
    tags = ";".join(f"{k}={v}" for k, v in sorted(rec.tags.items()))
    values: dict[str, object] = {
        **{c: getattr(rec, c, None) for c in CSV_COLUMNS},
        "started_at": rec.started_at.isoformat() if rec.started_at else None,
        "ended_at": rec.ended_at.isoformat() if rec.ended_at else None,
        "latency_avg_ms": lat.avg,
        "latency_p50_ms": lat.p50,
        "latency_p95_ms": lat.p95,
        "latency_p99_ms": lat.p99,
        "latency_max_ms": lat.max,
        "cpus": host_cpus(rec.host),
        "hostname": rec.host.get("hostname") if rec.host else None,
        "tags": tags,
    }
    return [_cell(values[c]) for c in CSV_COLUMNS]


def _cell(v: object) -> object:
    """Text that a spreadsheet would run as a formula gets a leading quote (CSV injection)."""
    if v is None:
        return ""
    if isinstance(v, dict | list):  # defines, extra pgbench arguments, a TPC-C mix
        v = json.dumps(v, sort_keys=True)
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v
    return v


def csv_lines(archive: RunReader, q: RunsQuery) -> Iterator[str]:
    """All runs matching the filter, in the page's order, fetched in batches (streamed)."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(CSV_COLUMNS)
    offset = 0
    while True:
        batch = archive.list_runs(q.flt, limit=CSV_BATCH, offset=offset, order=q.order)
        for rec in batch:
            writer.writerow(csv_row(rec))
        yield buf.getvalue()
        buf.seek(0)
        buf.truncate()
        if len(batch) < CSV_BATCH:
            return
        offset += CSV_BATCH
