"""The provisioning playbook and what pgrig makes of Ansible's events (no host needed)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pgrig.hosts import ansible, bundles, ssh
from pgrig.hosts.registry import Host

HOST = Host("db1", "root", "10.231.0.11", 22, "/keys/id", "/keys/known_hosts")


def test_playbook_passes_ansible_syntax_check(tmp_path: Path) -> None:
    exe = shutil.which("ansible-playbook") or str(Path(sys.executable).parent / "ansible-playbook")
    inv = tmp_path / "inv.ini"
    inv.write_text("[target]\nx ansible_host=127.0.0.1\n")
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text("")
    done = subprocess.run(
        [exe, "--syntax-check", "-i", str(inv), str(ansible.playbook_path("provision.yml"))],
        capture_output=True,
        text=True,
        env={"ANSIBLE_CONFIG": str(cfg), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr


def test_inventory_verifies_host_keys_and_never_holds_a_secret() -> None:
    inv = ansible.inventory(HOST, python3="/usr/bin/python3", become=False)
    hv = inv["all"]["children"]["target"]["hosts"]["db1"]
    assert "StrictHostKeyChecking=yes" in hv["ansible_ssh_common_args"]
    assert "UserKnownHostsFile=/keys/known_hosts" in hv["ansible_ssh_common_args"]
    assert hv["ansible_ssh_private_key_file"] == "/keys/id"  # a path only
    assert "ansible_become" not in hv
    assert not any("pass" in k for k in hv)
    become = ansible.inventory(HOST, python3="/usr/bin/python3", become=True)
    assert become["all"]["children"]["target"]["hosts"]["db1"]["ansible_become"] is True


def _runner(rc: int, events: list[dict[str, Any]]) -> Any:
    return SimpleNamespace(rc=rc, events=events)


def _ev(kind: str, task: str, **res: Any) -> dict[str, Any]:
    return {"event": kind, "event_data": {"task": task, "res": res}}


def test_summary_lists_changed_tasks() -> None:
    r = ansible._summarise(
        HOST,
        _runner(
            0,
            [
                _ev("runner_item_on_ok", "directories", changed=True, _ansible_item_label="/opt"),
                _ev("runner_on_ok", "directories", changed=True),
                _ev("runner_on_ok", "OS user", changed=False),
                _ev("runner_on_ok", "pgrig", changed=True),
            ],
        ),
        check=False,
    )
    assert r.ok and r.changed == ["directories: /opt", "pgrig"]


def test_summary_failures_are_one_line() -> None:
    full = _runner(2, [_ev("runner_on_failed", "wheels", msg="x\nwrite: No space left on device")])
    with pytest.raises(ssh.DiskFull, match=r"^host db1: disk full during 'wheels'$"):
        ansible._summarise(HOST, full, check=False)
    other = _runner(2, [_ev("runner_on_failed", "venv", stderr="Error: boom\n")])
    with pytest.raises(
        ssh.HostError, match=r"^host db1: provisioning failed at 'venv': Error: boom$"
    ):
        ansible._summarise(HOST, other, check=False)
    gone = _runner(4, [_ev("runner_on_unreachable", "dirs", msg="ssh: connect: No route to host")])
    with pytest.raises(ssh.Unreachable, match="unreachable"):
        ansible._summarise(HOST, gone, check=False)
    key = _runner(4, [_ev("runner_on_unreachable", "d", msg="Host key verification failed.")])
    with pytest.raises(ssh.HostKeyChanged):
        ansible._summarise(HOST, key, check=False)


def test_check_mode_counts_a_failure_for_want_of_a_directory_as_a_change() -> None:
    r = ansible._summarise(
        HOST,
        _runner(0, [_ev("runner_on_failed", "pgbouncer on PATH", msg="no such directory")]),
        check=True,
    )
    assert r.changed == ["pgbouncer on PATH"]


def test_bundle_tars_are_deterministic(tmp_path: Path, pgrig_home: Path) -> None:
    src = tmp_path / "18.0.0"
    (src / "bin").mkdir(parents=True)
    (src / "bin" / "postgres").write_text("#!/bin/sh\n")
    first = bundles.pg_bundle(src).read_bytes()
    bundles.pg_bundle(src).unlink()
    (src / "bin" / "postgres").touch()  # another mtime: same tar
    assert bundles.pg_bundle(src).read_bytes() == first


def test_pgbouncer_bundle_keeps_glibc_out() -> None:
    if not shutil.which("pgbouncer", path="/usr/sbin:/usr/bin"):
        pytest.skip("pgbouncer is not installed here")
    libs = [p.name for p in bundles._shared_libs(bundles.pgbouncer_binary())]
    assert any(n.startswith("libevent") for n in libs)
    assert not any(n.startswith(("libc.so", "ld-linux", "libm.so")) for n in libs)


def test_provisioning_record_is_read_back_checked(tmp_path: Path, monkeypatch) -> None:
    """provisioned.json as `host provision` writes it reads back whole; a key of the wrong type
    (a damaged file) reads as missing, so the check says what is installed instead of
    failing on it."""
    import json

    from pgrig.hosts import provisioning, registry
    from pgrig.provision.remote import environments

    monkeypatch.setattr(registry, "state_dir", lambda name: tmp_path / name)
    assert provisioning.provisioned("db1") is None
    record = {"host": "db1", "check": False, "changed": [], "pg": ["18.1"], "pgbouncer": "1.24",
              "pgrig": "abc", "python3": "3.11.2", "elapsed_s": 1.5,
              "at": "2026-12-07T19:00:00Z"}  # fmt: skip
    (tmp_path / "db1").mkdir()
    (tmp_path / "db1" / "provisioned.json").write_text(json.dumps(record))
    assert provisioning.provisioned("db1") == record
    environments._check_provisioned(HOST, "18")  # installed: no error

    (tmp_path / "db1" / "provisioned.json").write_text(json.dumps({**record, "pg": "18.1"}))
    assert "pg" not in (provisioning.provisioned("db1") or {})
    with pytest.raises(
        Exception, match=r"PostgreSQL 18 is not installed on host db1 \(it has none\)"
    ):
        environments._check_provisioned(HOST, "18")
