"""Where `pgrig serve` listens: whether an address is this machine's loopback, and a bind tried
before starting (uvicorn only logs a failed bind and exits)."""

from __future__ import annotations

import ipaddress

from pgrig.errors import PgrigError


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_can_listen(host: str, port: int) -> None:
    """uvicorn only logs a failed bind and exits; say it on one line before starting instead."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise PgrigError(f"--host {host!r} is not an address this machine can use: {e}") from e
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as e:
            raise PgrigError(f"cannot listen on {host}:{port}: {e.strerror or e}") from e
