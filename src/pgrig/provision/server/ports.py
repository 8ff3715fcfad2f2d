"""TCP ports of managed servers and poolers: which are free, and the first free one.

A port is taken when an environment (running or not) or an environment's pooler owns it,
when a PostgreSQL socket lock for it exists in a usual socket directory, or when something
listens on 127.0.0.1. PGRIG_PORT_RANGE=lo-hi narrows automatic choice (a range per test run).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from pathlib import Path

from pgrig.errors import PgrigError
from pgrig.provision.state.environment import Environment
from pgrig.request.vocabulary import PORT_RANGE

DEFAULT_PORT_RANGE = (5433, 5999)


def port_problem(port: int, ignore_env: str | None = None) -> str | None:
    """Why `port` cannot be used, or None when it is free."""
    lo, hi = PORT_RANGE  # the requests' (a port read back from env.json is not one)
    if not lo <= port <= hi:
        return f"port {port} is outside {lo}..{hi}"
    for other in Environment.all():
        if other.name != ignore_env and other.managed and other.port == port:
            return f"port {port} is used by environment {other.name!r}"
        if other.pooler and other.pooler.get("port") == port:  # even while it is stopped
            return f"port {port} is used by the pooler of environment {other.name!r}"
        if other.name != ignore_env and any(r.get("port") == port for r in other.replicas):
            return f"port {port} is used by a replica of environment {other.name!r}"
    for d in ("/tmp", "/var/run/postgresql", "/run/postgresql"):
        if Path(d, f".s.PGSQL.{port}.lock").exists():
            return f"port {port} is in use (a PostgreSQL socket lock exists in {d})"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the postmaster does
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return f"port {port} is in use on 127.0.0.1"
    return None


def port_range() -> tuple[int, int]:
    """DEFAULT_PORT_RANGE, or PGRIG_PORT_RANGE=lo-hi when it is a valid range."""
    raw = os.environ.get("PGRIG_PORT_RANGE", "")
    try:
        lo, hi = (int(x) for x in raw.split("-", 1))
        if PORT_RANGE[0] <= lo <= hi <= PORT_RANGE[1]:
            return lo, hi
    except ValueError:
        pass
    return DEFAULT_PORT_RANGE


def free_port(exclude: Iterable[int] = ()) -> int:
    """The first port of the range that port_problem() finds nothing against."""
    lo, hi = port_range()
    skip = set(exclude)
    for port in range(lo, hi + 1):
        if port not in skip and port_problem(port) is None:
            return port
    raise PgrigError(f"no free port in {lo}..{hi} (set one with --port)")


def pooler_ports(except_env: str) -> set[int]:
    """Ports of the poolers of every other environment (running or not)."""
    return {
        int(str(e.pooler["port"]))
        for e in Environment.all()
        if e.name != except_env and e.pooler and e.pooler.get("port")
    }
