"""The runs page: columns, sorting, filtering, paging and CSV export, over a real SQLite archive."""

from __future__ import annotations

import csv
import io
import random
import re
from pathlib import Path

import pytest
import sample_data
from fastapi.testclient import TestClient

from pgrig.archive.store import Archive
from pgrig.errors import PgrigError
from pgrig.web import runs_page
from pgrig.web.app import create_app


def _ids(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'name="ids" value="(\d+)"', html)]


def test_runs_page_shows_the_columns(archive: Archive, client: TestClient) -> None:
    rng = random.Random(3)
    rec = sample_data.make_run(1, rng, tps=4321.5, clients=32, note="after VACUUM", tpcc=False)
    rec.server_version, rec.server_major, rec.db_size_bytes = "18.6", 18, 1536 * 2**20
    rec.tags = {"hw": "c5"}
    run_id = sample_data.store(archive, rec)
    tpcc = sample_data.make_run(3, rng, tps=1000.0, tpcc=True)
    sample_data.store(archive, tpcc)

    html = client.get("/runs").text
    assert f'href="/runs/{run_id}"' in html
    assert "PostgreSQL 18.6" in html
    assert "4,322" in html and "TPS" in html  # result column
    assert "NOPM" in html  # TPC-C runs show new orders per minute
    assert "1.5 GiB" in html  # data volume
    assert "after VACUUM" in html
    assert 'href="/runs?tag=hw%3Dc5"' in html  # tags link to a filter
    assert ">32<" in html  # clients
    assert ">8<" in html  # CPUs from the host facts
    assert "1m" in html  # duration
    assert "Runs 1–2 of 2" in html


def test_sort_filter_and_paging(archive: Archive, client: TestClient) -> None:
    ids = sample_data.fill(archive, 30, with_details=False)
    page1 = client.get("/runs?per=25").text
    assert _ids(page1) == sorted(ids, reverse=True)[:25]  # newest first
    assert "page 1 of 2" in page1
    page2 = client.get("/runs?per=25&page=2").text
    assert _ids(page2) == sorted(ids, reverse=True)[25:]

    by_tps = client.get("/runs?sort=-result&per=100").text
    recs = {r.id: r for r in archive.list_runs(limit=None)}
    tps = [recs[i].tps for i in _ids(by_tps) if recs[i].tps is not None]
    assert tps == sorted(tps, reverse=True)
    asc = _ids(client.get("/runs?sort=id").text)
    assert asc == sorted(asc)

    failed = client.get("/runs?status=failed").text
    want = {r.id for r in recs.values() if r.status == "failed"}
    assert want and set(_ids(failed)) == want

    tagged = client.get("/runs?tag=hw%3Dc5.2xlarge").text
    assert set(_ids(tagged)) == {r.id for r in recs.values() if r.tags.get("hw") == "c5.2xlarge"}

    noted = client.get("/runs?q=vacuum").text  # case-insensitive substring of the note
    assert set(_ids(noted)) == {r.id for r in recs.values() if "vacuum" in (r.note or "").lower()}
    assert 'value="vacuum"' in noted  # the filter form keeps what was asked

    none = client.get("/runs?env=nowhere").text
    assert "No runs match these filters" in none


def test_page_past_the_end_shows_the_last_page(archive: Archive, client: TestClient) -> None:
    sample_data.fill(archive, 3)
    html = client.get("/runs?page=9").text
    assert len(_ids(html)) == 3


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("status=done", "status must be one of"),
        ("major=abc", "major must be a whole number"),
        ("sort=password", "cannot sort by"),
        ("per=7", "per must be one of"),
        ("page=0", "page must be 1 or more"),
        ("tag=novalue", "tag filter must look like key=value"),
    ],
)
def test_bad_parameters_give_a_clear_400(client: TestClient, query: str, message: str) -> None:
    r = client.get(f"/runs?{query}")
    assert r.status_code == 400
    assert message in r.text


def test_csv_export_has_every_matching_run(
    archive: Archive, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs_page, "CSV_BATCH", 10)
    sample_data.fill(archive, 25)  # three export batches
    r = client.get("/runs.csv")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/csv")
    assert "attachment" in r.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert len(rows) == 25
    assert len({row["id"] for row in rows}) == 25
    first = archive.list_runs(limit=1)[0]
    assert rows[0]["id"] == str(first.id)
    assert rows[0]["workload"] == first.workload

    ok = list(csv.DictReader(io.StringIO(client.get("/runs.csv?status=ok&sort=-result").text)))
    assert ok and all(row["status"] == "ok" for row in ok)
    tps = [float(row["tps"]) for row in ok]
    assert tps == sorted(tps, reverse=True)


def test_csv_neutralises_formulas(archive: Archive, client: TestClient) -> None:
    rec = sample_data.make_run(1, random.Random(1), note='=HYPERLINK("http://x")')
    sample_data.store(archive, rec)
    rows = list(csv.DictReader(io.StringIO(client.get("/runs.csv").text)))
    assert rows[0]["note"].startswith("'=")


def test_empty_archive(client: TestClient) -> None:
    html = client.get("/runs").text
    assert "No runs" in html
    assert client.get("/").url.path == "/runs"


def test_a_named_archive_must_exist(tmp_path: Path) -> None:
    with pytest.raises(PgrigError, match="does not exist"):
        create_app(f"sqlite:///{tmp_path / 'typo.sqlite'}")
    assert not (tmp_path / "typo.sqlite").exists()


def test_a_dead_run_shows_as_lost(archive: Archive, client: TestClient, url: str) -> None:
    """The page marks runs whose pgrig died (archive/lease.py) as a command would."""
    import subprocess

    from sqlalchemy import create_engine, text

    from pgrig.archive.records import RunRecord

    rec = RunRecord(env_name="e", workload="pgbench:tpcb-like", clients=1, threads=1)
    archive.begin_run(rec)
    dead = subprocess.Popen(["true"])
    dead.wait()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(f"UPDATE runs SET lease_pid = {dead.pid} WHERE id = {rec.id}"))
    engine.dispose()
    html = client.get("/runs?status=lost").text
    assert _ids(html) == [rec.id] and 'class="status s-lost"' in html
