"""A run request -> the pgbench argv (and its exact, copy-pasteable shell form for the archive).

Connection parameters are not in the argv: the runner passes them as PG* environment
variables so no DSN shows up in `ps` or in the recorded command. The request was validated when
it was built (request/load.py); what is left to check here is the binary's version.
"""

from __future__ import annotations

import functools
import math
import shlex
import subprocess
from collections.abc import Sequence

from pgrig.errors import PgrigError
from pgrig.load.engines.pgbench_output import parse_version, version_major
from pgrig.provision.state.environment import DEAD_PEER, DEFAULT_DATABASE, dbname_arg, over_network
from pgrig.request import RunRequest
from pgrig.request.values import number_text

MIN_MAJOR_RETRIES = 15  # --max-tries, --failures-detailed and the failure lines appeared in 15


@functools.lru_cache(maxsize=16)
def pgbench_version(pgbench: str) -> str | None:
    """Version of a pgbench binary (`pgbench --version`, e.g. "15.18"), None if it cannot run."""
    try:
        out = subprocess.run(
            [pgbench, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_version(out.stdout)


def pgbench_major(pgbench: str) -> int | None:
    """Major version of a pgbench binary, None if it cannot be run."""
    return version_major(pgbench_version(pgbench))


def build_pgbench_command(
    pgbench: str,
    spec: RunRequest,
    log_prefix: str,
    total_seconds: float | None,
    progress: bool = True,
    *,
    pgbench_version_major: int | None = None,
    sampling_rate: float | None = None,
    target_host: str | None = None,
) -> list[str]:
    """The pgbench argv for spec. total_seconds is -T (warm-up + measured window); None means
    -t spec.transactions_per_client. An empty log_prefix means no per-transaction log. The
    version (asked from the binary when not given) decides --max-tries / --failures-detailed
    (15+). target_host (PGHOST) over the network: the database argument also carries DEAD_PEER
    (a connection string; pgbench expands it)."""
    if not spec.scripts:
        raise PgrigError("no scripts to run (give at least one --workload)")
    major = pgbench_version_major if pgbench_version_major is not None else pgbench_major(pgbench)
    argv = [pgbench, "-n", "-c", str(spec.clients), "-j", str(spec.threads)]
    if total_seconds is not None:
        # -T takes whole seconds: round up, so the measured window always fits in the run
        argv += ["-T", str(math.ceil(total_seconds))]
    else:
        argv += ["-t", str(spec.transactions_per_client)]
    if spec.rate is not None:
        argv += ["-R", number_text(spec.rate)]
    if spec.latency_limit_ms is not None:
        argv += ["-L", number_text(spec.latency_limit_ms)]
    argv += ["-M", spec.protocol]
    if spec.max_tries != 1:
        if major is not None and major < MIN_MAJOR_RETRIES:
            raise PgrigError(
                f"--max-tries needs pgbench {MIN_MAJOR_RETRIES} or newer (this is pgbench {major})"
            )
        argv += [f"--max-tries={spec.max_tries}", "--failures-detailed"]
    for name, value in spec.defines.items():
        argv += ["-D", f"{name}={value}"]
    for s in spec.scripts:
        if s.builtin is not None:
            argv += ["-b", f"{s.builtin}@{s.weight}"]
        else:
            argv += ["-f", f"{s.path}@{s.weight}"]
    if log_prefix:
        argv += ["-l", f"--log-prefix={log_prefix}"]
        if sampling_rate is not None and sampling_rate < 1:
            argv.append(f"--sampling-rate={number_text(sampling_rate)}")
    if progress:
        argv += ["-P", "1"]
    argv += list(spec.extra_pgbench_args)
    dbname = spec.database or DEFAULT_DATABASE
    argv.append(dead_peer_dbname(dbname) if over_network(target_host) else dbname_arg(dbname))
    return argv


def dead_peer_dbname(dbname: str) -> str:
    """The database argument as a connection string with DEAD_PEER (quoted by psycopg's
    conninfo rules: any database name stays one value)."""
    from psycopg.conninfo import make_conninfo

    return make_conninfo("", dbname=dbname, **DEAD_PEER)


def shell_quote(argv: Sequence[str]) -> str:
    """The exact command line, quoted for a POSIX shell (what the archive shows)."""
    return shlex.join(argv)
