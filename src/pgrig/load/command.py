"""RunSpec -> the pgbench argv (and its exact, copy-pasteable shell form for the archive).

Connection parameters are not in the argv: the runner passes them as PG* environment
variables so no DSN shows up in `ps` or in the recorded command. Validation happens here, before
anything starts, with one specific message per mistake.
"""

from __future__ import annotations

import functools
import math
import shlex
import subprocess
from collections.abc import Sequence

from pgrig.errors import PgrigError
from pgrig.load.pgbench_output import parse_version, version_major
from pgrig.load.spec import RunSpec
from pgrig.provision.environment import DEFAULT_DATABASE
from pgrig.workloads.script import PGBENCH_BUILTINS as BUILTINS

PROTOCOLS = ("simple", "extended", "prepared")
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


def _fmt(x: float) -> str:
    """3.0 -> "3", 2.5 -> "2.5": what a person would type."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _positive(value: float | None, flag: str) -> None:
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise PgrigError(
            f"{flag} must be > 0 (got {_fmt(value) if math.isfinite(value) else value})"
        )


def validate(spec: RunSpec, total_seconds: float | None) -> None:
    """Reject what pgbench would reject (or silently misread), with the pgrig flag named."""
    validate_load(spec, total_seconds)
    validate_scripts(spec)


def validate_load(spec: RunSpec, total_seconds: float | None) -> None:
    """The load parameters alone (clients, time, rate...): checkable before scripts exist."""
    if spec.clients < 1:
        raise PgrigError(f"--clients must be >= 1 (got {spec.clients})")
    if spec.threads < 1:
        raise PgrigError(f"--threads must be >= 1 (got {spec.threads})")
    if spec.threads > spec.clients:
        raise PgrigError(
            f"--threads ({spec.threads}) cannot exceed --clients ({spec.clients}): pgbench refuses"
        )
    if spec.transactions is not None and (spec.duration_s is not None or total_seconds is not None):
        raise PgrigError("give either --duration or --transactions, not both")
    _positive(spec.duration_s, "--duration")
    if spec.transactions is not None and spec.transactions <= 0:
        raise PgrigError(f"--transactions must be > 0 (got {spec.transactions})")
    if total_seconds is None and spec.transactions is None:
        raise PgrigError("give --duration or --transactions (how long to run)")
    _positive(total_seconds, "--duration")
    if spec.warmup_s < 0:
        raise PgrigError(f"--warmup must be >= 0 (got {_fmt(spec.warmup_s)})")
    _positive(spec.rate, "--rate")
    _positive(spec.latency_limit_ms, "--latency-limit")
    if spec.protocol not in PROTOCOLS:
        raise PgrigError(
            f"--protocol must be one of {', '.join(PROTOCOLS)} (got {spec.protocol!r})"
        )
    if spec.max_tries < 0:
        raise PgrigError(f"--max-tries must be >= 0 (got {spec.max_tries})")
    if spec.max_tries == 0 and spec.latency_limit_ms is None and total_seconds is None:
        raise PgrigError("--max-tries 0 (unlimited) needs --duration or --latency-limit")


def validate_scripts(spec: RunSpec) -> None:
    if not spec.scripts:
        raise PgrigError("no scripts to run (give at least one --workload)")
    for s in spec.scripts:
        if (s.builtin is None) == (s.path is None):
            raise PgrigError(f"script {s.name!r} must be either a builtin or a file")
        if s.builtin is not None and s.builtin not in BUILTINS:
            raise PgrigError(
                f"unknown pgbench builtin {s.builtin!r} (choose from {', '.join(BUILTINS)})"
            )
        if s.weight < 0:
            raise PgrigError(f"script {s.name!r}: weight must be >= 0 (got {s.weight})")
        if s.path is not None and "@" in s.path:
            raise PgrigError(
                f"script path {s.path!r} contains '@', which pgbench reads as a weight"
            )
    if sum(s.weight for s in spec.scripts) == 0:
        raise PgrigError("all script weights are 0")
    for name in spec.defines:
        if not name or "=" in name or any(c.isspace() for c in name):
            raise PgrigError(f"--define: invalid variable name {name!r}")


def build_pgbench_command(
    pgbench: str,
    spec: RunSpec,
    log_prefix: str,
    total_seconds: float | None,
    progress: bool = True,
    *,
    pgbench_version_major: int | None = None,
) -> list[str]:
    """The pgbench argv for spec. total_seconds is -T (warm-up + measured window); None means
    -t spec.transactions. An empty log_prefix means no per-transaction log. The version (asked
    from the binary when not given) decides --max-tries / --failures-detailed (15+)."""
    validate(spec, total_seconds)
    major = pgbench_version_major if pgbench_version_major is not None else pgbench_major(pgbench)
    argv = [pgbench, "-n", "-c", str(spec.clients), "-j", str(spec.threads)]
    if total_seconds is not None:
        # -T takes whole seconds: round up, so the measured window always fits in the run
        argv += ["-T", str(math.ceil(total_seconds))]
    else:
        argv += ["-t", str(spec.transactions)]
    if spec.rate is not None:
        argv += ["-R", _fmt(spec.rate)]
    if spec.latency_limit_ms is not None:
        argv += ["-L", _fmt(spec.latency_limit_ms)]
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
    if progress:
        argv += ["-P", "1"]
    argv += list(spec.extra_pgbench_args)
    argv.append(spec.database or DEFAULT_DATABASE)
    return argv


def shell_quote(argv: Sequence[str]) -> str:
    """The exact command line, quoted for a POSIX shell (what the archive shows)."""
    return shlex.join(argv)
