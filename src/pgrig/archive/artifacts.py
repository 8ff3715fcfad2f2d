"""Raw files of a run (server log, pgbench output and per-transaction logs, generated configs).

They live in <home>/artifacts/<archive key>/<run id>/, compressed with gzip level 1:
per-transaction logs reach hundreds of MB, and level 1 keeps compression well ahead of the disk
while still shrinking them several-fold (zstd would be better but is not in the 3.11 standard
library). Run ids are per archive, so the directory is keyed by the archive too (`archive_key`:
"home" for the home's own SQLite file, whatever the home's path; a digest of the file or of the
server and database otherwise): two archives never share a run's files, and a command of one
archive never removes another's (issue 25). RunRecord.artifacts maps a name to a path relative
to paths.artifacts_dir(), e.g. {"server_log": "home/12/server.log.gz"}, so the archive never
holds machine-specific absolute paths; records written before the key ("12/server.log.gz")
stay readable where they are.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import shutil
from pathlib import Path

from pgrig import paths, safe_write
from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError

__all__ = [
    "GZIP_LEVEL",
    "HOME_ARCHIVE_KEY",
    "archive_key",
    "artifact_path",
    "compress_file",
    "legacy_run_dir",
    "relative",
    "remove_run_artifacts",
    "run_artifacts_dir",
    "store_artifact",
]

GZIP_LEVEL = 1
_CHUNK = 1 << 20
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


HOME_ARCHIVE_KEY = "home"


def archive_key(archive_url: str) -> str:
    """The directory under <home>/artifacts/ of an archive's runs, from its URL (masked or
    not: a password is no part of an archive's identity)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(archive_url)
    except ArgumentError:
        raise PgrigError(f"invalid archive URL {archive_url!r}") from None
    backend = url.get_backend_name()
    if backend == "sqlite":
        db = url.database
        if not db or db == ":memory:":
            return "memory"
        path = Path(db).expanduser().resolve()
        if path == (paths.home() / "archive.sqlite").resolve():
            return HOME_ARCHIVE_KEY
        identity = f"sqlite:{path}"
    else:
        identity = f"{backend}:{url.host or ''}:{url.port or ''}/{url.database or ''}"
    digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
    return f"{backend}-{digest}"


def run_artifacts_dir(run_id: int, create: bool = True, *, archive: str) -> Path:
    """<home>/artifacts/<archive key>/<run id>/ of the run `run_id` of the archive whose URL
    is `archive` (created unless `create` is False)."""
    if not isinstance(run_id, int) or run_id <= 0:
        raise PgrigError(f"invalid run id {run_id!r}")
    d = paths.artifacts_dir() / archive_key(archive) / str(run_id)
    if create:
        d.mkdir(parents=True, exist_ok=True)
    return d


def legacy_run_dir(run_id: int) -> Path:
    """<home>/artifacts/<run id>/: where runs recorded before the archive key kept their
    files (their records' artifact paths say so: "12/server.log")."""
    return paths.artifacts_dir() / str(run_id)


def relative(path: Path) -> str:
    """`path` (inside the artifacts root) as a record stores it."""
    return path.relative_to(paths.artifacts_dir()).as_posix()


def compress_file(
    src: Path | str, dst_gz: Path | str | None = None, *, level: int = GZIP_LEVEL
) -> Path:
    """gzip `src` to `dst_gz` (default: src + ".gz"), streaming, written atomically."""
    src = Path(src)
    dst = Path(dst_gz) if dst_gz is not None else src.with_name(src.name + ".gz")
    try:
        with (
            safe_write.replacing(dst, suffix=".part") as tmp,
            open(src, "rb") as fin,
            gzip.open(tmp, "wb", compresslevel=level) as fout,
        ):
            shutil.copyfileobj(fin, fout, _CHUNK)
    except OSError as e:
        raise PgrigError(f"cannot compress {src} to {dst}: {e.strerror or e}") from e
    return dst


def store_artifact(
    rec: RunRecord,
    src: Path | str,
    name: str | None = None,
    *,
    compress: bool = True,
    move: bool = False,
    archive: str,
) -> str:
    """Put a file into the run's artifact directory and record it in rec.artifacts[name].

    The file keeps its base name (plus ".gz" when compressed); `move` removes the source
    afterwards. Returns the relative path stored. The run must have an id (begin_run first).
    """
    if rec.id is None:
        raise PgrigError("a run needs an id (archive.begin_run) before it can hold artifacts")
    src = Path(src)
    if not src.is_file():
        raise PgrigError(f"artifact {src} does not exist or is not a file")
    name = name or src.name
    base = _UNSAFE.sub("_", src.name).lstrip(".") or "artifact"
    dst = run_artifacts_dir(rec.id, archive=archive) / (base + ".gz" if compress else base)
    if compress:
        compress_file(src, dst)
        if move:
            src.unlink()
    else:
        try:
            if move:
                safe_write.move_file(src, dst)
            else:
                shutil.copyfile(src, dst)
        except OSError as e:
            raise PgrigError(f"cannot store artifact {src}: {e.strerror or e}") from e
    rel = dst.relative_to(paths.artifacts_dir()).as_posix()
    rec.artifacts[name] = rel
    return rel


def artifact_path(rel: str) -> Path:
    """The absolute path of an artifact recorded as `rel`; refuses paths leaving the root."""
    root = paths.artifacts_dir().resolve()
    p = (root / rel).resolve()
    if not p.is_relative_to(root):
        raise PgrigError(f"artifact path {rel!r} points outside {root}")
    return p


def remove_run_artifacts(run_id: int, *, archive: str, recorded: dict[str, str]) -> None:
    """Remove the files of run `run_id` of `archive`: its own directory, and the legacy
    <home>/artifacts/<run id>/ only when the run's record points there (`recorded`: its
    artifacts), never another archive's."""
    shutil.rmtree(run_artifacts_dir(run_id, create=False, archive=archive), ignore_errors=True)
    legacy = f"{run_id}/"
    if any(str(rel).startswith(legacy) for rel in recorded.values()):
        shutil.rmtree(legacy_run_dir(run_id), ignore_errors=True)
