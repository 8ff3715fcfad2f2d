"""The load agent on a registered host, over SSH: hosts/ssh.py's verified session, driven from
pgrig's threads.

hosts/ssh.py is asyncio; the run's coordinator is threads. Each transport owns one event loop
in a thread of its own: the agent's stdout lines go into a queue the client's reader thread
takes from, and writes are handed to the loop. Every wait on the network is bounded, so a host
cut off mid-run costs seconds, not the SSH keepalive's minute.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Iterator
from typing import Any

from pgrig.errors import PgrigError
from pgrig.hosts import registry, ssh
from pgrig.load.remote.agent_program import agent_argv

_END = object()
CALL_TIMEOUT_S = 10.0


class SshTransport:
    def __init__(self, host: registry.Host) -> None:
        self.name = host.name
        self.host = host
        self._lines: queue.Queue[Any] = queue.Queue()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._session_cm: Any = None
        self._session: ssh.Session | None = None
        self._proc: ssh.RemoteProcess | None = None
        self._pump: Any = None
        self._failure = ""
        self._call(self._open(), ssh.CONNECT_TIMEOUT + CALL_TIMEOUT_S)

    def _call(self, coro: Any, timeout: float = CALL_TIMEOUT_S) -> Any:
        return asyncio.run_coroutine_threadsafe(asyncio.wait_for(coro, timeout), self._loop).result(
            timeout + 1.0
        )

    async def _open(self) -> None:
        self._session_cm = ssh.open_session(self.host)
        self._session = await self._session_cm.__aenter__()
        self._proc = await self._session.start(agent_argv())
        self._pump = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self._proc is not None
        try:
            async for line in self._proc.lines(whole=True):
                self._lines.put(line)
        except ssh.HostError as e:
            self._failure = str(e)
        finally:
            self._lines.put(_END)

    # --- Transport ------------------------------------------------------------------------------
    def write(self, data: str) -> None:
        proc = self._proc
        if proc is None:
            raise OSError("no session")
        try:
            self._call(proc.write(data))
        except Exception as e:
            raise OSError(f"cannot write to host {self.name}: {e}") from None

    def lines(self) -> Iterator[str | bytes]:
        while True:
            item = self._lines.get()
            if item is _END:
                if self._failure:
                    raise OSError(self._failure)
                return
            yield item

    def close(self, timeout: float) -> int | None:
        rc: int | None = None
        proc = self._proc
        if proc is not None and timeout > 1.0:  # else: the host is lost, nothing would answer
            with contextlib.suppress(Exception):
                self._call(proc.close_stdin(), 5.0)
            try:
                rc = self._call(proc.wait(), timeout).rc
            except Exception:
                with contextlib.suppress(Exception):  # ends pgbench too (the agent's SIGTERM)
                    self._call(proc.signal("TERM"), 5.0)
        with contextlib.suppress(Exception):
            if self._session_cm is not None:
                self._call(self._session_cm.__aexit__(None, None, None), 3.0)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        return rc

    def describe_failure(self) -> str:
        if self._failure:
            return self._failure
        if self._proc is not None:
            return self._proc.stderr_text().strip()[-500:]
        return ""


def open_agent(name: str) -> SshTransport:
    """The agent started on registered host `name` (one clear line when that fails)."""
    host = registry.get(name)
    try:
        return SshTransport(host)
    except PgrigError:
        raise
    except TimeoutError:
        raise PgrigError(
            f"host {name} ({host.target}): the load agent did not start in time"
        ) from None
