"""CPU lists, taskset prefixes, pinning a process tree and the open-files limit."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from pgrig.errors import PgrigError
from pgrig.load import pinning


def test_parse_and_format_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pinning, "available_cpus", lambda: set(range(8)))
    assert pinning.parse_cpus("0-3,6") == [0, 1, 2, 3, 6]
    assert pinning.parse_cpus(" 5 , 1-2 ") == [1, 2, 5]
    assert pinning.parse_cpus(None) is None and pinning.parse_cpus("") is None
    assert pinning.format_cpus([6, 0, 1, 2, 3]) == "0-3,6"
    assert pinning.format_cpus([4]) == "4"
    assert pinning.client_prefix([0, 1]) == ["taskset", "-c", "0-1"]
    assert pinning.client_prefix(None) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("9", r"--server-cpus: CPU 9 not available on this machine \(usable: 0-7\)"),
        ("a", r"--server-cpus: 'a' is not a CPU number or range"),
        ("3-1", r"--server-cpus: bad CPU range '3-1'"),
        ("-1", r"--server-cpus: '-1' is not a CPU number or range"),
    ],
)
def test_bad_cpu_lists(monkeypatch: pytest.MonkeyPatch, text: str, message: str) -> None:
    monkeypatch.setattr(pinning, "available_cpus", lambda: set(range(8)))
    with pytest.raises(PgrigError, match=message):
        pinning.parse_cpus(text, "--server-cpus")


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
        with pinning.server_pinned(parent.pid, usable[-1:]):
            assert os.sched_getaffinity(tree[1]) == {usable[-1]}
        assert os.sched_getaffinity(tree[1]) == set(usable)
    finally:
        for p in pinning.process_tree(parent.pid)[::-1]:
            os.kill(p, 9)
        parent.wait()


def test_raise_nofile_in_a_child_with_a_low_limit() -> None:
    """A process started with 1,024 open files gets enough for 1,000 clients."""
    code = (
        "import resource; from pgrig.load import pinning; "
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
