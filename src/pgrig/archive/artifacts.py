"""Raw files of a run (server log, pgbench output and per-transaction logs, generated configs).

They live in <home>/artifacts/<run id>/, compressed with gzip level 1: per-transaction logs
reach hundreds of MB, and level 1 keeps compression well ahead of the disk while still
shrinking them several-fold (zstd would be better but is not in the 3.11 standard library).
RunRecord.artifacts maps a name to a path relative to paths.artifacts_dir(), e.g.
{"server_log": "12/server.log.gz"}, so the archive never holds machine-specific absolute paths.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
from pathlib import Path

from pgrig import paths
from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError

__all__ = [
    "GZIP_LEVEL",
    "artifact_path",
    "compress_file",
    "remove_run_artifacts",
    "run_artifacts_dir",
    "store_artifact",
]

GZIP_LEVEL = 1
_CHUNK = 1 << 20
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def run_artifacts_dir(run_id: int, create: bool = True) -> Path:
    """<home>/artifacts/<run id>/ (created unless `create` is False)."""
    if not isinstance(run_id, int) or run_id <= 0:
        raise PgrigError(f"invalid run id {run_id!r}")
    d = paths.artifacts_dir() / str(run_id)
    if create:
        d.mkdir(parents=True, exist_ok=True)
    return d


def compress_file(
    src: Path | str, dst_gz: Path | str | None = None, *, level: int = GZIP_LEVEL
) -> Path:
    """gzip `src` to `dst_gz` (default: src + ".gz"), streaming, written atomically."""
    src = Path(src)
    dst = Path(dst_gz) if dst_gz is not None else src.with_name(src.name + ".gz")
    tmp = dst.with_name(dst.name + ".part")
    try:
        with open(src, "rb") as fin, gzip.open(tmp, "wb", compresslevel=level) as fout:
            shutil.copyfileobj(fin, fout, _CHUNK)
        os.replace(tmp, dst)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise PgrigError(f"cannot compress {src} to {dst}: {e.strerror or e}") from e
    return dst


def store_artifact(
    rec: RunRecord,
    src: Path | str,
    name: str | None = None,
    *,
    compress: bool = True,
    move: bool = False,
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
    dst = run_artifacts_dir(rec.id) / (base + ".gz" if compress else base)
    if compress:
        compress_file(src, dst)
        if move:
            src.unlink()
    else:
        try:
            if move:
                shutil.move(src, dst)
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


def remove_run_artifacts(run_id: int) -> None:
    shutil.rmtree(run_artifacts_dir(run_id, create=False), ignore_errors=True)
