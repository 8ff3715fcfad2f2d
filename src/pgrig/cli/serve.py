"""`pgrig serve`: the results web UI over the archive (read-only, GET only)."""

from __future__ import annotations

import ipaddress
from typing import Annotated

import typer

from pgrig.cli.common import ArchiveOpt, PgrigError, err_console


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_can_listen(host: str, port: int) -> None:
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


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        host: Annotated[
            str, typer.Option("--host", help="Address to listen on (loopback by default).")
        ] = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8765,
        archive: ArchiveOpt = None,
    ) -> None:
        """Browse runs, compare them and look at studies in a web browser."""
        if not 1 <= port <= 65535:
            raise PgrigError(f"--port must be between 1 and 65535, not {port}")
        import uvicorn

        from pgrig.web.app import create_app

        _check_can_listen(host, port)
        web = create_app(archive)  # opens the archive now: a bad URL fails before listening
        console = err_console()
        if not _is_loopback(host):
            console.print(
                f"[yellow]warning:[/yellow] listening on {host}: the UI has no authentication; "
                "anyone who can reach this address can read the archive"
            )
        shown = f"[{host}]" if ":" in host else host
        console.print(f"serving {web.state.archive.url} at http://{shown}:{port}/ (Ctrl+C stops)")
        try:
            uvicorn.run(web, host=host, port=port, log_level="warning", access_log=False)
        except OSError as e:
            raise PgrigError(f"cannot listen on {host}:{port}: {e.strerror or e}") from e
        finally:
            web.state.archive.close()
