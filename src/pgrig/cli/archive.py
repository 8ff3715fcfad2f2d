"""`pgrig archive upgrade`: bring a shared archive's schema to this pgrig's revision.

A PostgreSQL archive is shared by a team: its schema changes only on this explicit command,
since every other client then needs a pgrig that knows the new revision (an older one says
it is too old). An SQLite archive is one user's file and is upgraded when opened.
"""

from __future__ import annotations

import typer

from pgrig.cli import common
from pgrig.cli.common import ArchiveOpt

app = typer.Typer(no_args_is_help=True)


@app.command("upgrade")
def upgrade(
    archive: ArchiveOpt = None,
) -> None:
    """Migrate the archive's schema to this pgrig's revision (a no-op when it is there)."""
    from pgrig.archive.store import SCHEMA_HEAD

    with common.open_archive(archive, upgrade=True) as arch:
        before = arch.schema_before
    if before is None:
        said = f"created at {SCHEMA_HEAD}"
    elif before != SCHEMA_HEAD:
        said = f"from {before} to {SCHEMA_HEAD}"
    else:
        said = f"already at {before}"
    common.err_console().print(
        f"archive {arch.url}: schema {said}", highlight=False, markup=False, soft_wrap=True
    )
