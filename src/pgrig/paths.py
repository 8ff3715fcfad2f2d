"""Where pgrig keeps its state: one home directory, overridable with PGRIG_HOME.

As root the home defaults to /var/lib/pgrig, because the unprivileged server user must be
able to reach the data directories (root's own home is not traversable by other users).
"""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    env = os.environ.get("PGRIG_HOME")
    if env:
        return Path(env).expanduser().resolve()
    if os.geteuid() == 0:
        return Path("/var/lib/pgrig")
    return Path.home() / ".pgrig"


def binaries_dir() -> Path:
    """Unpacked PostgreSQL builds fetched by `pgrig pg install`: <home>/pg/<version>/bin.

    PGRIG_PG_DIR shares one cache between homes (the test suite uses a home per test).
    """
    env = os.environ.get("PGRIG_PG_DIR")
    if env:
        return Path(env).expanduser().resolve()
    return home() / "pg"


def downloads_dir() -> Path:
    return home() / "downloads"


def envs_dir() -> Path:
    """One directory per environment: env.json, data/, run/ (sockets), logs."""
    return home() / "envs"


def artifacts_dir() -> Path:
    """Raw artifacts per run: <home>/artifacts/<run id>/."""
    return home() / "artifacts"


def spooled_dir() -> Path:
    """One empty marker per run whose record waits in its artifacts to be imported
    (archive/spool.py): every command looks here, not through every run's directory."""
    return home() / "spooled"


def profiles_dir() -> Path:
    """User-defined profiles (TOML), next to the ones shipped in the package."""
    return home() / "profiles"


def default_archive_url() -> str:
    """PGRIG_ARCHIVE (an SQLAlchemy URL, e.g. postgresql+psycopg://...) or SQLite in home."""
    url = os.environ.get("PGRIG_ARCHIVE")
    if url:
        return url
    return f"sqlite:///{home() / 'archive.sqlite'}"
