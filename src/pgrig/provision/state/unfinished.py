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
This module only keeps the mark: it imports nothing of provision/ (cluster.py imports it).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from pgrig import paths
from pgrig.archive import lease

MARK = "CREATING"


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
            try:
                owner = lease.Owner.from_columns(json.loads(mark_file.read_text()))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # being written this instant, or not ours to judge
            if lease.is_gone(owner) is True:
                out.append(mark_file.parent.name)
    return sorted(out)
