"""What the benches that drive raw pgbench or a scratch pgrig home share."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pgrig.load.pgbench_output import parse_summary
from pgrig.provision.environment import DEFAULT_DATABASE, Environment


def client_env(env_name: str) -> dict[str, str]:
    """The process environment for raw pgbench or psql aimed at a pgrig environment's data."""
    return Environment.load(env_name).client_process_env(DEFAULT_DATABASE)


def pgbench_tps(stdout: str) -> float:
    """The TPS pgbench printed (without initial connection time), by pgrig's own parser."""
    tps = parse_summary(stdout).tps
    if tps is None:
        raise SystemExit(f"pgbench printed no tps line:\n{stdout}")
    return tps


@contextmanager
def scratch_home(prefix: str, env_name: str, keep: bool = False) -> Iterator[Path]:
    """A throw-away pgrig home (its own SQLite archive) for this process and the pgrig commands
    it runs; on exit `env_name` is destroyed and, unless `keep`, the home removed."""
    home = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    home.chmod(0o755)  # the unprivileged server user reaches its data directory through it
    os.environ["PGRIG_HOME"] = str(home)
    os.environ.pop("PGRIG_ARCHIVE", None)
    try:
        yield home
    finally:
        subprocess.run(["pgrig", "env", "destroy", env_name, "--yes"], capture_output=True)
        if not keep:
            shutil.rmtree(home, ignore_errors=True)
