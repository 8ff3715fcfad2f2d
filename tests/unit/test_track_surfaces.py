"""A version series gives the same rows on every surface: `pgrig track show`, the page
/track/NAME and `pgrig report track` render one page model (views/track.py)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from pgrig.cli import track as track_cli
from pgrig.reports import publish
from pgrig.track import figures
from pgrig.views import track as track_page
from pgrig.web.app import create_app
from tests.unit.test_track_series import _measured

LEVELS = {"15.19": 1000.0, "17.9": 1000.0, "17.10": 1001.0, "18.3": 1080.0, "18.6": 1082.0}


def test_every_surface_shows_the_same_versions(tmp_path: Path) -> None:
    store, series = _measured(tmp_path, LEVELS)
    page = track_page.build(figures.build(series, archive=store))
    want = [[c.lines for c in row] for row in page.versions.rows]
    cols = page.versions.columns
    centre, bounds, step = 4, cols.index("95% bounds"), cols.index("vs previous")
    # 18.3 against 17.10: the level moved; round-robin repeats are judged paired
    assert want[3][step][0].endswith("faster (paired)")

    url = f"sqlite:///{tmp_path / 'archive.sqlite'}"
    (md,) = publish.track_report(store, "s1", ["md"], tmp_path / "out")
    lines = md.read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("| version | binaries |"))
    got = []
    for ln in lines[at + 2 : at + 2 + len(want)]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]]
        got.append([[html.unescape(x.replace("\\", "")) for x in c.split("<br>")] for c in cells])
    assert [[r[0], r[centre], r[bounds], r[step]] for r in got] == [
        [r[0], r[centre], r[bounds], r[step]] for r in want
    ]

    web = TestClient(create_app(url)).get("/track/s1").text
    table = web.split('data-part="versions">')[1].split("</table>")[0]
    for row, cells in zip(
        re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S), want, strict=True
    ):
        tds = [
            html.unescape(re.sub(r"<br>", "\n", td))
            for td in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        for i in (0, centre, bounds, step):
            assert tds[i].strip().split("\n") == cells[i], (i, tds[i])

    out = CliRunner().invoke(track_cli.app, ["show", "s1", "--archive", url])
    assert out.exit_code == 0, out.output
    assert max(len(ln) for ln in out.stdout.splitlines()) <= 120
    text = out.stdout
    for cells in want:
        block = text.split(f"\n{cells[0][0]} ", 1)[1].split("\n1", 1)[0]
        for i in (centre, bounds):
            assert cells[i][0] in block, (cells[i], block)
    assert page.verdict_note.split(":")[0] in text


def test_track_names_the_binaries_source_as_track_show_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Installed before by pgrig: stderr said "binaries (system)", `track show` said pgrig."""
    import io
    from types import SimpleNamespace
    from typing import cast

    from rich.console import Console

    from pgrig.provision.server import binaries, maven, sources
    from pgrig.track.runner import Measurer, Series
    from pgrig.track.spec import TrackSpec
    from pgrig.track.versions import VersionPoint

    class Stop(Exception):
        pass

    bindir = tmp_path / "18.6" / "bin"
    found = binaries.Installation("18.6", 18, str(bindir), "pgrig", None)
    monkeypatch.setattr(binaries, "installed", lambda: [found])
    monkeypatch.setattr(sources, "install", lambda version, order: (bindir, "system"))

    def stop(_bindir: Path) -> dict[str, str]:
        raise Stop

    monkeypatch.setattr(maven, "client_tools", stop)
    out = io.StringIO()
    point = VersionPoint(version="18.6", requested="18")
    spec = cast(TrackSpec, SimpleNamespace(name="t"))  # prepare reads only its name here
    measurer = Measurer(Series(spec=spec, points=[point]), archive=None, console=Console(file=out))  # type: ignore[arg-type]
    with pytest.raises(Stop):
        measurer.prepare(point)
    said = out.getvalue()
    assert "system" not in said and "binaries pgrig" in said
    assert point.source == "pgrig"
