"""The run page: charts, tables, settings, host facts, command and artifacts (read-only, safe)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
import sample_data
from fastapi.testclient import TestClient

from pgrig.archive import artifacts
from pgrig.archive.store import Archive


def _run_with_artifacts(
    archive: Archive, tmp_path: Path, extra: dict[str, str] | None = None
) -> int:
    rec = sample_data.make_run(
        1,
        random.Random(5),
        tps=2500.0,
        clients=16,
        settings={"shared_buffers": "262144"},
        note="bigger buffers",
        tpcc=False,
    )
    status = rec.status
    archive.begin_run(rec)
    log = tmp_path / "server.log"
    log.write_text("LOG:  checkpoint starting: time\n")
    artifacts.store_artifact(rec, log, "server.log", compress=False, archive=archive.url)
    page = tmp_path / "report.html"
    page.write_text("<script>alert(1)</script>")
    artifacts.store_artifact(rec, page, "report.html", compress=False, archive=archive.url)
    rec.artifacts["missing"] = f"{rec.id}/not-here.log"
    rec.artifacts.update(extra or {})
    rec.status = status
    archive.finish_run(rec)
    assert rec.id is not None
    return rec.id


def test_run_page_content(archive: Archive, client: TestClient, tmp_path: Path) -> None:
    run_id = _run_with_artifacts(archive, tmp_path)
    r = client.get(f"/runs/{run_id}")
    assert r.status_code == 200
    html = r.text
    assert f"Run {run_id}" in html and "bigger buffers" in html
    # throughput over time with the warm-up shaded, latency percentiles over time
    assert re.search(r'<text class="ct"[^>]*>Throughput</text>', html)
    assert 'class="shade"' in html and "warm-up" in html
    assert "Latency percentiles" in html and ">p95<" in html and ">p99<" in html
    # every chart drew lines
    charts = re.findall(r'<svg class="chart".*?</svg>', html, re.S)
    assert len(charts) >= 10
    assert all("<polyline" in c for c in charts)
    # OS and PostgreSQL metric charts
    for title in ("CPU", "Disk throughput", "Commits and rollbacks", "WAL", "Wait events"):
        assert f">{title}</text>" in html
    # per-transaction-type table
    assert "Per transaction type" in html and "tpcb-like" in html
    # settings that differ from defaults (and only those): 262144 × 8kB = 2GB
    settings = html.split("Settings that differ from the defaults")[1].split("</table>")[0]
    assert "shared_buffers" in settings and "2 GiB" in settings and "128 MiB" in settings
    assert "work_mem" not in settings
    assert "max_connections" not in settings  # set by a file but equal to the default
    # host facts and the exact command
    assert "AMD EPYC 7B13" in html and "32.0 GiB" in html
    assert "pgbench -c 16 -j 4 -T 70 -P 1" in html
    # artifacts: links for files present, none for missing ones
    assert f'href="/runs/{run_id}/artifacts/server.log"' in html
    assert "not on this machine" in html
    assert f'href="/runs/{run_id}/artifacts/missing"' not in html


def test_artifacts_are_served_read_only(
    archive: Archive, client: TestClient, tmp_path: Path
) -> None:
    run_id = _run_with_artifacts(archive, tmp_path)
    r = client.get(f"/runs/{run_id}/artifacts/server.log")
    assert r.status_code == 200
    assert r.text == "LOG:  checkpoint starting: time\n"
    assert r.headers["content-type"].startswith("text/plain")
    assert r.headers["x-content-type-options"] == "nosniff"
    # an HTML artifact is never rendered by the browser
    r = client.get(f"/runs/{run_id}/artifacts/report.html")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.headers["content-disposition"].startswith("attachment")
    assert client.get(f"/runs/{run_id}/artifacts/missing").status_code == 404
    assert client.get(f"/runs/{run_id}/artifacts/nope").status_code == 404
    assert client.post(f"/runs/{run_id}/artifacts/server.log").status_code == 405


@pytest.mark.parametrize(
    "name",
    ["..%2F..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "%2E%2E", "server.log%2F..%2F..%2Fx"],
)
def test_no_path_traversal_through_the_url(
    archive: Archive, client: TestClient, tmp_path: Path, name: str
) -> None:
    run_id = _run_with_artifacts(archive, tmp_path)
    r = client.get(f"/runs/{run_id}/artifacts/{name}")
    assert r.status_code == 404
    assert "root:" not in r.text


@pytest.mark.parametrize("stored", ["../../../../etc/passwd", "/etc/passwd"])
def test_recorded_paths_outside_the_artifacts_root_are_refused(
    archive: Archive, client: TestClient, tmp_path: Path, stored: str
) -> None:
    run_id = _run_with_artifacts(archive, tmp_path, {"evil": stored})
    r = client.get(f"/runs/{run_id}/artifacts/evil")
    assert r.status_code in (400, 404)
    assert "root:" not in r.text
    assert f'href="/runs/{run_id}/artifacts/evil"' not in client.get(f"/runs/{run_id}").text


def test_minimal_and_failed_runs_render(archive: Archive, client: TestClient) -> None:
    rng = random.Random(2)
    rec = sample_data.make_run(23, rng, with_details=False)  # i % 23 == 0: failed or aborted
    run_id = sample_data.store(archive, rec)
    html = client.get(f"/runs/{run_id}").text
    assert rec.status in html and "connection lost" in html
    assert "No per-second data recorded" in html
    assert "No settings snapshot recorded" in html


def test_unknown_run_is_a_404(client: TestClient) -> None:
    r = client.get("/runs/999")
    assert r.status_code == 404
    assert "run 999 is not in archive" in r.text
    bad = client.get("/runs/abc")  # the HTML error page, not FastAPI's JSON 422 (issue 25)
    assert bad.status_code == 400 and bad.headers["content-type"].startswith("text/html")
