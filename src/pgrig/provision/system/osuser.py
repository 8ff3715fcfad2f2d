"""The OS account that runs PostgreSQL server programs.

PostgreSQL refuses to run as root, so when pgrig runs as root it creates (once) a system user
`pgrig` without a home or login shell and runs initdb, postgres and pg_ctl as that user. When
pgrig is not root, server programs simply run as the invoking user.
"""

from __future__ import annotations

import grp
import os
import pwd
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pgrig.errors import PgrigError
from pgrig.provision.state.environment import without_libpq_vars
from pgrig.provision.system.child_process import die_with_parent

SERVER_USER = "pgrig"


@dataclass(frozen=True)
class ServerUser:
    name: str
    uid: int
    gid: int

    @property
    def is_self(self) -> bool:
        return self.uid == os.geteuid()


def is_root() -> bool:
    return os.geteuid() == 0


@cache
def server_user() -> ServerUser:
    """The account server programs run as (created on first use when root)."""
    if not is_root():
        pw = pwd.getpwuid(os.geteuid())
        return ServerUser(pw.pw_name, pw.pw_uid, pw.pw_gid)
    return _ensure_system_user(SERVER_USER)


def _ensure_system_user(name: str) -> ServerUser:
    try:
        pw = pwd.getpwnam(name)
        return ServerUser(pw.pw_name, pw.pw_uid, pw.pw_gid)
    except KeyError:
        pass
    try:
        grp.getgrnam(name)
        group_args = ["--gid", name]
    except KeyError:
        group_args = ["--user-group"]
    cmd = [
        "useradd",
        "--system",
        "--no-create-home",
        "--home-dir",
        "/nonexistent",
        "--shell",
        "/usr/sbin/nologin",
        *group_args,
        name,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    try:  # another process may have created it at the same moment: that is fine
        pw = pwd.getpwnam(name)
    except KeyError:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise PgrigError(
            f"cannot create the OS user {name!r} that runs PostgreSQL: "
            + (msg[-1] if msg else f"useradd exited {proc.returncode}")
        ) from None
    return ServerUser(pw.pw_name, pw.pw_uid, pw.pw_gid)


def server_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment for server programs: C messages (parsed by pgrig), no PG* leaks."""
    env = without_libpq_vars()
    env.update({"LC_ALL": "C", "LC_MESSAGES": "C", "LANG": "C"})
    if is_root():
        env["HOME"] = "/"
        env["USER"] = env["LOGNAME"] = server_user().name
    if extra:
        env.update(extra)
    return env


def run_as_server(
    cmd: Sequence[str],
    *,
    timeout: float | None = 120,
    cwd: str | Path = "/",
    env: Mapping[str, str] | None = None,
    capture: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run a server program as the server user; output captured as text, never raises on rc."""
    user = group = None  # subprocess's defaults: stay who we are
    extra_groups: list[int] | None = None
    umask = -1
    if is_root():
        u = server_user()
        user, group, extra_groups, umask = u.uid, u.gid, [], 0o077
    try:
        return subprocess.run(
            list(cmd),
            cwd=str(cwd),
            env=server_env(env),
            capture_output=capture,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=timeout,
            check=False,
            user=user,
            group=group,
            extra_groups=extra_groups,
            umask=umask,
            preexec_fn=die_with_parent,  # initdb & co never outlive a killed pgrig
        )
    except subprocess.TimeoutExpired as e:
        raise PgrigError(f"{Path(cmd[0]).name} did not finish within {timeout:.0f} s") from e
    except OSError as e:
        raise PgrigError(f"cannot run {cmd[0]}: {e.strerror or e}") from e


def give_to_server(path: Path, mode: int | None = None) -> None:
    """Make `path` owned by the server user (when root), optionally with `mode`."""
    if is_root():
        u = server_user()
        os.chown(path, u.uid, u.gid)
    if mode is not None:
        path.chmod(mode)
