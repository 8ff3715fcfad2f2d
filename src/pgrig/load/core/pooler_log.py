"""The pooler's log over a run, kept as the artifact pooler.log wherever pgbouncer runs: on
this machine (its log files) or on a host of its own (streamed over SSH after the run: the log
stays there, a copy of the run's segment comes here). Either way it is kept bounded by the rule
the server's log is kept by (insights/log_excerpt.py: head, tail, the errors and warnings and
other lines between up to a budget, what was left out counted and said where it was; pgbouncer's
lines classified by their own severity word), and extra["pooler"]["log"] says what was kept or
why nothing was.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path

from pgrig.errors import PgrigError, first_line
from pgrig.insights.log_excerpt import LogExcerpt
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import PoolerLogDoc
from pgrig.record.run import RunRecord

ARTIFACT = "pooler.log"
# "2026-11-26 01:00:00.000 UTC [7] WARNING C-0x55d: pgrig/pgrig_pool@10.0.0.1:4242 ..."
_SEVERITY = re.compile(r"\] (ERROR|FATAL|PANIC|WARNING|LOG|NOISE|DEBUG) ")
_KINDS = {"ERROR": "error", "FATAL": "error", "PANIC": "error", "WARNING": "warning"}


def pgbouncer_kind(line: str) -> str:
    """A pgbouncer log line's kind for the excerpt: error, warning, log, or other."""
    m = _SEVERITY.search(line)
    return _KINDS.get(m.group(1), "log") if m else "other"


@dataclass(frozen=True)
class LogMark:
    """Where the pooler's log ended when the run began (or why that could not be known)."""

    offsets: tuple[int, ...]
    where: str  # "here", or the pooler's host
    error: str | None = None


def mark(env: Environment, via: str) -> LogMark | None:
    """The log's end before the load starts (None: the run does not go through a pooler)."""
    from pgrig.provision import pooler
    from pgrig.provision.pooler import remote

    if via == "direct" or pooler.config_of(env) is None:
        return None
    where = (remote.pooler_host(env) or "?") if remote.is_remote(env) else "here"
    try:
        return LogMark(tuple(pooler.log_offsets(env)), where)
    except PgrigError as e:
        return LogMark((), where, first_line(e))


def keep(rec: RunRecord, env: Environment, start: LogMark | None, art_dir: Path) -> None:
    """The run's segment of the pooler's log into art_dir/pooler.log (rec.artifacts), and what
    was kept into rec.extra["pooler"]["log"]. Never raises: the log is not the run."""
    if start is None:
        return
    from pgrig.provision import pooler

    doc = rec.extra.setdefault("pooler", {})
    if start.error is not None:
        doc["log"] = _not_collected(start, start.error)
        return
    path = art_dir / ARTIFACT
    excerpt = LogExcerpt(path, classify=pgbouncer_kind)
    try:
        cut = pooler.log_since(env, list(start.offsets), excerpt.line)
    except (PgrigError, OSError) as e:  # the host went away after the run: what came is kept
        cut = first_line(e)
    try:
        summary = excerpt.close()
        if summary["written_bytes"] and cut is not None:
            with path.open("a") as out:
                out.write(f"[pgrig] the log was not read to its end: {cut}\n")
    except OSError as e:  # a full disk: the run keeps its figures, the log is said lost
        with contextlib.suppress(OSError):
            path.unlink()
        doc["log"] = PoolerLogDoc(
            collected=False, where=start.where, reason=f"not kept: {first_line(e)}"
        )
        return
    if not summary["written_bytes"]:
        with contextlib.suppress(OSError):
            path.unlink()  # nothing logged: no empty artifact
        if cut is not None:
            doc["log"] = _not_collected(start, cut)
            return
    else:
        rec.artifacts[ARTIFACT] = ARTIFACT
    truncated = bool(summary["dropped_bytes"]) or cut is not None
    doc["log"] = PoolerLogDoc(collected=True, where=start.where, **summary, truncated=truncated)
    if cut is not None:
        doc["log"]["cut"] = cut


def _not_collected(start: LogMark, why: str) -> PoolerLogDoc:
    return PoolerLogDoc(collected=False, where=start.where, reason=f"not collected: {why}")
