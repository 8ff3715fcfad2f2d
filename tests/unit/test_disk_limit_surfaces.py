"""A run's disk limit says the same everywhere: `runs show` (text and --json), `runs compare`
(a difference in limits is a difference between the sides), the web's run and compare pages,
the reports, and an archive that comes back with it."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import cast

from fastapi.testclient import TestClient
from study_fakes import make_record
from typer.testing import CliRunner

from pgrig.archive.store import Archive
from pgrig.cli.runs import app as runs_app
from pgrig.record.documents import DiskLimitDoc
from pgrig.reports import publish
from pgrig.views import compare as compare_view
from pgrig.views import disk_limit
from pgrig.web import compare_page as web_compare

LIMITED = cast(
    DiskLimitDoc,
    {
        "limit": {"wiops": 300},
        "text": "wiops=300",
        "in_force": True,
        "mechanism": "cgroup v1 blkio throttle",
        "cgroup": "/sys/fs/cgroup/blkio/pgrig/db.0123abcd",
        "devices": [
            {
                "device": "254:0",
                "name": "vda",
                "holds": ["data directory", "WAL"],
                "in_force": {"wiops": 300},
            },
        ],
        "server_in_cgroup": True,
        "processes_outside": 0,
        "problems": [],
        "not_throttled": "cgroup v1 does not throttle buffered writeback: ...",
    },
)
NONE = cast(DiskLimitDoc, {"limit": {}, "text": "none", "in_force": None})


def _two_runs(archive: Archive) -> tuple[int, int]:
    ids = []
    for seed, doc in ((1, NONE), (2, LIMITED)):
        rec = make_record(tps=1000.0 + seed, seconds=40, warmup=2, seed=seed)
        rec.disk_limit = doc
        archive.finish_run(rec)
        assert rec.id is not None
        ids.append(rec.id)
    return ids[0], ids[1]


def test_the_archive_keeps_it(archive: Archive) -> None:
    a, b = _two_runs(archive)
    assert archive.get_run(a).disk_limit == NONE
    assert archive.get_run(b).disk_limit == LIMITED
    listed = {r.id: r.disk_limit for r in archive.list_runs()}
    assert listed[b] == LIMITED  # a column: a list of runs has it too


def test_texts() -> None:
    rec = make_record(tps=1.0, seconds=40, warmup=2, seed=1)
    assert disk_limit.of(rec) == "not recorded"
    rec.disk_limit = NONE
    assert disk_limit.of(rec) == "none"
    rec.disk_limit = LIMITED
    assert disk_limit.of(rec) == "wiops=300 (in force)"
    assert dict(disk_limit.items(rec))["disk limit on"] == (
        "254:0 vda (data directory and WAL): cgroup v1 blkio throttle"
    )
    rec.disk_limit = cast(
        DiskLimitDoc, {**LIMITED, "in_force": False, "problems": ["the server is not running"]}
    )
    assert disk_limit.of(rec) == "wiops=300 (NOT in force: the server is not running)"


def test_runs_show_text_and_json(url: str, archive: Archive) -> None:
    _, b = _two_runs(archive)
    text = CliRunner().invoke(runs_app, ["show", str(b), "--archive", url])
    assert text.exit_code == 0, text.output
    flat = " ".join(text.stdout.split())
    assert "disk limit wiops=300 (in force)" in flat
    assert "not limited cgroup v1 does not throttle buffered writeback" in flat
    doc = CliRunner().invoke(runs_app, ["show", str(b), "--json", "--archive", url])
    assert json.loads(doc.stdout)["disk_limit"] == LIMITED


def test_compare_calls_a_different_limit_a_difference(url: str, archive: Archive) -> None:
    a, b = _two_runs(archive)
    view = compare_view.build([[archive.get_run(a)], [archive.get_run(b)]])
    row = next(c for c in view.context if c.key == "disk_limit")
    assert row.values == ["none", "wiops=300 (in force)"] and row.differs
    out = CliRunner().invoke(runs_app, ["compare", str(a), str(b), "--json", "--archive", url])
    assert json.loads(out.stdout)["context"]["disk_limit"] == {
        "a": "none",
        "b": "wiops=300 (in force)",
    }
    same = compare_view.build([[archive.get_run(b)], [archive.get_run(b)]])
    assert not next(c for c in same.context if c.key == "disk_limit").differs


def test_web_and_reports(archive: Archive, client: TestClient, tmp_path: Path) -> None:
    a, b = _two_runs(archive)
    page = client.get(f"/runs/{b}")
    assert page.status_code == 200
    assert "wiops=300 (in force)" in html.unescape(page.text)
    assert "buffered writeback" in page.text
    compared = client.get(web_compare.compare_url([[a], [b]]))
    assert compared.status_code == 200
    assert "wiops=300 (in force)" in html.unescape(compared.text)
    (md,) = publish.run_report(archive, b, ["md"], tmp_path)
    assert "wiops=300 (in force)" in md.read_text()
    (cmp_md,) = publish.compare_report(archive, [[a], [b]], ["md"], tmp_path)
    assert "wiops=300 (in force)" in cmp_md.read_text()
