"""Captured real runs for the study hosts tests: each fixture in tests/fixtures/study_hosts/ is
a run of examples/studies/pooler-over-network-small.toml on the namespace rig (PostgreSQL on
h1, pgbouncer on h2, pgbench from h3), `pgrig runs export ID` trimmed by `trim` to what the
hosts table reads: the roles, the load split and saturation, the network paths, each host's
sampler series. `decorate` gives a synthetic study run (study_fakes.FakeBackend) the captured
hosts of a real run through the same connection (via), repeat by repeat; `expected_table` is the
study's hosts table computed from the documents alone (tests/study_hosts_expected.py).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from study_fakes import FakeBackend, study_toml
from study_hosts_expected import expected_rows

from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.request import RunRequest
from pgrig.study.runner import run_study
from pgrig.study.spec import parse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "study_hosts"
SERIES_COLUMNS = ("t", "cpu_idle", "cpu_iowait", "cpu_steal", "cpu_user", "cpu_system")


def captured(via: str) -> list[dict[str, Any]]:
    """The captured runs through `via` ("direct" or "pgbouncer"), in repeat order."""
    docs = [json.loads(p.read_text()) for p in sorted(FIXTURES.glob(f"{via}-*.json"))]
    assert docs, f"no captured {via} runs in {FIXTURES}"
    return docs


def trim(doc: dict[str, Any]) -> dict[str, Any]:
    """A `runs export` document cut to what the hosts table reads."""
    extra = doc.get("extra") or {}
    load = extra.get("load") or {}
    kept_extra: dict[str, Any] = {
        k: extra[k] for k in ("host_roles", "network", "host_sampler_errors") if k in extra
    }
    kept_extra["load"] = {k: load[k] for k in ("split", "saturated") if k in load}
    kept_extra["load"]["hosts"] = {h: {} for h in load.get("hosts") or {}}
    if extra.get("pooler"):
        kept_extra["pooler"] = {k: extra["pooler"].get(k) for k in ("on", "listen")}
    series = {
        kind: {
            c: v
            for c, v in cols.items()
            if c in SERIES_COLUMNS or (c.startswith("proc_") and c.endswith("_cpu"))
        }
        for kind, cols in (doc.get("series") or {}).items()
        if kind == "os" or kind.startswith("os@")
    }
    return {
        "captured_from": f"run {doc.get('id')}, {doc.get('started_at')}",
        "via": doc.get("via"), "managed": doc.get("managed"),
        "measured_s": doc.get("measured_s"), "tps": doc.get("tps"),
        "extra": kept_extra, "series": series,
    }  # fmt: skip


def graft(rec: RunRecord, doc: dict[str, Any]) -> None:
    """The captured run's hosts onto a synthetic record (the same window length)."""
    rec.via = doc["via"]
    rec.managed = bool(doc["managed"])
    rec.measured_s = float(doc["measured_s"])
    rec.extra.update(json.loads(json.dumps(doc["extra"])))
    rec.series.update(json.loads(json.dumps(doc["series"])))


def decorate(rec: RunRecord, spec: RunRequest) -> None:
    """FakeBackend's hook: repeat r of a point through `via` gets captured run r's hosts."""
    via = "direct" if spec.via == "direct" else "pgbouncer"
    docs = captured(via)
    graft(rec, docs[spec.repeat % len(docs)])


# --- a study of them, and its hosts table computed here from the documents alone ----------
POOLER = {"pooler": {"mode": "transaction", "pool_size": 20}}
SWEEP = (
    '\n[sweep]\nvia = ["direct", "pgbouncer"]\nclients = [8, 32]\nx = "clients"\ncompare = "via"\n'
)


def run_hosts_study(
    archive: Archive, name: str = "net", backend: FakeBackend | None = None
) -> None:
    duration = int(captured("direct")[0]["measured_s"])
    text = study_toml(name, repeats=2, environment=POOLER, duration=duration) + SWEEP
    backend = backend or FakeBackend(decorate=decorate)
    run_study(parse(text), archive=archive, backend=backend, console=Console(file=io.StringIO()))


def expected_table() -> list[list[str]]:
    rows = []
    for via in ("direct", "pgbouncer"):
        for clients in (8, 32):
            rows += expected_rows(f"via={via}, clients={clients}", captured(via))
    return rows


def cells(table: Any) -> list[list[str]]:
    return [[" ".join(c.lines) for c in row] for row in table.rows]
