"""`pgrig serve`: the results web UI over the archive (read-only, GET only)."""

from __future__ import annotations

from typing import Annotated

import typer

from pgrig.cli.common import ArchiveOpt, PgrigError, err_console


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

        from pgrig.web import listening
        from pgrig.web.app import create_app

        listening.check_can_listen(host, port)
        web = create_app(archive)  # opens the archive now: a bad URL fails before listening
        console = err_console()
        if not listening.is_loopback(host):
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
