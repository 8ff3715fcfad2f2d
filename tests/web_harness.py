"""The web app served by uvicorn in a background thread, and Debian's Chromium to look at it.

For the browser tests, scripts/screenshots.py and bench/web_runs_page.py (not part of pgrig).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI

from pgrig.errors import PgrigError


def free_port(first: int, last: int, host: str = "127.0.0.1") -> int:
    """The first port in [first, last] nothing listens on (ranges are assigned per user)."""
    for port in range(first, last + 1):
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    raise PgrigError(f"no free port between {first} and {last} on {host}")


@contextmanager
def running(app: FastAPI, port: int, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve `app` until the block ends; yields the base URL. Always stops the server."""
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"pgrig-web-{port}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 15
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise PgrigError(f"the web server did not start on {host}:{port}")
            time.sleep(0.02)
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


CHROMIUM = "/usr/bin/chromium"  # Debian's package; never a browser downloaded by playwright
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def launch_chromium(playwright: object):  # -> playwright Browser
    """Debian's Chromium through playwright, offline and headless."""
    return playwright.chromium.launch(  # type: ignore[attr-defined]
        executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
    )
