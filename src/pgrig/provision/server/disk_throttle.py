"""Disk limits in force: the kernel's block I/O throttle on a server's process tree.

An environment with a disk limit (request/disk_limit.py) runs its postmaster, and so every
backend and worker it forks, in a cgroup of its own: `<hierarchy>/pgrig/<name>.<digest>` (the
digest of the environment's directory keeps two pgrig homes with the same environment name
apart). The limits are written per block device that holds the data directory or pg_wal:
- cgroup v2, where the v2 hierarchy has the io controller: `io.max`
  ("254:0 rbps=max wbps=max riops=max wiops=300");
- cgroup v1, where the blkio controller is mounted as a v1 hierarchy:
  `blkio.throttle.{read,write}_{iops,bps}_device` ("254:0 300").
The throttle takes whole disks (device-mapper devices are whole disks): a partition is mapped
to its disk through /sys/dev/block. Every start re-applies the limit (a new postmaster pid);
`in_force` reads the files and the cgroup's members back, which a run records.

What v1 does not throttle: buffered writeback that the kernel's flusher threads start (dirty
page-cache pages older than vm.dirty_expire_centisecs, or above vm.dirty_background_ratio) is
issued by threads outside the cgroup. Block I/O a server process issues itself is throttled:
WAL flushes (fdatasync, O_DSYNC), the checkpointer's and bgwriter's writeback (sync_file_range
through checkpoint_flush_after / bgwriter_flush_after, then fsync), reads that miss the page
cache. So data-file writes a backend leaves in the page cache (backend_flush_after = 0 by
default) escape a v1 limit when the flusher writes them before a checkpoint does
(docs/reports/disk-limit.md: a CHECKPOINT is slowed by a wbps limit, WAL flushes by wiops). v2
attributes writeback to the cgroup that dirtied the pages (with the memory
controller), so it throttles both.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pgrig.provision.server.affinity import process_tree
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import DiskDeviceDoc, DiskLimitDoc
from pgrig.request.disk_limit import KEYS, DiskLimit, DiskLimitError

V1_FILES = {
    "riops": "blkio.throttle.read_iops_device",
    "wiops": "blkio.throttle.write_iops_device",
    "rbps": "blkio.throttle.read_bps_device",
    "wbps": "blkio.throttle.write_bps_device",
}
V2_FILE = "io.max"
NOT_THROTTLED_V1 = (
    "cgroup v1 does not throttle buffered writeback started by the kernel's flusher threads: "
    "data-file pages a backend leaves dirty in the page cache (backend_flush_after = 0) reach "
    "the disk unlimited when the flusher writes them before a checkpoint does; WAL flushes, "
    "the checkpointer's and bgwriter's own writeback (sync_file_range, fsync) and reads that "
    "miss the page cache are throttled"
)
NOT_THROTTLED_V2 = (
    "reads served by the page cache do no block I/O and are not limited; writeback is "
    "attributed to the cgroup (cgroup v2 with the memory controller)"
)


@dataclass(frozen=True)
class Kernel:
    """Where the kernel's files are: tests point these at a fake tree."""

    proc: Path = Path("/proc")
    sys_block: Path = Path("/sys/dev/block")
    euid: Callable[[], int] = os.geteuid
    device_number: Callable[[Path], int] = field(default=lambda p: os.stat(p).st_dev)
    write: Callable[[Path, str], None] = field(default=lambda p, t: write_file(p, t))
    rmdir: Callable[[Path], None] = Path.rmdir  # a cgroup goes with its files, when empty


KERNEL = Kernel()


@dataclass(frozen=True)
class Mount:
    point: Path
    fstype: str
    source: str
    options: frozenset[str]
    device: str  # "major:minor" of the mounted file system


@dataclass(frozen=True)
class Hierarchy:
    """The cgroup hierarchy that throttles block I/O here."""

    version: int  # 1 (blkio) or 2 (io)
    mount: Path

    @property
    def mechanism(self) -> str:
        return "cgroup v2 io.max" if self.version == 2 else "cgroup v1 blkio throttle"

    @property
    def not_throttled(self) -> str:
        return NOT_THROTTLED_V2 if self.version == 2 else NOT_THROTTLED_V1


@dataclass(frozen=True)
class Device:
    major: int
    minor: int
    name: str

    @property
    def number(self) -> str:
        return f"{self.major}:{self.minor}"


# --- what is there ---------------------------------------------------------------------------


def mounts(kernel: Kernel = KERNEL) -> list[Mount]:
    """/proc/self/mountinfo, parsed (mount points unescaped: \\040 is a space)."""
    out = []
    try:
        text = (kernel.proc / "self" / "mountinfo").read_text()
    except OSError:
        return []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        a, b = left.split(), right.split()
        if not sep or len(a) < 5 or len(b) < 3:
            continue
        point = a[4].encode().decode("unicode_escape")
        out.append(Mount(Path(point), b[0], b[1], frozenset(b[2].split(",")), a[2]))
    return out


def hierarchy(kernel: Kernel = KERNEL) -> Hierarchy:
    """The hierarchy to use (v2 when its io controller is there, else v1 blkio), or a refusal
    naming what is missing."""
    found = mounts(kernel)
    missing = []
    for m in found:
        if m.fstype == "cgroup2":
            controllers = _read(m.point / "cgroup.controllers").split()
            if "io" in controllers:
                return _writable(Hierarchy(2, m.point), kernel)
            have = ", ".join(controllers) or "none"
            missing.append(f"the cgroup v2 hierarchy at {m.point} has no io controller "
                           f"(its controllers: {have})")  # fmt: skip
    for m in found:
        if m.fstype == "cgroup" and "blkio" in m.options:
            return _writable(Hierarchy(1, m.point), kernel)
    if not any(m.fstype == "cgroup2" for m in found):
        missing.append("no cgroup v2 hierarchy is mounted")
    missing.append("no cgroup v1 hierarchy with the blkio controller is mounted")
    raise DiskLimitError(
        "cannot limit disk I/O on this machine: the kernel's block I/O throttle is not "
        f"available ({'; '.join(missing)})"
    )


def _writable(h: Hierarchy, kernel: Kernel) -> Hierarchy:
    if kernel.euid() != 0:
        raise DiskLimitError(
            f"cannot limit disk I/O: pgrig must run as root to write the kernel's cgroup files "
            f"under {h.mount} ({h.mechanism}); it runs as uid {kernel.euid()}"
        )
    return h


def device_of(path: Path, kernel: Kernel = KERNEL) -> Device:
    """The whole disk the throttle takes for the file system holding `path`."""
    target = _existing(path)
    number = kernel.device_number(target)
    major, minor = os.major(number), os.minor(number)
    node = kernel.sys_block / f"{major}:{minor}"
    if not node.exists():
        # btrfs and others give an anonymous device number: the mount's source is the disk
        mount = next((m for m in mounts(kernel) if m.device == f"{major}:{minor}"), None)
        source = Path(mount.source) if mount is not None else None
        if source is not None and source.is_absolute() and source.exists():
            rdev = os.stat(source).st_rdev
            if rdev and (kernel.sys_block / f"{os.major(rdev)}:{os.minor(rdev)}").exists():
                major, minor = os.major(rdev), os.minor(rdev)
                node = kernel.sys_block / f"{major}:{minor}"
        if not node.exists():
            what = f"{mount.fstype} " if mount is not None else ""
            raise DiskLimitError(
                f"cannot limit disk I/O for {target}: it is on a {what}file system without a "
                f"block device ({major}:{minor}), so there is no disk to throttle"
            )
    if (node / "partition").exists():  # the throttle refuses partitions: their disk
        node = node.resolve().parent
        major, minor = (int(x) for x in _read(node / "dev").strip().split(":"))
    name = _uevent(node).get("DEVNAME") or node.resolve().name
    return Device(major, minor, name)


def devices(env: Environment, kernel: Kernel = KERNEL) -> list[tuple[Device, list[str]]]:
    """Each disk holding the data directory or the WAL (pg_wal may be a link elsewhere), with
    what it holds."""
    out: dict[Device, list[str]] = {}
    for what, path in (("data directory", env.datadir), ("WAL", env.datadir / "pg_wal")):
        out.setdefault(device_of(path, kernel), []).append(what)
    return list(out.items())


def check(env: Environment, kernel: Kernel = KERNEL) -> tuple[Hierarchy, list[Device]]:
    """Everything a limit needs, found before anything is made (refusals name what lacks)."""
    if not env.managed or env.member_dir:
        raise DiskLimitError(
            f"environment {env.name!r} is {env.kind}: pgrig limits the disk of servers it runs "
            "on this machine only"
        )
    h = hierarchy(kernel)
    return h, [d for d, _ in devices(env, kernel)]


def cgroup_dir(env: Environment, h: Hierarchy) -> Path:
    digest = hashlib.sha1(str(env.dir).encode()).hexdigest()[:8]
    return h.mount / "pgrig" / f"{env.name}.{digest}"


def existing_cgroup(env: Environment, kernel: Kernel = KERNEL) -> tuple[Hierarchy, Path] | None:
    """The hierarchy and the environment's cgroup in it, when both exist (None: no blkio
    hierarchy here, or the environment was never limited)."""
    try:
        h = hierarchy(kernel)
    except DiskLimitError:
        return None
    cg = cgroup_dir(env, h)
    return (h, cg) if cg.is_dir() else None


# --- putting a limit in force ------------------------------------------------------------------


def apply(env: Environment, pid: int | None, kernel: Kernel = KERNEL) -> None:
    """Make the environment's cgroup hold its limit and its server (`pid`: the postmaster, None
    when stopped); without a limit, take the server out and remove the cgroup."""
    limit = limit_of(env)
    if limit is None:
        remove(env, kernel)
        return
    h, devs = check(env, kernel)
    cg = cgroup_dir(env, h)
    _make(cg, h, kernel)
    _write_limits(cg, h, limit, devs, kernel)
    if pid is not None:
        _join_tree(cg, pid, kernel)


def _join_tree(cg: Path, pid: int, kernel: Kernel) -> None:
    """The postmaster and every process under it into `cg`, listed again until a pass finds
    none outside: a child forked between the listing and its parent's move starts outside
    the cgroup and would do its I/O unthrottled (seen on a loaded machine after a restart)."""
    for _ in range(10):
        inside = set(members(cg))
        outside = [p for p in process_tree(pid, str(kernel.proc)) if p not in inside]
        if not outside:
            return
        for member in outside:
            _join(cg, member, kernel)


def limit_of(env: Environment) -> DiskLimit | None:
    return DiskLimit.from_dict(env.disk_limit) if env.disk_limit else None


def limit_of_or_none(env: Environment) -> DiskLimit | None:
    """The environment's limit; None also where its record is damaged (not a limit)."""
    try:
        return limit_of(env)
    except DiskLimitError:
        return None


def _make(cg: Path, h: Hierarchy, kernel: Kernel) -> None:
    if h.version == 2:  # a controller reaches a cgroup only through its parents' subtree_control
        for parent in (h.mount, cg.parent):
            parent.mkdir(exist_ok=True)
            control = parent / "cgroup.subtree_control"
            if "io" not in _read(control).split():
                kernel.write(control, "+io")
    cg.mkdir(parents=True, exist_ok=True)


def _write_limits(
    cg: Path, h: Hierarchy, limit: DiskLimit, devs: list[Device], kernel: Kernel
) -> None:
    wanted = {d.number for d in devs}
    stale = set(read_limits(cg, h)) - wanted  # a device that no longer holds the data
    values = limit.as_dict()
    if h.version == 2:
        for number in sorted(stale):
            kernel.write(cg / V2_FILE, f"{number} " + " ".join(f"{k}=max" for k in KEYS))
        for number in sorted(wanted):
            kernel.write(
                cg / V2_FILE, f"{number} " + " ".join(f"{k}={values.get(k, 'max')}" for k in KEYS)
            )
        return
    for key, name in V1_FILES.items():
        for number in sorted(stale | wanted):  # 0: no limit for that device
            kernel.write(cg / name, f"{number} {values.get(key, 0) if number in wanted else 0}")


def _join(cg: Path, pid: int, kernel: Kernel) -> None:
    try:
        kernel.write(cg / "cgroup.procs", str(pid))
    except DiskLimitError as e:
        if "No such process" not in str(e):  # a backend that ended meanwhile
            raise


def lift(env: Environment, kernel: Kernel = KERNEL) -> None:
    """Every rule of the environment's cgroup set to no limit, its processes left in it: the
    I/O queued under the limit goes out at once (the kernel re-dispatches on a change). What
    ends a wait the limit made too long; `apply` puts the limit back."""
    if (found := existing_cgroup(env, kernel)) is None:
        return
    h, cg = found
    for number in sorted(read_limits(cg, h)):
        if h.version == 2:
            kernel.write(cg / V2_FILE, f"{number} " + " ".join(f"{k}=max" for k in KEYS))
        else:
            for name in V1_FILES.values():
                kernel.write(cg / name, f"{number} 0")


def remove(env: Environment, kernel: Kernel = KERNEL) -> bool:
    """Take every process out of the environment's cgroup (into pgrig's own) and remove it.
    False when there was none (no hierarchy, or never limited)."""
    if (found := existing_cgroup(env, kernel)) is None:
        return False
    h, cg = found
    home = own_cgroup(h, kernel)
    for pid in members(cg):
        with contextlib.suppress(DiskLimitError):
            kernel.write(home / "cgroup.procs", str(pid))
    for attempt in range(20):  # a process killed just now leaves its cgroup as it exits
        try:
            kernel.rmdir(cg)
            break
        except OSError as e:
            if e.errno != errno.EBUSY or attempt == 19:
                raise DiskLimitError(
                    f"could not remove the disk-limit cgroup {cg}: {e.strerror} "
                    f"(processes left in it: {members(cg) or 'none'})"
                ) from None
            time.sleep(0.1)
    with contextlib.suppress(OSError):  # the last environment's takes pgrig's directory too
        kernel.rmdir(cg.parent)
    return True


def own_cgroup(h: Hierarchy, kernel: Kernel = KERNEL) -> Path:
    """The cgroup pgrig itself runs in, in that hierarchy (where processes go back to)."""
    for line in _read(kernel.proc / "self" / "cgroup").splitlines():
        _, controllers, rel = [*line.split(":", 2), "", ""][:3]
        mine = controllers == "" if h.version == 2 else "blkio" in controllers.split(",")
        if mine:
            d = h.mount / rel.lstrip("/")
            if d.is_dir() and "pgrig" not in d.relative_to(h.mount).parts:
                return d
    return h.mount


# --- what is in force --------------------------------------------------------------------------


def members(cg: Path) -> list[int]:
    return [int(x) for x in _read(cg / "cgroup.procs").split() if x.isdigit()]


def read_limits(cg: Path, h: Hierarchy) -> dict[str, dict[str, int]]:
    """device "M:m" -> the limits its files hold (keys of request/disk_limit.py; unlimited
    keys absent)."""
    out: dict[str, dict[str, int]] = {}
    if h.version == 2:
        for line in _read(cg / V2_FILE).splitlines():
            number, *pairs = line.split()
            for pair in pairs:
                key, _, value = pair.partition("=")
                if key in KEYS and value.isdigit():
                    out.setdefault(number, {})[key] = int(value)
            out.setdefault(number, {})
        return out
    for key, name in V1_FILES.items():
        for line in _read(cg / name).splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit() and int(parts[1]) > 0:
                out.setdefault(parts[0], {})[key] = int(parts[1])
    return out


def in_force(env: Environment, pid: int | None, kernel: Kernel = KERNEL) -> DiskLimitDoc:
    """What the kernel holds for this environment now, as a run records it: the limit asked
    for, the files read back per device, whether the postmaster and all its processes are in
    the cgroup, and `in_force` (all of it as asked)."""
    limit = limit_of(env)
    if limit is None:
        return _none_in_force(env, pid, kernel)
    doc: DiskLimitDoc = {"limit": limit.as_dict(), "text": limit.text(), "in_force": False}
    problems: list[str] = []
    try:
        h = hierarchy(kernel)
        placed = devices(env, kernel)
    except DiskLimitError as e:
        doc["problems"] = [str(e)]
        return doc
    cg = cgroup_dir(env, h)
    doc["mechanism"], doc["cgroup"], doc["not_throttled"] = h.mechanism, str(cg), h.not_throttled
    held = read_limits(cg, h) if cg.is_dir() else {}
    found: list[DiskDeviceDoc] = [
        {"device": d.number, "name": d.name, "holds": holds, "in_force": held.get(d.number, {})}
        for d, holds in placed
    ]
    doc["devices"] = found
    for dev in found:
        if dev["in_force"] != limit.as_dict():
            problems.append(
                f"{dev['device']} ({dev['name']}) holds {dev['in_force'] or 'no limit'}"
            )
    inside = set(members(cg)) if cg.is_dir() else set()
    tree = process_tree(pid, str(kernel.proc)) if pid is not None else []
    doc["server_in_cgroup"] = pid is not None and pid in inside
    doc["processes_outside"] = len([p for p in tree if p not in inside and _alive(p, kernel)])
    if pid is None:
        problems.append("the server is not running")
    elif not doc["server_in_cgroup"]:
        problems.append(f"the postmaster (pid {pid}) is not in {cg}")
    elif doc["processes_outside"]:
        problems.append(f"{doc['processes_outside']} of the server's processes are outside {cg}")
    doc["problems"] = problems
    doc["in_force"] = not problems
    return doc


def _none_in_force(env: Environment, pid: int | None, kernel: Kernel) -> DiskLimitDoc:
    """No limit recorded: in force unless the kernel still throttles the running server (an
    `env set --disk-limit` killed between the kernel's files and env.json, or a record edited
    by hand): then it is not, said, so that a run does not record 'none' under a limit."""
    doc: DiskLimitDoc = {"limit": {}, "text": "none", "in_force": None}
    if pid is None:
        return doc  # its next start takes the server out of any cgroup left
    if (found := existing_cgroup(env, kernel)) is None:
        return doc
    h, cg = found
    limits = {number: rules for number, rules in read_limits(cg, h).items() if rules}
    inside = set(members(cg)) & set(process_tree(pid, str(kernel.proc)))
    if not limits or not inside:
        return doc
    held_text = "; ".join(
        f"{number} {DiskLimit.from_dict(rules).text() if _valid(rules) else rules}"
        for number, rules in sorted(limits.items())
    )
    doc["in_force"], doc["cgroup"], doc["server_in_cgroup"] = False, str(cg), pid in inside
    doc["problems"] = [
        f"no limit is recorded, yet the kernel holds {held_text} on {len(inside)} of the "
        f"server's processes ({cg})"
    ]
    return doc


def _valid(rules: dict[str, int]) -> bool:
    try:
        DiskLimit.from_dict(rules)
    except DiskLimitError:
        return False
    return True


def held(env: Environment, kernel: Kernel = KERNEL) -> DiskLimit | None:
    """The one limit every disk of the environment holds in its cgroup now (None: no cgroup,
    no limit, or disks holding different ones): what a damaged record is rebuilt from."""
    try:
        h = hierarchy(kernel)
        placed = devices(env, kernel)
    except DiskLimitError:
        return None
    cg = cgroup_dir(env, h)
    if not cg.is_dir() or not placed:
        return None
    held = read_limits(cg, h)
    found = {tuple(sorted(held.get(d.number, {}).items())) for d, _ in placed}
    if len(found) != 1 or not (one := dict(found.pop())):
        return None
    try:
        return DiskLimit.from_dict(one)
    except DiskLimitError:
        return None


def _alive(pid: int, kernel: Kernel) -> bool:
    return (kernel.proc / str(pid)).exists()


# --- files -------------------------------------------------------------------------------------


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def write_file(path: Path, text: str) -> None:
    """One write, as the kernel's cgroup files want it (a refused value fails that write)."""
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
    except OSError as e:
        why = os.strerror(e.errno) if e.errno else str(e)
        if e.errno == errno.ENODEV:
            why += " (the throttle takes whole disks, not partitions)"
        raise DiskLimitError(f"cannot write {text!r} to {path}: {why}") from None


def _uevent(node: Path) -> dict[str, str]:
    out = {}
    for line in _read(node / "uevent").splitlines():
        key, _, value = line.partition("=")
        out[key] = value
    return out


def _existing(path: Path) -> Path:
    """`path`, or its nearest existing parent (before the data directory is made)."""
    for p in (path, *path.parents):
        if p.exists():
            return p
    return Path("/")


def where(env: Environment) -> str:
    """ "cgroup v1 blkio throttle on 254:0 (vda)": how and on which disks (or why not)."""
    from pgrig.errors import PgrigError

    try:
        h = hierarchy()
        disks = ", ".join(f"{d.number} ({d.name})" for d, _ in devices(env))
    except PgrigError as e:
        return str(e)
    return f"{h.mechanism} on {disks}"
