"""The one way pgrig runs a command on another host: asyncssh, host keys verified.

API (async first; the sync wrappers open one connection per call):

    async with open_session(host) as s:             # registry.Host
        r = await s.run(["pgrig", "env", "show", name, "--json"])   # argv, never a string
        r.rc, r.stdout, r.stderr; r.check("env show")  # raises HostCommandFailed (one line)
        r = await s.run(argv, input="secret\n")     # secrets travel on stdin, never in argv
        r = await s.run(argv, root=True)            # as root: directly, or `sudo -n` when the
                                                    # login user is not root
        p = await s.start(argv)                     # a long-running process (RemoteProcess)
        async for line in p.lines(): ...            # its stdout, line by line, as it comes
        await p.signal("TERM"); res = await p.wait()   # p.pid is the remote pid
        await s.put(local, remote, mode=0o644); await s.get(remote, local)   # SFTP
        await s.put_private(passfile, "/tmp/pgrig-run-12", "pgpass")  # dir 0700, file 0600
        info = await s.probe()                      # HostInfo: user, root, sudo, python3...
    run(host, argv, ...) -> Result; put(host, local, remote); probe(host) -> HostInfo
    add_host_key(host) -> str                       # `--accept-new-host-key`: trust on first use

Rules, kept here so that no caller has to remember them:
- Host keys are checked against the host's known_hosts file. A host absent from it is refused
  (HostKeyUnknown) unless `accept_new_host_key=True`, which records the key it was offered;
  a host present with another key is refused always (HostKeyChanged). An absent host whose
  port does not answer is unreachable first (UnreachableUnknownKey: both, the closed port said
  first), since no key can be checked there.
- A command is an argv list, quoted with shlex.join for the remote POSIX shell: names with
  spaces, quotes or `$()` stay data. Passwords go on stdin (`input=`), never in argv or logs.
- Only key (or agent) authentication; pgrig never reads a private key's content, never copies
  one to a host, and never asks for a password.
- Every failure is a HostError with one line naming the host: authentication refused, unknown
  or changed host key, unreachable, connection lost, no python3, not root and no sudo, disk
  full (a command whose stderr says "No space left on device").
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pgrig.errors import PgrigError
from pgrig.hosts.registry import Host


class _OnFirstUse:
    """A module imported when one of its attributes is first used (import_module is
    thread-safe; pgrig's SSH work runs in threads and event loops)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


if TYPE_CHECKING:
    import asyncssh
else:
    # Every environment command can reach a host, but most environments are on this machine:
    # asyncssh's import (0.4 CPU-s, and three ldconfig/gcc runs looking for libnettle) is paid
    # by the first connection, not by every `pgrig env ...`.
    asyncssh = _OnFirstUse("asyncssh")

# Seconds to wait for a host's sshd (PGRIG_SSH_CONNECT_TIMEOUT overrides).
CONNECT_TIMEOUT = float(os.environ.get("PGRIG_SSH_CONNECT_TIMEOUT") or 10)
_T = TypeVar("_T")


class HostError(PgrigError):
    """Something about a host, on one line that names it."""


class AuthRefused(HostError):
    pass


class HostKeyUnknown(HostError):
    pass


class HostKeyChanged(HostError):
    pass


class Unreachable(HostError):
    pass


class UnreachableUnknownKey(Unreachable, HostKeyUnknown):
    """A host whose key is not known and whose port does not answer: both are true, and the
    message leads with the one to fix first (no key can be checked on a closed port)."""


class ConnectionLost(HostError):
    pass


class NoPython(HostError):
    pass


class NotRoot(HostError):
    pass


class DiskFull(HostError):
    pass


class HostCommandFailed(HostError):
    pass


def _where(host: Host) -> str:
    return f"host {host.name} ({host.target})"


def quote(argv: Sequence[str]) -> str:
    """The command line the remote shell receives: every argument one word, nothing expanded."""
    if not argv:
        raise ValueError("empty command")
    return shlex.join(str(a) for a in argv)


@dataclass(frozen=True)
class Result:
    host: str
    argv: tuple[str, ...]
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def check(self, what: str | None = None) -> Result:
        """self when rc is 0, else one line: what failed, where, and the last line of stderr."""
        if self.rc == 0:
            return self
        label = what or self.argv[0]
        if "No space left on device" in self.stderr:
            raise DiskFull(f"host {self.host}: disk full ({label}: No space left on device)")
        last = _last_line(self.stderr) or _last_line(self.stdout) or f"exit status {self.rc}"
        raise HostCommandFailed(f"host {self.host}: {label} failed: {last}")


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


@dataclass(frozen=True)
class HostInfo:
    """What `probe` learns about a host before pgrig uses it."""

    user: str
    uid: int
    sudo: bool
    python3: str | None  # "3.11.2", None when absent
    python3_path: str | None
    os_release: str
    machine: str

    @property
    def root(self) -> bool:
        return self.uid == 0

    def to_json(self) -> dict[str, str | int | bool | None]:
        return {
            "user": self.user,
            "uid": self.uid,
            "root": self.root,
            "sudo": self.sudo,
            "python3": self.python3,
            "python3_path": self.python3_path,
            "os_release": self.os_release,
            "machine": self.machine,
        }


_PROBE = r"""
echo "user=$(id -un)"
echo "uid=$(id -u)"
if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null
then echo sudo=1; else echo sudo=0; fi
p=$(command -v python3 2>/dev/null) && echo "python3_path=$p" &&
  echo "python3=$("$p" -c 'import platform; print(platform.python_version())' 2>/dev/null)"
echo "machine=$(uname -m)"
. /etc/os-release 2>/dev/null && echo "os_release=$PRETTY_NAME"
exit 0
"""


def _parse_probe(text: str) -> HostInfo:
    kv = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    return HostInfo(
        user=kv.get("user", "?"),
        uid=int(kv.get("uid", "-1") or -1),
        sudo=kv.get("sudo") == "1",
        python3=kv.get("python3") or None,
        python3_path=kv.get("python3_path") or None,
        os_release=kv.get("os_release", ""),
        machine=kv.get("machine", ""),
    )


def require_usable(host: Host, info: HostInfo, *, min_python: tuple[int, int] = (3, 8)) -> None:
    """One line when the host cannot serve pgrig: no python3, or neither root nor sudo."""
    if not info.python3:
        raise NoPython(f"{_where(host)}: no python3 on the host (pgrig needs python3 >= 3.8)")
    version = tuple(int(x) for x in info.python3.split(".")[:2])
    if version < min_python:
        raise NoPython(f"{_where(host)}: python3 is {info.python3}, pgrig needs >= 3.8")
    if not info.root and not info.sudo:
        raise NotRoot(f"{_where(host)}: user {info.user} is not root and has no passwordless sudo")


class RemoteProcess:
    """A process started by Session.start: stdout streamed by line, stderr kept (last 64 KiB)."""

    def __init__(
        self, session: Session, argv: Sequence[str], proc: asyncssh.SSHClientProcess[str], pid: int
    ) -> None:
        self._session = session
        self.argv = tuple(argv)
        self._proc = proc
        self.pid = pid
        self._stderr: list[str] = []
        self._stderr_size = 0
        self._drain = asyncio.ensure_future(self._drain_stderr())

    async def _drain_stderr(self) -> None:
        with contextlib.suppress(asyncssh.Error, OSError):
            async for chunk in self._proc.stderr:
                self._stderr.append(chunk)
                self._stderr_size += len(chunk)
                while self._stderr_size > 65536 and len(self._stderr) > 1:
                    self._stderr_size -= len(self._stderr.pop(0))

    async def lines(self, whole: bool = False) -> AsyncIterator[str]:
        """stdout, one line at a time (without its newline), until the process closes it.

        whole: every line the program writes ends with a newline (a protocol's frames), so a
        stream that ends inside one was cut (a killed session), not finished: ConnectionLost,
        never the torn piece (which a reader would take for a bad frame)."""
        try:
            async for line in self._proc.stdout:
                if not line:
                    break  # end of the stream (an empty line still holds its newline)
                if whole and not line.endswith("\n"):
                    raise ConnectionLost(
                        f"{_where(self._session.host)}: connection lost (the output ended "
                        f"inside a line, {len(line)} characters into it)"
                    )
                yield line.rstrip("\n")
        except (asyncssh.ConnectionLost, asyncssh.DisconnectError, OSError) as e:
            raise ConnectionLost(f"{_where(self._session.host)}: connection lost ({e})") from e

    async def write(self, data: str) -> None:
        self._proc.stdin.write(data)

    async def close_stdin(self) -> None:
        self._proc.stdin.write_eof()

    async def signal(self, name: str = "TERM") -> None:
        """kill -NAME pid on the host (over a second channel: sshd need not relay signals)."""
        if not name.isalnum():
            raise ValueError(f"bad signal name {name!r}")
        await self._session.run(["kill", f"-{name}", str(self.pid)], root=self._session.as_root)

    async def wait(self, timeout: float | None = None) -> Result:
        try:
            done = await asyncio.wait_for(self._proc.wait(check=False), timeout)
        except (asyncssh.ConnectionLost, asyncssh.DisconnectError, OSError) as e:
            raise ConnectionLost(f"{_where(self._session.host)}: connection lost ({e})") from e
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._drain), 2)
        out = done.stdout if isinstance(done.stdout, str) else ""
        rc = done.exit_status if done.exit_status is not None else 255
        return Result(self._session.host.name, self.argv, rc, out, "".join(self._stderr))

    def stderr_text(self) -> str:
        return "".join(self._stderr)


class Session:
    """One SSH connection to a host; every command and copy is a channel on it."""

    def __init__(self, host: Host, conn: asyncssh.SSHClientConnection, user_is_root: bool) -> None:
        self.host = host
        self.conn = conn
        self._user_is_root = user_is_root
        self.as_root = False  # set by start(root=True): signals then go through sudo too

    def _argv(self, argv: Sequence[str], root: bool) -> list[str]:
        if root and not self._user_is_root:
            return ["sudo", "-n", "--", *argv]
        return list(argv)

    async def run(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        root: bool = False,
        timeout: float | None = None,
    ) -> Result:
        full = self._argv(argv, root)
        try:
            done = await asyncio.wait_for(
                self.conn.run(quote(full), input=input, check=False), timeout
            )
        except TimeoutError as e:
            raise HostError(
                f"{_where(self.host)}: {argv[0]} did not finish within {timeout:.0f} s"
            ) from e
        except (asyncssh.ConnectionLost, asyncssh.DisconnectError, OSError) as e:
            raise ConnectionLost(f"{_where(self.host)}: connection lost ({e})") from e
        rc = done.exit_status if done.exit_status is not None else 255
        out = done.stdout if isinstance(done.stdout, str) else ""
        err = done.stderr if isinstance(done.stderr, str) else ""
        if root and not self._user_is_root and rc == 1 and "sudo:" in err:
            raise NotRoot(f"{_where(self.host)}: sudo refused ({_last_line(err)})")
        return Result(self.host.name, tuple(argv), rc, out, err)

    async def start(
        self, argv: Sequence[str], *, root: bool = False, errors: str = "strict"
    ) -> RemoteProcess:
        """Start a long-running process; its first stdout line (its pid) is consumed here.
        `errors="replace"`: output that is not UTF-8 (a log's) is read, not refused."""
        wrapped = ["sh", "-c", 'echo "$$"; exec "$@"', "sh", *argv]
        self.as_root = self.as_root or root
        try:
            proc = await self.conn.create_process(quote(self._argv(wrapped, root)), errors=errors)
            first = await asyncio.wait_for(proc.stdout.readline(), CONNECT_TIMEOUT)
        except (asyncssh.ConnectionLost, asyncssh.DisconnectError, OSError) as e:
            raise ConnectionLost(f"{_where(self.host)}: connection lost ({e})") from e
        text = first.strip() if isinstance(first, str) else ""
        if not text.isdigit():
            err = ""
            with contextlib.suppress(Exception):
                err = await asyncio.wait_for(proc.stderr.read(), 2)
            raise HostCommandFailed(
                f"host {self.host.name}: {argv[0]} did not start: {_last_line(str(err)) or text}"
            )
        return RemoteProcess(self, argv, proc, int(text))

    async def put(self, local: str | Path, remote: str, *, mode: int | None = None) -> None:
        try:
            async with self.conn.start_sftp_client() as sftp:
                await sftp.put(str(local), remote, preserve=False)
                if mode is not None:
                    await sftp.chmod(remote, mode)
        except asyncssh.SFTPFailure as e:
            if "space" in str(e).lower():
                raise DiskFull(f"host {self.host.name}: disk full (copying to {remote})") from e
            raise HostError(f"host {self.host.name}: copying to {remote} failed: {e}") from e
        except asyncssh.SFTPError as e:
            raise HostError(f"host {self.host.name}: copying to {remote} failed: {e}") from e

    async def put_private(self, local: str | Path, remote_dir: str, name: str) -> str:
        """A copy only its owner can read (a passfile): into `remote_dir`, created 0700 first
        so that the file is never readable by others, even before its chmod 0600."""
        (await self.run(["mkdir", "-p", "-m", "0700", remote_dir])).check("mkdir")
        (await self.run(["chmod", "0700", remote_dir])).check("chmod")
        dest = f"{remote_dir.rstrip('/')}/{name}"
        await self.put(local, dest, mode=0o600)
        return dest

    async def get(self, remote: str, local: str | Path) -> None:
        try:
            async with self.conn.start_sftp_client() as sftp:
                await sftp.get(remote, str(local))
        except asyncssh.SFTPError as e:
            raise HostError(f"host {self.host.name}: copying {remote} failed: {e}") from e

    async def probe(self) -> HostInfo:
        r = await self.run(["sh", "-c", _PROBE])
        return _parse_probe(r.stdout)


def _known_keys(host: Host) -> list[asyncssh.SSHKey]:
    """The keys known_hosts holds for this host (empty when the file or the entry is absent)."""
    f = host.known_hosts_path
    if not f.exists():
        return []
    try:
        known = asyncssh.read_known_hosts(str(f))
    except (ValueError, OSError) as e:
        raise HostError(f"known_hosts file {f} cannot be read: {e}") from e
    return list(known.match(host.address, host.address, host.port)[0])


async def connect(
    host: Host, *, accept_new_host_key: bool = False, timeout: float = CONNECT_TIMEOUT
) -> asyncssh.SSHClientConnection:
    """A connection whose host key was verified (or, only when asked, recorded on first use)."""
    known = _known_keys(host)
    tofu = not known and accept_new_host_key
    if not known and not tofu:
        # a closed port or a silent host is the cause to say first: "unknown host key" would
        # send the user to --accept-new-host-key, which cannot help it
        why = await _unanswered(host, timeout)
        if why is not None:
            raise UnreachableUnknownKey(
                f"{_where(host)}: unreachable ({why}); its host key is not known either (not "
                f"in {host.known_hosts_path}): once it answers, check its fingerprint and add "
                "it, or pass --accept-new-host-key"
            )
        raise HostKeyUnknown(
            f"{_where(host)}: unknown host key (not in {host.known_hosts_path}); check its "
            "fingerprint and add it, or pass --accept-new-host-key"
        )
    options: dict[str, Any] = {
        "username": host.user,
        "port": host.port,
        "known_hosts": None if tofu else str(host.known_hosts_path),
        "connect_timeout": timeout,
        "config": None,
        "password_auth": False,
        "kbdint_auth": False,
        "keepalive_interval": 15,
        "keepalive_count_max": 4,
    }
    if host.identity:
        if not Path(host.identity).exists():
            raise AuthRefused(f"{_where(host)}: identity file {host.identity} does not exist")
        options["client_keys"] = [host.identity]
        options["agent_path"] = None
    try:
        conn = await asyncssh.connect(host.address, **options)
    except asyncssh.HostKeyNotVerifiable as e:
        raise HostKeyChanged(
            f"{_where(host)}: HOST KEY CHANGED (it does not match {host.known_hosts_path}); "
            "refusing to connect: someone may be in the middle, or the host was reinstalled"
        ) from e
    except asyncssh.PermissionDenied as e:
        key = host.identity or "the agent / ~/.ssh keys"
        raise AuthRefused(f"{_where(host)}: authentication refused (key: {key})") from e
    except asyncssh.KeyImportError as e:
        raise AuthRefused(f"{_where(host)}: the identity cannot be used: {e}") from e
    except (asyncssh.DisconnectError, asyncssh.ConnectionLost) as e:
        raise Unreachable(f"{_where(host)}: unreachable (ssh: {e})") from e
    except (TimeoutError, OSError) as e:
        raise Unreachable(f"{_where(host)}: unreachable ({_why_unreachable(e)})") from e
    if tofu:
        _record_host_key(host, conn.get_server_host_key())
    return conn


async def _unanswered(host: Host, timeout: float) -> str | None:
    """Why the host's SSH port does not take a TCP connection (None: it does); nothing is
    said over it, so no key is offered or trusted."""
    try:
        _reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host.address, host.port), timeout
        )
    except (TimeoutError, OSError) as e:
        return _why_unreachable(e)
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return None


def _why_unreachable(e: BaseException) -> str:
    if isinstance(e, ConnectionRefusedError):
        return "connection refused: no sshd on that port"
    if isinstance(e, TimeoutError):
        return "no answer: timed out"
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e) or type(e).__name__


def _record_host_key(host: Host, key: asyncssh.SSHKey | None) -> None:
    if key is None:
        return
    f = host.known_hosts_path
    f.parent.mkdir(parents=True, exist_ok=True)
    name = host.address if host.port == 22 else f"[{host.address}]:{host.port}"
    line = f"{name} {key.export_public_key('openssh').decode().strip()}\n"
    with open(f, "a") as out:
        out.write(line)


@contextlib.asynccontextmanager
async def open_session(
    host: Host, *, accept_new_host_key: bool = False, timeout: float = CONNECT_TIMEOUT
) -> AsyncIterator[Session]:
    conn = await connect(host, accept_new_host_key=accept_new_host_key, timeout=timeout)
    try:
        uid = await conn.run("id -u", check=False)
        out = uid.stdout if isinstance(uid.stdout, str) else ""
        yield Session(host, conn, out.strip() == "0")
    finally:
        conn.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(conn.wait_closed(), 5)


def _sync(factory: Callable[[], Awaitable[_T]]) -> _T:
    async def main() -> _T:
        return await factory()

    return asyncio.run(main())


def run(
    host: Host,
    argv: Sequence[str],
    *,
    input: str | None = None,
    root: bool = False,
    timeout: float | None = None,
) -> Result:
    async def go() -> Result:
        async with open_session(host) as s:
            return await s.run(argv, input=input, root=root, timeout=timeout)

    return _sync(go)


def put(host: Host, local: str | Path, remote: str, *, mode: int | None = None) -> None:
    async def go() -> None:
        async with open_session(host) as s:
            await s.put(local, remote, mode=mode)

    _sync(go)


def probe(host: Host, *, accept_new_host_key: bool = False) -> HostInfo:
    async def go() -> HostInfo:
        async with open_session(host, accept_new_host_key=accept_new_host_key) as s:
            return await s.probe()

    return _sync(go)


def fingerprint_line(host: Host) -> str:
    """The recorded key of the host as known_hosts holds it (for `host list`)."""
    keys = _known_keys(host)
    return keys[0].get_fingerprint("sha256") if keys else "unknown"
