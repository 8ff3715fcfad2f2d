"""CPU lists, taskset prefixes, pinning a process tree and the open-files limit."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from pgrig.errors import PgrigError
from pgrig.load.core import pinning
from pgrig.provision.server import affinity


def test_cpu_lists_and_formats(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pinning, "available_cpus", lambda: set(range(8)))
    assert pinning.placement("0-3,6", None) == pinning.Placement([0, 1, 2, 3, 6], None)
    assert pinning.placement(" 5 , 1-2 ", "7-7") == pinning.Placement([1, 2, 5], [7])
    assert pinning.placement("0", "7") == pinning.Placement([0], [7])  # a bare number is a CPU
    assert pinning.placement(None, "") == pinning.Placement(None, None)
    assert pinning.format_cpus([6, 0, 1, 2, 3]) == "0-3,6"
    assert pinning.format_cpus([4]) == "4"
    assert pinning.client_prefix([0, 1]) == ["taskset", "-c", "0-1"]
    assert pinning.client_prefix(None) == []


def test_counts_pick_one_cpu_per_physical_core(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """4 cores with SMT: CPUs 0-3 and their siblings 4-7 (as `lscpu` numbers them)."""
    from pgrig.machine import cpus as topology
    from pgrig.machine.sysfs import HostFs

    fs = HostFs.under(tmp_path)
    for cpu in range(8):
        d = tmp_path / f"sys/devices/system/cpu/cpu{cpu}/topology"
        d.mkdir(parents=True)
        (d / "thread_siblings_list").write_text(f"{cpu % 4},{cpu % 4 + 4}\n")
    real_spread = topology.spread
    monkeypatch.setattr(pinning, "available_cpus", lambda: set(range(8)))
    monkeypatch.setattr(
        topology, "spread", lambda n, usable, taken=(): real_spread(n, usable, taken, fs)
    )
    assert pinning.placement("2cores", None) == pinning.Placement([0, 1], None)
    assert pinning.placement("2cores", "2Cores") == pinning.Placement([0, 1], [2, 3])
    assert pinning.placement("0-1", "2cores") == pinning.Placement([0, 1], [2, 3])
    # the client avoids the server's cores, siblings included, as long as cores are left
    assert pinning.placement("0,4", "3cores") == pinning.Placement([0, 4], [1, 2, 3])
    assert pinning.placement("5cores", None).server == [0, 1, 2, 3, 4]  # 4 cores, then a sibling
    assert pinning.placement("3cores", "0-4").server == [5, 6, 7]
    assert pinning.placement(None, None).sides("pgbouncer") == {}
    both = pinning.placement("1cores", "1cores")
    assert both.sides("direct") == {"server": [0], "client": [1]}
    assert both.sides("pgbouncer") == {"server": [0], "client": [1], "pooler": [0]}


@pytest.mark.parametrize(
    ("server", "client", "message"),
    [
        ("9-9", None, r"--server-cpus: CPU 9 not available on this machine \(usable: 0-7\)"),
        ("a", None, r"--server-cpus: 'a' is not a CPU number or range"),
        ("3-1", None, r"--server-cpus: '3-1' is not a CPU number or range"),
        ("-1", None, r"--server-cpus: '-1' is not a CPU number or range"),
        ("0cores", None, r"--server-cpus: must be a whole number of cores >= 1.*'0cores'"),
        ("xcores", None, r"--server-cpus: must be a whole number of cores >= 1.*'xcores'"),
        ("9", None, r"--server-cpus: CPU 9 not available on this machine \(usable: 0-7\)"),
        ("9cores", None, r"--server-cpus 9cores: 9 CPUs asked, 8 usable on this machine"),
        (None, "3cores", r"--client-cpus 3cores: 3 CPUs asked, 2 usable .*0-5 taken by the"),
    ],
)  # fmt: skip
def test_bad_cpu_lists_and_counts(
    monkeypatch: pytest.MonkeyPatch, server: str | None, client: str | None, message: str
) -> None:
    monkeypatch.setattr(pinning, "available_cpus", lambda: set(range(8)))
    server = server if client is None else "0-5"
    with pytest.raises(PgrigError, match=message):
        pinning.placement(server, client)


def test_pin_tree_and_restore() -> None:
    usable = sorted(pinning.available_cpus())
    code = "import subprocess, sys, time; p = subprocess.Popen(['sleep', '30']); time.sleep(30)"
    parent = subprocess.Popen([sys.executable, "-c", code])
    try:
        for _ in range(100):  # until the child exists
            if len(pinning.process_tree(parent.pid)) == 2:
                break
            os.sched_yield()
            subprocess.run(["sleep", "0.02"], check=True)
        tree = pinning.process_tree(parent.pid)
        assert len(tree) == 2 and tree[0] == parent.pid
        previous = pinning.pin_tree(parent.pid, usable[:1])
        assert all(os.sched_getaffinity(p) == {usable[0]} for p in tree)
        pinning.restore(previous)
        assert all(os.sched_getaffinity(p) == set(usable) for p in tree)
        previous = pinning.pin_trees([parent.pid, tree[1]], usable[-1:])
        assert os.sched_getaffinity(tree[1]) == {usable[-1]}
        pinning.restore(previous)
        assert os.sched_getaffinity(tree[1]) == set(usable)
    finally:
        for p in pinning.process_tree(parent.pid)[::-1]:
            os.kill(p, 9)
        parent.wait()


def test_a_child_forked_while_the_tree_is_pinned_is_pinned_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The postmaster forks a backend between the listing and its own pinning: the backend
    gets the old mask (fork copies it) and must be pinned by a later pass, not left out."""
    masks = {1: {0, 1}, 2: {0, 1}}
    children: dict[int, list[int]] = {1: [2]}

    def tree(root: int, proc: str = "/proc") -> list[int]:
        return [root, *(p for child in children.get(root, []) for p in tree(child))]

    def set_mask(tid: int, mask: set[int]) -> None:
        if tid == 1 and 3 not in masks:  # a backend forked just before its parent moved
            masks[3] = set(masks[1])
            children[1].append(3)
        masks[tid] = set(mask)

    monkeypatch.setattr(affinity, "process_tree", tree)
    monkeypatch.setattr(affinity, "tasks", lambda pid, proc="/proc": [pid])
    monkeypatch.setattr(affinity.os, "sched_getaffinity", lambda tid: set(masks[tid]))
    monkeypatch.setattr(affinity.os, "sched_setaffinity", set_mask)
    previous = pinning.pin_tree(1, [1])
    assert masks == {1: {1}, 2: {1}, 3: {1}}
    assert previous == {1: {0, 1}, 2: {0, 1}, 3: {0, 1}}
    affinity.set_tree(1, {0, 1})  # a killed run's pinning put back: every thread
    assert masks == {1: {0, 1}, 2: {0, 1}, 3: {0, 1}}


def test_raise_nofile_in_a_child_with_a_low_limit() -> None:
    """A process started with 1,024 open files gets enough for 1,000 clients."""
    code = (
        "import resource; from pgrig.load.core import pinning; "
        "print(pinning.raise_nofile(pinning.nofile_for_clients(1000)), "
        "resource.getrlimit(resource.RLIMIT_NOFILE)[0])"
    )
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 1064 and os.geteuid() != 0:
        pytest.skip("hard open-files limit too low to test raising")

    def low() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))

    out = subprocess.run(
        [sys.executable, "-c", code], preexec_fn=low, capture_output=True, text=True, check=True
    ).stdout.split()
    assert int(out[0]) >= 1064 and int(out[1]) >= 1064


def test_raise_nofile_keeps_a_higher_limit() -> None:
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert pinning.raise_nofile(16) == soft
