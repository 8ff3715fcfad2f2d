"""An `env create` that died before it finished (kill -9, the OOM killer): what it left is
removed by the next pgrig command.

create_environment writes a CREATING file naming its process (archive/lease.py's Owner) into
the environment's directory as soon as it exists, and removes it once everything is made (the
server, its database, replicas, the sync mode). env.json is saved midway (before the server
starts, so a concurrent create sees the port taken): without the mark, a create killed after
that point would leave an environment that looks whole and is not. A directory whose mark names
a process that is gone is therefore an abandoned create: every command (cli/app.py) destroys it
through cluster.remove_abandoned_creates (its server and replicas stopped, its directory
removed) and says so on stderr. A mark of a living process, or of another host, is left alone.
The directory is born holding the mark (make_dir: a staging directory named after the process,
renamed into place), so a kill at any instant leaves no directory or a marked one, never an
unmarked one that looks like a damaged environment; a staging directory a killed create left
is removed by the same next command (remove_stale_staging).
This module only keeps the mark: it imports nothing of provision/ (cluster.py imports it).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

import psutil

from pgrig import paths, safe_write
from pgrig.archive import lease

MARK = "CREATING"
_STAGING = ".creating."  # .NAME.creating.PID: hidden, and not a valid environment name


def make_dir(env_dir: Path) -> None:
    """Create `env_dir` already holding this process's mark. FileExistsError if it exists
    (another create got there first)."""
    staging = env_dir.parent / f".{env_dir.name}{_STAGING}{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)  # a dead process's of the same pid
    staging.mkdir()
    try:
        mark(staging)
        # atomic; refused onto another create's directory (never empty: it holds its mark)
        safe_write.publish_dir(staging, env_dir)
    except FileExistsError:
        shutil.rmtree(staging, ignore_errors=True)
        raise FileExistsError(str(env_dir)) from None
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def mark(env_dir: Path) -> None:
    """This process is creating the environment in `env_dir`."""
    (env_dir / MARK).write_text(json.dumps(lease.Owner.me().as_columns()))


def clear(env_dir: Path) -> None:
    """The environment is complete."""
    (env_dir / MARK).unlink(missing_ok=True)


def abandoned() -> list[str]:
    """Names of environments whose create's process is gone, sorted."""
    out = []
    with contextlib.suppress(OSError):
        for mark_file in paths.envs_dir().glob(f"*/{MARK}"):
            if mark_file.parent.name.startswith("."):
                continue  # a staging directory: remove_stale_staging
            owner = _owner(mark_file)  # None: being written this instant, or not ours to judge
            if owner is not None and lease.is_gone(owner) is True:
                out.append(mark_file.parent.name)
    return sorted(out)


def remove_stale_staging() -> None:
    """Remove the staging directories of creates killed inside make_dir (they hold at most a
    mark: nothing was made in them)."""
    with contextlib.suppress(OSError):
        for d in paths.envs_dir().glob(f".*{_STAGING}*"):
            pid = d.name.rsplit(".", 1)[-1]
            if pid.isdigit() and not _alive(int(pid), d / MARK):
                shutil.rmtree(d, ignore_errors=True)


def _alive(pid: int, mark_file: Path) -> bool:
    owner = _owner(mark_file)
    if owner is None:  # killed before its mark was whole
        return psutil.pid_exists(pid)
    return lease.is_gone(owner) is not True


def _owner(mark_file: Path) -> lease.Owner | None:
    """The process a mark names; None if the mark cannot be read whole."""
    try:
        return lease.Owner.from_columns(json.loads(mark_file.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None
