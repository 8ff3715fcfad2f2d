"""The results web UI: a FastAPI app that only reads the archive.

Pages are rendered on the server with Jinja2 (autoescape on for everything, so notes, tags and
names always show as text) and charts are inline SVG, so the browser runs no script at all;
the Content-Security-Policy says so. Every route is GET. Route handlers are plain `def`s:
FastAPI runs them in its thread pool, so a slow archive query never blocks the event loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import quote

import jinja2
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from fastapi.staticfiles import StaticFiles
from sqlalchemy.engine import make_url

from pgrig.archive.records import RunFilter
from pgrig.archive.store import Archive, mask_url, normalize_url
from pgrig.errors import NotFound, PgrigError
from pgrig.format import page_text
from pgrig.load.engines import work_dirs
from pgrig.request.values import check_int64
from pgrig.web import (
    compare_page,
    run_page,
    runs_page,
    study_page,
    track_page,
)
from pgrig.web import format as fmt

HERE = Path(__file__).parent
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
# Artifacts are served as plain text or bytes, never as something a browser would render.
TEXT_SUFFIXES = (".log", ".stdout", ".stderr", ".txt", ".conf", ".sql", ".json", ".csv", ".toml")
# page(template, status=200, **context): a template rendered into an HTML response
Page = Callable[..., HTMLResponse]


def templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every template, whatever its name
        finalize=page_text,  # control and bidi characters shown escaped, as in the CLI
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(fmt.FILTERS)
    env.globals.update(
        engine=fmt.engine,
        quote=lambda s: quote(str(s), safe=""),
        sort_columns=runs_page.SORT_COLUMNS,
        statuses=runs_page.STATUSES,
        page_sizes=runs_page.PAGE_SIZES,
        baseline_url=compare_page.baseline_url,
        block_kind=study_page.block_kind,
        cell_class=study_page.cell_class,
        run_id_column=study_page.run_id_column,
    )
    return env


def _check_exists(url: str | None) -> None:
    if not url:
        return
    parsed = make_url(normalize_url(url))
    db = parsed.database
    if parsed.get_backend_name() == "sqlite" and db and db != ":memory:" and not Path(db).exists():
        raise PgrigError(
            f"archive {mask_url(normalize_url(url))} does not exist (no such SQLite file)"
        )


def create_app(archive_url: str | None = None) -> FastAPI:
    """The app over the archive at `archive_url` (None: PGRIG_ARCHIVE or the default SQLite).

    A named SQLite file must exist: a read-only UI should not create an empty archive because
    of a typo in a path (the default archive is created, so a fresh install shows empty pages).
    """
    _check_exists(archive_url)
    # Reading only: no recovery writes (importing spooled runs, marking dead runs lost); the
    # next CLI command, or `Archive.recover()`, does that explicitly.
    archive = Archive(archive_url, recover=False)
    work_dirs.remove_orphan_work_dirs()
    env = templates()
    app = FastAPI(title="pgrig", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.archive = archive
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    def page(name: str, status: int = 200, **ctx: object) -> HTMLResponse:
        html = env.get_template(name).render(archive_url=archive.url, **ctx)
        return HTMLResponse(html, status_code=status)

    _security_headers(app)
    _error_pages(app, page)
    _run_pages(app, archive, page)
    _study_pages(app, archive, page)
    return app


def _security_headers(app: FastAPI) -> None:
    """Every response says: no scripts, no framing, no sniffing, no referrer (CSP above)."""

    @app.middleware("http")
    async def headers(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Frame-Options"] = "DENY"
        return response


def _error_pages(app: FastAPI, page: Page) -> None:
    """Errors are HTML pages like the rest: 404 for what does not exist, 400 for bad input."""

    @app.exception_handler(NotFound)
    def not_found(_request: Request, exc: NotFound) -> HTMLResponse:
        return page("error.html", 404, title="Not found", message=str(exc))

    @app.exception_handler(PgrigError)
    def bad_request(_request: Request, exc: PgrigError) -> HTMLResponse:
        return page("error.html", 400, title="Bad request", message=str(exc))

    @app.exception_handler(RequestValidationError)
    def bad_parameter(_request: Request, exc: RequestValidationError) -> HTMLResponse:
        """/runs/abc: the same HTML error page as any other bad request, not FastAPI's JSON."""
        problems = []
        for err in exc.errors():
            where = ".".join(str(x) for x in err.get("loc", ())[1:]) or "request"
            problems.append(f"{where} {str(err.get('input'))[:80]!r}: {err.get('msg')}")
        return page("error.html", 400, title="Bad request", message="; ".join(problems))


def _run_pages(app: FastAPI, archive: Archive, page: Page) -> None:
    """The runs list (and its CSV), a run, its artifacts, and the comparison of runs."""

    @app.get("/", include_in_schema=False)
    def index() -> RedirectResponse:
        return RedirectResponse("/runs", status_code=302)

    @app.get("/runs", response_class=HTMLResponse)
    def runs(request: Request) -> HTMLResponse:
        archive.mark_lost_runs()  # a long-lived server sees runs die too (archive/lease.py)
        q = runs_page.parse_query(request.query_params)
        return page("runs.html", p=runs_page.load_page(archive, q), q=q)

    @app.get("/runs.csv")
    def runs_csv(request: Request) -> StreamingResponse:
        q = runs_page.parse_query(request.query_params)
        return StreamingResponse(
            runs_page.csv_lines(archive, q),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": 'attachment; filename="pgrig-runs.csv"'},
        )

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run(run_id: int) -> HTMLResponse:
        rec = archive.get_run(check_int64(run_id, "run id"))
        return page("run.html", v=run_page.build(rec), r=rec)

    @app.get("/runs/{run_id}/artifacts/{name}")
    def artifact(run_id: int, name: str) -> FileResponse:
        rec = archive.get_run(check_int64(run_id, "run id"))
        path = run_page.resolve_artifact(rec, name)
        media = "text/plain; charset=utf-8" if path.name.endswith(TEXT_SUFFIXES) else None
        return FileResponse(
            path,
            media_type=media or "application/octet-stream",
            filename=path.name,
            content_disposition_type="inline" if media else "attachment",
        )

    @app.get("/compare", response_class=HTMLResponse)
    def compare(
        ids: list[str] = Query(default=[]), group: list[str] = Query(default=[])
    ) -> HTMLResponse:
        groups = [[archive.get_run(i) for i in g] for g in compare_page.parse_groups(ids, group)]
        repeats_url = compare_page.study_repeats_url(archive, groups)
        return page("compare.html", v=compare_page.build(groups, repeats_url))


def _study_pages(app: FastAPI, archive: Archive, page: Page) -> None:
    """The studies list, a study, and a version series (a study of kind "track")."""

    @app.get("/studies", response_class=HTMLResponse)
    def studies() -> HTMLResponse:
        items = [(s, archive.count_runs(RunFilter(study=s.name))) for s in archive.list_studies()]
        return page("studies.html", studies=items)

    @app.get("/track/{name}", response_class=HTMLResponse)
    def track(name: str) -> HTMLResponse:
        page_model, chart = track_page.build(archive, name)
        return page("track.html", p=page_model, chart=chart)

    @app.get("/studies/{name}", response_class=HTMLResponse)
    def study(name: str) -> Response:
        rec = archive.get_study(name)
        if rec.kind == "track":  # a version series has its own page
            return RedirectResponse(f"/track/{quote(name, safe='')}", status_code=307)
        try:
            view = study_page.build(rec, archive)
        except NotFound:
            raise
        except PgrigError as e:  # e.g. the stored study file no longer parses
            message = f"study {name!r} cannot be shown: {e}"
            return page("error.html", 500, title="Cannot show this study", message=message)
        return page("study.html", v=view)
