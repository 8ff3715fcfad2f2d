"""Driving the pgrig installed on a host (`pgrig host provision`) over SSH.

    forward(host, ["env", "show", "lab"], stdin=None) -> int
        runs the host's pgrig with that argv, its stdout and stderr streamed to ours as they
        come, and returns its exit status (Ctrl-C here sends SIGTERM there: the remote pgrig
        cleans up as it does for Ctrl-C)
    run_json(host, ["env", "show", "lab", "--json"], input=None) -> Any
        the parsed JSON the host's pgrig printed; its one-line error otherwise
    put_temp(host, local) -> remote path of a copy (for files named on the command line)
    file_size(host, path, what) / read_since(host, path, offset, feed, what)
        a log that stays on its host: its size now, and what was written since, streamed line
        by line (the pooler's log, the server's log of an environment there)

The remote pgrig runs as root (directly or with `sudo -n`), with its home /var/lib/pgrig.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.hosts import ssh
from pgrig.hosts.registry import Host
from pgrig.request.values import ascii_digits

REMOTE_PGRIG = "/opt/pgrig/venv/bin/pgrig"
CLEANUP_S = 30.0  # how long a forwarded command interrupted here is given to clean up there
REMOTE_HOME = "/var/lib/pgrig"  # the home of the pgrig that `pgrig host provision` installs


def command(argv: Sequence[str]) -> list[str]:
    cols = shutil.get_terminal_size((100, 24)).columns
    return ["env", f"COLUMNS={cols}", f"PGRIG_HOME={REMOTE_HOME}", REMOTE_PGRIG, *argv]


def _not_provisioned(host: Host, rc: int, stderr: str) -> None:
    if rc == 127 or (REMOTE_PGRIG in stderr and "No such file" in stderr):
        raise PgrigError(
            f"host {host.name}: pgrig is not installed there (run "
            f"`{pgrig_command('host', 'provision', host.name)}`)"
        )


async def _forward(host: Host, argv: Sequence[str], stdin: bytes | None) -> int:
    async with ssh.open_session(host) as s:
        wrapped = s._argv(["sh", "-c", 'echo "$$"; exec "$@"', "sh", *command(argv)], True)
        proc = await s.conn.create_process(ssh.quote(wrapped), encoding=None)
        first = await proc.stdout.readline()
        pid = first.strip().decode() if isinstance(first, bytes) else ""
        if stdin is not None:
            proc.stdin.write(stdin)
        proc.stdin.write_eof()
        err_tail: list[bytes] = []

        async def pump(src: Any, dst: Any, keep: bool) -> None:
            while True:
                chunk = await src.read(65536)
                if not chunk:
                    return
                dst.write(chunk)
                dst.flush()
                if keep:
                    err_tail.append(chunk)
                    del err_tail[:-8]

        try:
            await asyncio.gather(
                pump(proc.stdout, sys.stdout.buffer, False),
                pump(proc.stderr, sys.stderr.buffer, True),
            )
            done = await proc.wait(check=False)
        except asyncio.CancelledError:
            if pid.isdigit():
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        asyncio.shield(s.run(["kill", "-TERM", pid], root=True)), 5
                    )
                # its cleanup done before this one ends: the next command sees the host clean
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(proc.wait(check=False)), CLEANUP_S)
            raise
        rc = done.exit_status if done.exit_status is not None else 255
        _not_provisioned(host, rc, b"".join(err_tail).decode(errors="replace"))
        return rc


def forward(host: Host, argv: Sequence[str], stdin: bytes | None = None) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    return asyncio.run(_forward(host, argv, stdin))


def run(
    host: Host, argv: Sequence[str], *, input: str | None = None, timeout: float | None = None
) -> ssh.Result:
    r = ssh.run(host, command(argv), input=input, root=True, timeout=timeout)
    _not_provisioned(host, r.rc, r.stderr)
    return r


def run_json(host: Host, argv: Sequence[str], *, input: str | None = None) -> Any:
    r = run(host, argv, input=input)
    if r.rc != 0:
        last = r.stderr.strip().splitlines()[-1:] or [f"exit status {r.rc}"]
        raise PgrigError(f"host {host.name}: {last[0].removeprefix('error: ')}")
    try:
        return json.loads(r.stdout)
    except ValueError as e:
        raise PgrigError(f"host {host.name}: pgrig printed no JSON for {argv[:2]}") from e


def put_temp(host: Host, local: Path) -> str:
    """A copy of a local file on the host (under /tmp/pgrig-upload-*), readable by root."""
    if not local.is_file():
        raise PgrigError(f"no file {local}")
    remote_dir = f"/tmp/pgrig-upload-{os.getpid()}"

    async def go() -> str:
        async with ssh.open_session(host) as s:
            (await s.run(["mkdir", "-p", "-m", "0700", remote_dir])).check("mkdir")
            dest = f"{remote_dir}/{local.name}"
            await s.put(local, dest, mode=0o644)
            return dest

    return asyncio.run(go())


def run_recorded(name: str, what: str, argv: list[str]) -> dict[str, Any]:
    """`pgrig host check|tune|restore --on NAME`: the host's pgrig runs `argv` (--json); its
    answer is recorded for that host: <home>/hosts/<name>/host-<what>.json (the last) and
    host-<what>.jsonl (every one)."""
    import time

    from pgrig.hosts import registry

    doc: dict[str, Any] = run_json(registry.get(name), argv)
    d = registry.state_dir(name)
    d.mkdir(parents=True, exist_ok=True)
    entry = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": name, **doc}
    (d / f"host-{what}.json").write_text(json.dumps(entry, indent=2) + "\n")
    with open(d / f"host-{what}.jsonl", "a") as out:
        out.write(json.dumps(entry) + "\n")
    return doc


# --- a log that stays on its host ---------------------------------------------------------------

LOG_READ_TIMEOUT_S = 120.0  # the segment of one run, streamed after it: bounded in time too


def file_size(host: Host, path: str, what: str) -> int:
    """The size of `path` on `host` now (0: no such file yet); a HostError (one line naming
    the host) when it cannot be asked."""
    r = ssh.run(host, ["stat", "-c", "%s", "--", path], root=True, timeout=30)
    if r.rc != 0 and "No such file" in r.stderr:
        return 0
    size = r.check(f"stat of {what}").stdout.strip()
    if not ascii_digits(size):  # str.isdigit says yes to "²", which int() then refuses
        raise PgrigError(f"host {host.name}: stat of {what} printed {size[:40]!r}")
    return int(size)


def read_since(
    host: Host,
    path: str,
    offset: int,
    feed: Callable[[str], None],
    what: str,
    timeout: float = LOG_READ_TIMEOUT_S,
) -> str | None:
    """What was written to `path` on `host` from byte `offset`, streamed line by line into
    `feed` (the whole segment never sits in memory nor on disk here). A read that times out or
    loses its connection keeps what came: returns why it stopped early (None: read to the
    end)."""
    argv = ["tail", "-c", f"+{offset + 1}", "--", path]

    async def read() -> None:
        async with ssh.open_session(host) as session:
            proc = await session.start(argv, root=True, errors="replace")
            async for line in proc.lines():
                feed(line)
            done = await proc.wait(timeout=10)
            if done.rc != 0 and "No such file" not in done.stderr:
                done.check(f"reading {what}")

    async def bounded() -> str | None:
        try:
            await asyncio.wait_for(read(), timeout)
        except TimeoutError:
            return f"reading it from host {host.name} took over {timeout:.0f} s"
        except ssh.ConnectionLost as e:
            return str(e)
        return None

    return asyncio.run(bounded())
