"""User text is shown as text on every page; the UI only reads (GET) and loads nothing external."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from urllib.parse import quote

import pytest
import sample_data
from fastapi.testclient import TestClient

from pgrig.archive.records import ScriptResult
from pgrig.archive.store import Archive
from pgrig.web.app import create_app

XSS = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One archive for the whole module (read-only tests): filled once, removed after."""
    home = tmp_path_factory.mktemp("web-security")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PGRIG_HOME", str(home))
        mp.delenv("PGRIG_ARCHIVE", raising=False)
        yield _client(f"sqlite:///{home / 'archive.sqlite'}")


def _client(url: str) -> TestClient:
    archive = Archive(url)
    rng = random.Random(4)
    for i in range(2):
        rec = sample_data.make_run(i + 1, rng, note=f"{XSS} run {i}", tpcc=False)
        rec.tags = {XSS: XSS, "k": f'"><img src=x onerror=alert(1)> {XSS}'}
        rec.env_name = f"env{XSS}"
        rec.workload = f"custom:{XSS}.sql"
        rec.command = f"pgbench -f '{XSS}'"
        rec.error = XSS
        rec.host["cpu_model"] = XSS
        rec.settings[XSS] = {"setting": XSS, "boot_val": "x", "source": "configuration file"}
        rec.settings_layers = {"run": {XSS: XSS}}
        rec.artifacts = {XSS: f"{XSS}.log"}
        rec.scripts = [ScriptResult(0, XSS, 1, 10, tps=1.0)]
        rec.series["pg"][f"wait.{XSS}"] = [1.0] * len(rec.series["pg"]["t"])
        rec.extra = {XSS: XSS}
        sample_data.store(archive, rec)
    study_text = (
        sample_data.ITERATION_STUDY.format(name="xss")
        .replace('name = "defaults"', f'name = "{XSS}"\nnote = "{XSS}"')
        .replace("(seed 000)", XSS)
    )
    from pgrig.archive.records import StudyRecord

    archive.create_study(StudyRecord(name="xss", kind="iterations", spec=study_text))
    rec = sample_data.make_run(5, rng, study="xss", study_point="iter-00", note=XSS, tpcc=False)
    sample_data.store(archive, rec)
    archive.close()
    return TestClient(create_app(url))


PAGES = [
    "/runs",
    "/runs?q=" + quote("<script>"),
    "/runs?tag=" + quote(f"{XSS}={XSS}"),
    "/runs/1",
    "/runs/2",
    "/compare?ids=1,2",
    "/studies",
    "/studies/xss",
    "/studies/" + quote(XSS, safe=""),  # the 404 page repeats the name
    "/runs?status=" + quote(XSS),  # the 400 page repeats the value
]


@pytest.mark.parametrize("path", PAGES)
def test_user_text_is_escaped_on_every_page(client: TestClient, path: str) -> None:
    r = client.get(path)
    assert r.status_code in (200, 400, 404)
    html = r.text
    assert XSS not in html
    assert "<img src=x" not in html
    assert "<script" not in html.lower()  # the UI itself uses no script at all
    if path == "/studies/xss":
        assert r.status_code == 200
    if r.status_code == 200 and path != "/studies":
        assert ESCAPED in html  # shown, as text
    assert re.search(r'(src|href)="(https?:)?//', html) is None  # nothing loaded from elsewhere


def test_headers_forbid_scripts_and_framing(client: TestClient) -> None:
    r = client.get("/runs")
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp
    assert r.headers["x-frame-options"] == "DENY"
    assert r.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("method", ["post", "put", "delete", "patch"])
@pytest.mark.parametrize("path", ["/runs", "/runs/1", "/compare?ids=1,2", "/studies/xss"])
def test_only_get(client: TestClient, method: str, path: str) -> None:
    assert getattr(client, method)(path).status_code == 405


def test_static_files_are_the_stylesheet_only(client: TestClient) -> None:
    assert client.get("/static/style.css").status_code == 200
    assert client.get("/static/../app.py").status_code == 404
    assert client.get("/static/%2E%2E/app.py").status_code == 404
    assert client.get("/docs").status_code == 404
    assert client.get("/openapi.json").status_code == 404


def test_the_web_ui_makes_no_recovery_writes(
    url: str, archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening the archive for the web UI recovers nothing (that writes): it is an explicit
    call (Archive.recover), made by the CLI's commands."""
    from pgrig.archive import store
    from pgrig.web.app import create_app

    calls: list[str] = []
    monkeypatch.setattr(store.Archive, "recover", lambda self: calls.append(self.url))
    create_app(url)
    assert calls == []
    store.Archive(url).close()  # the CLI's default: recovery on opening
    assert len(calls) == 1
