"""`--load-from NAME`: the transport to a load host's agent and the pgbench it runs.

"localhost" is this machine (the agent as a child process: same code path, no SSH); any other
name is a host of the registry (`pgrig host add`), reached over SSH with its verified host key
(load/remote/ssh_transport.py).
"""

from __future__ import annotations

from pathlib import Path

from pgrig.errors import PgrigError
from pgrig.load.remote.agent_client import LocalTransport, Transport

LOCAL = "localhost"
REMOTE_PG_ROOT = "/var/lib/pgrig/pg"  # where `pgrig host provision` unpacks the builds


def is_local(name: str) -> bool:
    return name == LOCAL


def transport(name: str) -> Transport:
    """A started agent on host `name` (raises PgrigError with one clear line)."""
    if is_local(name):
        return LocalTransport(LOCAL)
    from pgrig.load.remote import ssh_transport

    return ssh_transport.open_agent(name)


def pgbench_path(name: str, local_pgbench: str) -> str:
    """The pgbench the host runs: its copy of the same PostgreSQL binaries (pushed from this
    machine's cache by `pgrig host provision`, under the same path)."""
    if is_local(name):
        return local_pgbench
    build = Path(local_pgbench).parents[1].name  # <cache>/<version>/bin/pgbench
    return f"{REMOTE_PG_ROOT}/{build}/bin/pgbench"


def check_reachable_target(name: str, pghost: str | None) -> None:
    """A load host must reach the server (or pooler) where pgbench connects."""
    if is_local(name) or pghost is None:
        return
    if pghost.startswith("/") or pghost in ("localhost", "::1") or pghost.startswith("127."):
        raise PgrigError(
            f"--load-from {name}: the server listens on {pghost}, which only this machine "
            "reaches; create the environment on a host (`pgrig env create ... --on HOST`)"
        )
