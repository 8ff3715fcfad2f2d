"""The page of a version series, /track/NAME: the page model of views/track.py (what `track
show` and the report render) with the report's chart, drawn by the same engine."""

from __future__ import annotations

from markupsafe import Markup

from pgrig.archive.protocol import RunReader
from pgrig.reports.svg import render
from pgrig.reports.track_report import series_chart
from pgrig.track import figures, runner
from pgrig.views import track as track_page


def build(archive: RunReader, name: str) -> tuple[track_page.TrackPage, Markup | None]:
    series_view = figures.build(runner.load_series(archive, name), archive=archive)
    chart = series_chart(series_view)
    return track_page.build(series_view), (render(chart) if chart is not None else None)
