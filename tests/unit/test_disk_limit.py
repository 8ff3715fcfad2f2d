"""--disk-limit: the spec's parsing, and the kernel's files the throttle writes and reads back,
against a fake tree (a fake /proc, /sys/dev/block and cgroup mounts; writes emulate the
kernel's semantics of each file)."""

from __future__ import annotations

import dataclasses
import errno
import os
import shutil
from pathlib import Path

import pytest

from pgrig.errors import PgrigError
from pgrig.provision.server import disk_throttle
from pgrig.provision.server.disk_throttle import Kernel
from pgrig.provision.state.environment import Environment
from pgrig.request.disk_limit import DiskLimit, DiskLimitError, describe, parse

# --- the spec ----------------------------------------------------------------------------------


def test_parse_any_subset_and_sizes() -> None:
    assert parse("wiops=300") == DiskLimit(wiops=300)
    assert parse("riops=100, wiops=300,rbps=50MB,wbps=1GB") == DiskLimit(
        riops=100, wiops=300, rbps=50 * 1024**2, wbps=1024**3
    )
    assert parse("wbps=4096").wbps == 4096  # type: ignore[union-attr]
    assert parse("wbps=8kB").wbps == 8192  # type: ignore[union-attr]
    assert parse("rbps=2 MB").rbps == 2 * 1024**2  # type: ignore[union-attr]
    assert parse("none") is None
    assert parse(" NONE ") is None
    # a leading + as PostgreSQL's parsers take it, sizes as counts (issue 43, case 9)
    assert parse("wbps=+5MB,wiops=+300") == DiskLimit(wiops=300, wbps=5 * 1024**2)


def test_text_round_trips() -> None:
    limit = parse("wbps=52428800,riops=7,rbps=1000")
    assert limit is not None
    assert limit.text() == "riops=7,rbps=1000,wbps=50MB"
    assert parse(limit.text()) == limit
    assert describe(limit) == "riops=7, rbps=1000, wbps=50MB"
    assert describe(None) == "none"
    assert DiskLimit.from_dict(limit.as_dict()) == limit


def test_fractional_sizes_are_rounded_to_bytes_as_postgresql_does() -> None:
    """Issue 43 (F14): PostgreSQL takes 1.5MB for a size setting (rounded to its unit); so
    does --disk-limit, to whole bytes, the floors still in force; operations stay whole."""
    from pgrig.request.disk_limit import check_floor

    limit = parse("wbps=1.5MB,rbps=0.25MB")
    assert limit is not None and (limit.wbps, limit.rbps) == (1572864, 262144)
    assert limit.text() == "rbps=256kB,wbps=1536kB"
    check_floor(limit)
    assert parse("wbps=2.5") == parse("wbps=2")  # half to even, as rint
    with pytest.raises(DiskLimitError, match=r"below the floor of wbps=1MB"):
        check_floor(parse("wbps=0.5MB"))
    with pytest.raises(DiskLimitError) as e:
        parse("wbps=0.4")
    assert (
        str(e.value) == "--disk-limit: wbps must be > 0 (got '0.4' once rounded to whole bytes: 0)"
    )
    with pytest.raises(DiskLimitError, match="riops must be a whole number"):
        parse("riops=1.5")


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("wiop=3", "'wiop': unknown key (did you mean 'wiops'?); allowed here: riops, wiops"),
        ("wiops=0", "wiops must be > 0 (got 0)"),
        ("riops=-5", "riops must be > 0 (got -5)"),
        ("wiops=3.5", "wiops must be a whole number of write operations per second"),
        ("wiops=lots", "got 'lots'"),
        ("rbps=50XB", "rbps must be a size in bytes per second"),
        ("wbps=0", "wbps must be > 0"),
        ("wbps=-1MB", "wbps must be > 0"),
        ("wiops", "'wiops' is not KEY=VALUE"),
        ("wiops=1,wiops=2", "wiops is given twice"),
        ("", "--disk-limit is empty"),
        ("wiops=99999999999", "wiops must be at most"),
        # as PostgreSQL reads a setting: units case-sensitive, ASCII digits (int() takes "٣٠٠")
        ("wbps=50mb", "invalid unit 'mb' (got '50mb'); valid units are B, kB, MB, GB and TB"),
        ("wbps=1Kb", "invalid unit 'Kb'"),
        ("rbps=1MiB", "invalid unit 'MiB'"),
        ("wiops=\u0663\u0660\u0660", "wiops must be a whole number of write operations"),
        ("wiops=+\u0663", "wiops must be a whole number"),
        ("wbps=\u0665\u0660MB", "wbps must be a size in bytes per second"),
        ("riops=\uff13", "riops must be a whole number"),
        # forms PostgreSQL's integer parser reads otherwise (strtol base 0): hex, a leading 0
        # (octal: 0500 is 320), exponents; each refused naming the forms taken
        ("riops=0x1F4", "riops must be a whole number of read operations per second in decimal"),
        ("riops=0x1F4", "digits 0-9 (got '0x1F4'; for example riops=500)"),
        ("wbps=0x1F4", "a decimal number (digits 0-9, a fraction allowed) of bytes, or with B"),
        ("riops=5e2", "in decimal digits 0-9"),
        ("rbps=1e6", "a decimal number (digits 0-9"),
        ("riops=0500", "riops=0500 starts with 0, which PostgreSQL reads as octal (0500 is 320"),
        ("riops=0500", "without the leading 0 (riops=500)"),
        ("wbps=0500MB", "wbps=0500MB starts with 0, which PostgreSQL reads as octal"),
        ("wbps=0500MB", "(wbps=500MB)"),
    ],
)
def test_bad_specs_are_refused_in_one_line(spec: str, says: str) -> None:
    with pytest.raises(DiskLimitError) as e:
        parse(spec)
    assert says in str(e.value)
    assert str(e.value).startswith("--disk-limit")
    assert "\n" not in str(e.value)


def test_a_damaged_record_is_not_guessed_at() -> None:
    with pytest.raises(DiskLimitError, match="must be a positive integer"):
        DiskLimit.from_dict({"wiops": "300"})
    with pytest.raises(DiskLimitError, match="unknown key"):
        DiskLimit.from_dict({"iops": 3})


# --- a fake kernel -----------------------------------------------------------------------------


class FakeKernel:
    """A tree laid out as the kernel's, and writes with the kernel's meaning per file."""

    def __init__(self, root: Path, version: int = 1, device: tuple[int, int] = (254, 0)) -> None:
        self.root = root
        self.proc = root / "proc"
        self.sys_block = root / "sys" / "dev" / "block"
        self.cgroup = root / "cgroup" / ("blkio" if version == 1 else "unified")
        self.device = device
        self.writes: list[tuple[str, str]] = []
        self.refuse: dict[str, str] = {}  # file name -> errno name, to fail a write
        (self.proc / "self").mkdir(parents=True)
        self.cgroup.mkdir(parents=True)
        if version == 1:
            mount = f"38 31 0:35 / {self.cgroup} rw,relatime - cgroup cgroup rw,blkio"
            (self.proc / "self" / "cgroup").write_text("7:blkio:/\n0::/\n")
        else:
            mount = f"41 31 0:38 / {self.cgroup} rw,relatime - cgroup2 cgroup2 rw"
            (self.cgroup / "cgroup.controllers").write_text("cpu io memory\n")
            (self.proc / "self" / "cgroup").write_text("0::/\n")
        (self.proc / "self" / "mountinfo").write_text(
            f"22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n{mount}\n"
        )
        self._disk("vda", 254, 0)

    def _disk(self, name: str, major: int, minor: int, parts: int = 0) -> None:
        dev = self.root / "sys" / "devices" / name
        dev.mkdir(parents=True)
        (dev / "dev").write_text(f"{major}:{minor}\n")
        (dev / "uevent").write_text(f"MAJOR={major}\nMINOR={minor}\nDEVNAME={name}\nDEVTYPE=disk\n")
        self.sys_block.mkdir(parents=True, exist_ok=True)
        (self.sys_block / f"{major}:{minor}").symlink_to(dev)
        for n in range(1, parts + 1):
            part = dev / f"{name}{n}"
            part.mkdir()
            (part / "partition").write_text(f"{n}\n")
            (part / "dev").write_text(f"{major}:{minor + n}\n")
            (part / "uevent").write_text(f"DEVNAME={name}{n}\nDEVTYPE=partition\n")
            (self.sys_block / f"{major}:{minor + n}").symlink_to(part)

    def processes(self, tree: dict[int, list[int]]) -> None:
        """pid -> children, as /proc/PID/task/PID/children says."""
        for pid, children in tree.items():
            task = self.proc / str(pid) / "task" / str(pid)
            task.mkdir(parents=True, exist_ok=True)
            (task / "children").write_text(" ".join(map(str, children)) + " ")

    def write(self, path: Path, text: str) -> None:
        if path.name in self.refuse:
            raise DiskLimitError(f"cannot write {text!r} to {path}: {self.refuse[path.name]}")
        self.writes.append((str(path.relative_to(self.cgroup)), text))
        old = path.read_text() if path.exists() else ""
        if path.name.endswith("_device"):  # v1: "M:m V", 0 removes the device's rule
            number, value = text.split()
            rules = dict(line.split() for line in old.splitlines())
            rules.pop(number, None)
            if value != "0":
                rules[number] = value
            path.write_text("".join(f"{k} {v}\n" for k, v in sorted(rules.items())))
        elif path.name == "io.max":  # v2: "M:m key=value ...", all max removes the line
            number, *pairs = text.split()
            lines = {ln.split()[0]: ln.split()[1:] for ln in old.splitlines()}
            current = dict(p.split("=") for p in lines.get(number, [])) or dict.fromkeys(
                ("rbps", "wbps", "riops", "wiops"), "max"
            )
            current.update(p.split("=") for p in pairs)
            lines.pop(number, None)
            if any(v != "max" for v in current.values()):
                lines[number] = [f"{k}={current[k]}" for k in ("rbps", "wbps", "riops", "wiops")]
            path.write_text("".join(f"{k} {' '.join(v)}\n" for k, v in sorted(lines.items())))
        elif path.name == "cgroup.procs":  # a process is in one cgroup of a hierarchy
            for procs in self.cgroup.rglob("cgroup.procs"):
                kept = [p for p in procs.read_text().split() if p != text]
                procs.write_text("".join(f"{p}\n" for p in kept))
            path.write_text(old + f"{text}\n")
        elif path.name == "cgroup.subtree_control":
            path.write_text(" ".join(sorted({*old.split(), text.lstrip("+")})))
        else:
            path.write_text(text)

    def rmdir(self, path: Path) -> None:
        if disk_throttle.members(path) or any(p.is_dir() for p in path.iterdir()):
            raise OSError(errno.EBUSY if path.name != "pgrig" else errno.ENOTEMPTY, "busy")
        shutil.rmtree(path)

    def kernel(self, euid: int = 0, device: tuple[int, int] | None = None) -> Kernel:
        number = os.makedev(*(device or self.device))
        return Kernel(
            proc=self.proc,
            sys_block=self.sys_block,
            euid=lambda: euid,
            device_number=lambda _p: number,
            write=self.write,
            rmdir=self.rmdir,
        )


@pytest.fixture
def env(pgrig_home: Path) -> Environment:
    e = Environment(name="db1", port=5999, disk_limit={"wiops": 300, "rbps": 50 * 1024**2})
    e.datadir.mkdir(parents=True)
    return e


def test_v1_files_hold_the_limit_and_the_server_tree(tmp_path: Path, env: Environment) -> None:
    fake = FakeKernel(tmp_path)
    fake.processes({100: [101, 102], 101: [], 102: []})
    kernel = fake.kernel()
    disk_throttle.apply(env, 100, kernel)
    h = disk_throttle.hierarchy(kernel)
    assert h.version == 1 and h.mount == fake.cgroup
    cg = disk_throttle.cgroup_dir(env, h)
    assert cg.parent == fake.cgroup / "pgrig" and cg.name.startswith("db1.")
    assert (cg / "blkio.throttle.write_iops_device").read_text() == "254:0 300\n"
    assert (cg / "blkio.throttle.read_bps_device").read_text() == "254:0 52428800\n"
    assert (cg / "blkio.throttle.read_iops_device").read_text() == ""
    assert (cg / "blkio.throttle.write_bps_device").read_text() == ""
    assert sorted(disk_throttle.members(cg)) == [100, 101, 102]

    doc = disk_throttle.in_force(env, 100, kernel)
    assert doc["in_force"] is True and doc["problems"] == []
    assert doc["text"] == "wiops=300,rbps=50MB"
    assert doc["mechanism"] == "cgroup v1 blkio throttle"
    assert doc["devices"] == [
        {"device": "254:0", "name": "vda", "holds": ["data directory", "WAL"],
         "in_force": {"wiops": 300, "rbps": 52428800}}
    ]  # fmt: skip
    assert "buffered writeback" in doc["not_throttled"]
    assert doc["server_in_cgroup"] is True and doc["processes_outside"] == 0


def test_a_change_clears_what_is_no_longer_limited(tmp_path: Path, env: Environment) -> None:
    fake = FakeKernel(tmp_path)
    fake.processes({100: []})
    kernel = fake.kernel()
    disk_throttle.apply(env, 100, kernel)
    env.disk_limit = {"riops": 1000}
    disk_throttle.apply(env, 100, kernel)
    cg = disk_throttle.cgroup_dir(env, disk_throttle.hierarchy(kernel))
    assert disk_throttle.read_limits(cg, disk_throttle.hierarchy(kernel)) == {
        "254:0": {"riops": 1000}
    }
    assert disk_throttle.in_force(env, 100, kernel)["in_force"] is True


def test_v2_io_max(tmp_path: Path, env: Environment) -> None:
    fake = FakeKernel(tmp_path, version=2)
    fake.processes({100: [101], 101: []})
    kernel = fake.kernel()
    disk_throttle.apply(env, 100, kernel)
    h = disk_throttle.hierarchy(kernel)
    assert h.version == 2
    cg = disk_throttle.cgroup_dir(env, h)
    assert (cg / "io.max").read_text() == "254:0 rbps=52428800 wbps=max riops=max wiops=300\n"
    assert (fake.cgroup / "cgroup.subtree_control").read_text() == "io"
    assert (fake.cgroup / "pgrig" / "cgroup.subtree_control").read_text() == "io"
    doc = disk_throttle.in_force(env, 100, kernel)
    assert doc["in_force"] is True and doc["mechanism"] == "cgroup v2 io.max"
    env.disk_limit = None
    disk_throttle.apply(env, 100, kernel)  # no limit: the cgroup goes, the server leaves it
    assert not cg.exists()
    none = {"limit": {}, "text": "none", "in_force": None}
    assert disk_throttle.in_force(env, 100, kernel) == none


def test_a_partition_is_limited_through_its_disk(tmp_path: Path, env: Environment) -> None:
    fake = FakeKernel(tmp_path, device=(8, 1))
    fake._disk("sda", 8, 0, parts=2)
    kernel = fake.kernel()
    dev = disk_throttle.device_of(env.datadir, kernel)
    assert (dev.number, dev.name) == ("8:0", "sda")
    disk_throttle.apply(env, None, kernel)
    cg = disk_throttle.cgroup_dir(env, disk_throttle.hierarchy(kernel))
    assert (cg / "blkio.throttle.write_iops_device").read_text() == "8:0 300\n"


def test_no_block_device_is_refused(tmp_path: Path, env: Environment) -> None:
    fake = FakeKernel(tmp_path)
    with pytest.raises(DiskLimitError, match="without a block device \\(0:42\\)"):
        disk_throttle.check(env, fake.kernel(device=(0, 42)))


def test_what_is_missing_is_named(tmp_path: Path, env: Environment) -> None:
    fake = FakeKernel(tmp_path)
    (fake.proc / "self" / "mountinfo").write_text(
        f"41 31 0:38 / {fake.cgroup} rw - cgroup2 cgroup2 rw\n"
        f"32 31 0:29 / {tmp_path}/cpu rw - cgroup cgroup rw,cpu\n"
    )
    (fake.cgroup / "cgroup.controllers").write_text("hugetlb\n")
    with pytest.raises(DiskLimitError) as e:
        disk_throttle.check(env, fake.kernel())
    assert str(e.value) == (
        "cannot limit disk I/O on this machine: the kernel's block I/O throttle is not "
        f"available (the cgroup v2 hierarchy at {fake.cgroup} has no io controller (its "
        "controllers: hugetlb); no cgroup v1 hierarchy with the blkio controller is mounted)"
    )
    assert fake.writes == []


def test_not_root_is_refused(tmp_path: Path, env: Environment) -> None:
    fake = FakeKernel(tmp_path)
    with pytest.raises(DiskLimitError, match=r"must run as root .* it runs as uid 1000"):
        disk_throttle.apply(env, None, fake.kernel(euid=1000))
    assert fake.writes == []


def test_external_environments_are_refused(tmp_path: Path, pgrig_home: Path) -> None:
    fake = FakeKernel(tmp_path)
    ext = Environment(name="ext", kind="external", dsn="host=x", disk_limit={"wiops": 1})
    with pytest.raises(DiskLimitError, match="is external: pgrig limits the disk of servers"):
        disk_throttle.check(ext, fake.kernel())


def test_in_force_says_what_is_not(tmp_path: Path, env: Environment) -> None:
    fake = FakeKernel(tmp_path)
    fake.processes({100: [101], 101: []})
    kernel = fake.kernel()
    disk_throttle.apply(env, None, kernel)  # limits written, server not moved in
    doc = disk_throttle.in_force(env, 100, kernel)
    assert doc["in_force"] is False
    assert doc["server_in_cgroup"] is False
    assert any("the postmaster (pid 100) is not in" in p for p in doc["problems"])
    cg = disk_throttle.cgroup_dir(env, disk_throttle.hierarchy(kernel))
    fake.write(cg / "blkio.throttle.write_iops_device", "254:0 0")  # changed behind pgrig
    doc = disk_throttle.in_force(env, None, kernel)
    assert "254:0 (vda) holds {'rbps': 52428800}" in doc["problems"]
    assert "the server is not running" in doc["problems"]


def test_remove_moves_processes_out_first(tmp_path: Path, env: Environment) -> None:
    fake = FakeKernel(tmp_path)
    fake.processes({100: [101], 101: []})
    kernel = fake.kernel()
    disk_throttle.apply(env, 100, kernel)
    cg = disk_throttle.cgroup_dir(env, disk_throttle.hierarchy(kernel))
    fake.writes.clear()
    assert disk_throttle.remove(env, kernel) is True
    assert fake.writes == [("cgroup.procs", "100"), ("cgroup.procs", "101")]
    assert (fake.cgroup / "cgroup.procs").read_text().split() == ["100", "101"]
    assert not cg.exists() and not cg.parent.exists()
    assert disk_throttle.remove(env, fake.kernel()) is False  # nothing left to remove


def test_mount_points_are_unescaped(tmp_path: Path) -> None:
    fake = FakeKernel(tmp_path)
    (fake.proc / "self" / "mountinfo").write_text(
        "38 31 0:35 / /sys/fs/cgroup/my\\040blkio rw - cgroup cgroup rw,blkio\n"
    )
    assert disk_throttle.mounts(fake.kernel())[0].point == Path("/sys/fs/cgroup/my blkio")


def test_a_child_forked_while_the_server_moves_in_is_moved_too(
    tmp_path: Path, env: Environment
) -> None:
    """The postmaster forks (a backend, an autovacuum worker) between pgrig's listing of its
    tree and its own move: that child starts outside the cgroup; apply lists again."""
    fake = FakeKernel(tmp_path)
    fake.processes({100: [101], 101: []})
    write = fake.write

    def forking_write(path: Path, text: str) -> None:
        write(path, text)
        if path.name == "cgroup.procs" and text == "101":  # the postmaster forked 102 meanwhile
            fake.processes({100: [101, 102], 102: []})

    kernel = dataclasses.replace(fake.kernel(), write=forking_write)
    disk_throttle.apply(env, 100, kernel)
    cg = disk_throttle.cgroup_dir(env, disk_throttle.hierarchy(kernel))
    assert sorted(disk_throttle.members(cg)) == [100, 101, 102]


# --- a damaged record (issue 43, class 3) ------------------------------------------------------


def test_the_limit_the_kernel_holds_rebuilds_a_damaged_record(
    tmp_path: Path, env: Environment
) -> None:
    fake = FakeKernel(tmp_path)
    kernel = fake.kernel()
    assert disk_throttle.held(env, kernel) is None  # no cgroup yet
    disk_throttle.apply(env, None, kernel)
    damaged = dataclasses.replace(env, disk_limit={"wiops": 0})
    assert disk_throttle.limit_of_or_none(damaged) is None
    assert disk_throttle.held(damaged, kernel) == DiskLimit(wiops=300, rbps=50 * 1024**2)


def test_env_set_on_a_damaged_record_says_it_and_raises_nothing_after_the_change(
    env: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`env set --disk-limit none` over {"wiops": 0} exited 2 after removing the limit and its
    cgroup: all it says is now worked out before the change."""
    from pgrig.provision import env_settings
    from pgrig.provision.operations import change
    from pgrig.provision.server import postmaster

    env.disk_limit = {"wiops": 0}
    (env.datadir / "PG_VERSION").write_text("18\n")
    made: list[object] = []
    monkeypatch.setattr(
        env_settings, "set_disk_limit", lambda name, limit: (made.append(limit), ({}, True))[1]
    )
    monkeypatch.setattr(postmaster, "is_running", lambda _env: False)
    done = change.set_disk_limit(env, None)
    assert made == [None] and done.changed and done.removed
    assert done.before == "damaged ({'wiops': 0})" and done.after == "none"


def test_repair_sees_the_damaged_record_env_show_flags(env: Environment) -> None:
    """One check (env_status.disk_limit_fault) for `env show` and `env repair`: repair said
    "nothing to repair" for a record show flagged NOT in force."""
    from pgrig.provision import env_status, repair

    env.disk_limit = {"wiops": 0}
    (env.datadir / "PG_VERSION").write_text("18\n")
    env.save()
    shown = env_status.disk_limit_state(env)
    assert shown["in_force"] is False and shown["damaged"] is True
    diagnosis = repair.diagnose(env.name)
    assert diagnosis.needed
    assert diagnosis.disk_limit is not None
    assert diagnosis.disk_limit.startswith("disk limit record damaged: {'wiops': 0}")
    with pytest.raises(PgrigError, match=r"a repair cannot know it.*nothing repaired"):
        repair.repair(env.name, lambda _m: None)  # no cgroup holds it here: refused, unchanged
    assert Environment.load(env.name).disk_limit == {"wiops": 0}


def test_a_run_on_a_damaged_record_names_the_record_not_a_flag(env: Environment) -> None:
    """issue 43, class 7: `pgrig run`/`pgrig tune` on an environment whose env.json holds
    {"wiops": 0} ended "error: disk limit: wiops must be a positive integer (got 0)", as if a
    --disk-limit the user never gave were wrong, and named no way out."""
    from pgrig.load.core import runner

    env.disk_limit = {"wiops": 0}
    env.save()
    with pytest.raises(PgrigError) as e:
        runner._disk_limit(env)
    assert str(e.value) == (
        "db1: the disk limit recorded in its env.json is damaged (disk limit: wiops must be a "
        "positive integer (got 0)); nothing was run: `pgrig env repair db1` rebuilds it from "
        "what the kernel holds, `pgrig env set db1 --disk-limit none` removes it"
    )


# --- the floor (issue 43, class 5) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("wbps=1", "--disk-limit: wbps=1 is below the floor of wbps=1MB"),
        ("wbps=512kB", "wbps=512kB is below the floor of wbps=1MB"),
        ("wiops=2", "wiops=2 is below the floor of wiops=30"),
        ("riops=1,wiops=300", "riops=1 is below the floor of riops=30"),
        ("rbps=1000", "rbps=1000 is below the floor of rbps=256kB"),
        # quoted as written, not converted (512000 bytes once read "wbps=500kB")
        ("wbps=512000", "--disk-limit: wbps=512000 is below the floor of wbps=1MB"),
        ("wbps=0.5MB", "--disk-limit: wbps=0.5MB is below the floor of wbps=1MB"),
    ],
)
def test_a_limit_below_the_floor_is_refused_naming_the_floor(spec: str, says: str) -> None:
    """`env create --disk-limit wbps=1` waited at CREATE DATABASE for minutes, saying nothing."""
    from pgrig.request.disk_limit import check_floor

    with pytest.raises(DiskLimitError) as e:
        check_floor(parse(spec))
    assert says in str(e.value)
    assert "floors: riops=30, wiops=30, rbps=256kB, wbps=1MB" in str(e.value)


def test_the_floor_itself_and_no_limit_pass() -> None:
    from pgrig.request.disk_limit import check_floor

    check_floor(parse("riops=30,wiops=30,rbps=256kB,wbps=1MB"))
    check_floor(None)


def test_env_create_and_set_check_the_floor_before_anything(pgrig_home: Path) -> None:
    from pgrig.provision.operations import change, create
    from pgrig.request.environment import EnvironmentRequest
    from pgrig.request.problems import from_flags

    with pytest.raises(DiskLimitError, match="wbps=1 is below the floor"):
        create.check(from_flags(EnvironmentRequest, name="e", disk_limit="wbps=1"))
    with pytest.raises(DiskLimitError, match="wiops=1 is below the floor"):
        change.parse_disk_limit("e", "wiops=1")
    assert not (pgrig_home / "envs").exists() or not any((pgrig_home / "envs").iterdir())


def test_a_start_with_a_damaged_limit_starts_nothing(
    env: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`env start` over {"wiops": 0} started the server, then exited 2 ("started but its disk
    limit is not in force"): the limit is checked before anything starts."""
    from pgrig.provision.server import postmaster

    env.disk_limit = {"wiops": 0}
    called: list[tuple[str, ...]] = []
    monkeypatch.setattr(postmaster, "pg_ctl", lambda _env, *args, **_kw: called.append(args))
    with pytest.raises(PgrigError) as e:
        postmaster.start(env)
    assert f"server of {env.name!r} not started: its disk limit cannot be put in force" in str(
        e.value
    )
    assert "`pgrig env repair db1` rebuilds a damaged record" in str(e.value)
    assert called == []


@pytest.mark.parametrize("version", [1, 2])
def test_lift_leaves_the_cgroup_with_no_limit_and_apply_puts_it_back(
    tmp_path: Path, env: Environment, version: int
) -> None:
    """What ends a wait the limit made too long (a create's CREATE DATABASE past its bound)."""
    fake = FakeKernel(tmp_path, version=version)
    fake.processes({100: []})
    kernel = fake.kernel()
    disk_throttle.apply(env, 100, kernel)
    h = disk_throttle.hierarchy(kernel)
    cg = disk_throttle.cgroup_dir(env, h)
    disk_throttle.lift(env, kernel)
    assert disk_throttle.read_limits(cg, h) in ({}, {"254:0": {}})
    assert disk_throttle.members(cg) == [100]
    disk_throttle.apply(env, 100, kernel)
    assert disk_throttle.read_limits(cg, h) == {"254:0": {"wiops": 300, "rbps": 50 * 1024**2}}


def test_no_limit_recorded_while_the_kernel_throttles_the_server_is_said(
    tmp_path: Path, env: Environment
) -> None:
    """`env set --disk-limit` killed between the kernel's files and env.json (or a record edited
    to null): the server ran throttled while env show, repair and every run said 'none'."""
    fake = FakeKernel(tmp_path)
    fake.processes({100: [101], 101: []})
    kernel = fake.kernel()
    disk_throttle.apply(env, 100, kernel)
    unrecorded = dataclasses.replace(env, disk_limit=None)
    doc = disk_throttle.in_force(unrecorded, 100, kernel)
    assert doc["in_force"] is False and doc["text"] == "none"
    assert doc["problems"] == [
        "no limit is recorded, yet the kernel holds 254:0 wiops=300,rbps=50MB on 2 of the "
        f"server's processes ({doc['cgroup']})"
    ]
    assert disk_throttle.in_force(unrecorded, None, kernel)["in_force"] is None  # stopped
    disk_throttle.apply(unrecorded, 100, kernel)  # what a run and env repair do about it
    assert disk_throttle.in_force(unrecorded, 100, kernel) == {
        "limit": {}, "text": "none", "in_force": None
    }  # fmt: skip


def test_env_show_and_a_run_say_a_stray_limit_under_none() -> None:
    from pgrig.cli import env as env_cli
    from pgrig.record.run import RunRecord
    from pgrig.views import disk_limit as view

    doc = {"limit": {}, "text": "none", "in_force": False, "problems": ["the kernel holds X"]}
    assert env_cli._disk_limit_lines(doc) == [
        "disk limit none: NOT in force", "  problem: the kernel holds X"
    ]  # fmt: skip
    rec = RunRecord(env_name="db1", workload="pgbench:tpcb", clients=1, threads=1)
    rec.disk_limit = {"limit": {}, "text": "none", "in_force": None,
                      "reapplied_because": ["the kernel holds X"]}  # fmt: skip
    assert view.items(rec) == [
        ("disk limit", "none"),
        ("disk limit put back", "the kernel holds X"),
    ]


def test_a_fraction_after_a_leading_zero_is_decimal_as_postgresql_reads_it() -> None:
    """PostgreSQL reads 010.5kB as 10.5kB (a fraction: strtod), 0500 as octal 320 (strtol):
    only the whole number is refused."""
    limit = parse("rbps=010.5MB,wbps=0.5MB,riops=+500")
    assert limit is not None and (limit.rbps, limit.wbps, limit.riops) == (
        11010048,
        524288,
        500,
    )


def test_env_show_of_a_stopped_server_says_its_limit_as_env_set_does() -> None:
    """A stopped server's limit read "NOT in force" with "problem: the server is not running"
    in `env show`, where `env set` said "in force at the next start" and `env list` and
    env_status see no fault."""
    from pgrig.cli import env as env_cli

    doc = {"limit": {"wiops": 300}, "text": "wiops=300", "in_force": False,
           "problems": ["the server is not running"]}  # fmt: skip
    assert env_cli._disk_limit_lines(doc, stopped=True) == [
        "disk limit wiops=300: server is stopped: in force at the next start"
    ]
    # running, the same record is a fault; a damaged one is one, stopped or not
    assert env_cli._disk_limit_lines(doc)[0] == "disk limit wiops=300: NOT in force"
    damaged = {**doc, "damaged": True, "text": "?", "problems": ["wiops must be > 0"]}
    assert env_cli._disk_limit_lines(damaged, stopped=True) == [
        "disk limit ?: NOT in force", "  problem: wiops must be > 0"
    ]  # fmt: skip


def test_a_stop_lifts_the_limit_and_a_failed_one_puts_it_back(
    env: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 43, classes 3 and 5: `env stop` at wiops=30 after a `db generate` waited 60 s
    silent on the shutdown checkpoint, then exited 2 "did not stop" while the server stopped
    just after. The limit is lifted for the stop; a stop that fails holds the server again."""
    from types import SimpleNamespace

    from pgrig.provision.server import postmaster

    done: list[str] = []
    running = [True]
    monkeypatch.setattr(postmaster, "is_running", lambda _env: running[0])
    monkeypatch.setattr(disk_throttle, "lift", lambda _env: done.append("lift"))
    monkeypatch.setattr(disk_throttle, "apply", lambda _env, _pid: done.append("apply"))
    monkeypatch.setattr(postmaster, "pid", lambda _env: 100)

    def pg_ctl(_env: Environment, *args: str, **_kw: object) -> SimpleNamespace:
        done.append("pg_ctl " + args[-1])
        running[0] = not stops
        return SimpleNamespace(returncode=0 if stops else 1, stderr="server does not shut down")

    monkeypatch.setattr(postmaster, "pg_ctl", pg_ctl)
    stops = True
    assert postmaster.stop(env) is True
    assert done == ["lift", "pg_ctl stop"]
    done.clear()
    running[0], stops = True, False
    with pytest.raises(PgrigError, match="did not stop"):
        postmaster.stop(env)
    assert done == ["lift", "pg_ctl stop", "apply"]
