"""Running one of pgrig's playbooks on one host, through ansible-runner.

    run_playbook(host, "provision.yml", extravars, check=False, become=False) -> PlaybookResult
        .ok, .changed (names of the tasks that changed, or would in check mode), .tasks (every
        task with its state), .elapsed; a failure raises a HostError with one line.

The inventory is generated from the Host (its address, user, port, identity and known_hosts:
StrictHostKeyChecking=yes, BatchMode, no password). Nothing of the user's Ansible
configuration is read (ANSIBLE_CONFIG points to an empty file), facts are not gathered, and
SSH pipelining and a short-lived ControlMaster keep each task to one round trip.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pgrig.hosts import ssh
from pgrig.hosts.registry import Host
from pgrig.record.json_values import JsonObject


@dataclass
class PlaybookResult:
    ok: bool
    check: bool
    changed: list[str] = field(default_factory=list)
    tasks: list[dict[str, str]] = field(default_factory=list)  # task, state (msg: failed)
    elapsed: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "check": self.check,
            "changed": self.changed,
            "tasks": self.tasks,
            "elapsed_s": round(self.elapsed, 2),
        }


def playbook_path(name: str) -> Path:
    return Path(str(resources.files("pgrig.hosts") / "playbooks" / name))


def inventory(host: Host, *, python3: str, become: bool) -> JsonObject:
    args = [
        "-o",
        f"UserKnownHostsFile={host.known_hosts_path}",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "BatchMode=yes",
        "-o",
        "PasswordAuthentication=no",
        "-o",
        "ConnectTimeout=10",
    ]
    hv: JsonObject = {
        "ansible_host": host.address,
        "ansible_user": host.user,
        "ansible_port": host.port,
        "ansible_ssh_common_args": " ".join(args),
        "ansible_python_interpreter": python3,
    }
    if host.identity:
        hv["ansible_ssh_private_key_file"] = host.identity
    if become:
        hv.update(ansible_become=True, ansible_become_method="sudo")
    return {"all": {"children": {"target": {"hosts": {host.name: hv}}}}}


def run_playbook(
    host: Host,
    playbook: str,
    extravars: JsonObject,
    *,
    python3: str,
    check: bool = False,
    become: bool = False,
) -> PlaybookResult:
    import ansible_runner

    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="pgrig-ansible-"))
    try:
        (work / "ansible.cfg").write_text("")
        bindir = str(Path(sys.executable).parent)
        envvars = {
            "ANSIBLE_CONFIG": str(work / "ansible.cfg"),
            "ANSIBLE_PIPELINING": "True",
            "ANSIBLE_HOST_KEY_CHECKING": "True",
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
            "ANSIBLE_NOCOLOR": "True",
            "ANSIBLE_SSH_ARGS": (
                f"-o ControlMaster=auto -o ControlPersist=15s -o ControlPath={work}/cp-%C"
            ),
            "ANSIBLE_LOCAL_TEMP": str(work / "tmp"),
            "PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        }
        runner = ansible_runner.run(
            private_data_dir=str(work),
            playbook=str(playbook_path(playbook)),
            inventory=inventory(host, python3=python3, become=become),
            extravars=extravars,
            envvars=envvars,
            cmdline="--check --diff" if check else None,
            quiet=True,
            suppress_env_files=True,
        )
        result = _summarise(host, runner, check)
    finally:
        _stop_control_master(work)
        shutil.rmtree(work, ignore_errors=True)
    result.elapsed = time.monotonic() - started
    return result


def _stop_control_master(work: Path) -> None:
    """End the ControlMaster ssh processes this run left (none must outlive pgrig)."""
    import subprocess

    for sock in work.glob("cp-*"):
        subprocess.run(
            ["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "pgrig-control"],
            capture_output=True,
            timeout=10,
            check=False,
        )


def _summarise(host: Host, runner: Any, check: bool) -> PlaybookResult:
    result = PlaybookResult(ok=runner.rc == 0, check=check)
    failure: tuple[str, str] | None = None
    unreachable: str | None = None
    for ev in runner.events:
        kind = ev.get("event", "")
        data = ev.get("event_data") or {}
        task = str(data.get("task") or "")
        res = data.get("res") or {}
        if kind == "runner_on_ok":
            changed = bool(res.get("changed"))
            result.tasks.append({"task": task, "state": "changed" if changed else "ok"})
            if changed and not any(c.startswith(f"{task}: ") for c in result.changed):
                result.changed.append(task)
        elif kind == "runner_on_skipped":
            result.tasks.append({"task": task, "state": "skipped"})
        elif kind == "runner_item_on_ok" and res.get("changed"):
            label = res.get("_ansible_item_label", res.get("item"))
            result.changed.append(f"{task}: {label}")
        elif kind in ("runner_on_failed", "runner_item_on_failed") and check:
            # In check mode a task fails when what an earlier task would create is missing.
            label = res.get("_ansible_item_label")
            if label is not None:
                result.changed.append(f"{task}: {label}")
            elif not any(c.startswith(f"{task}: ") for c in result.changed):
                result.changed.append(task)
            result.tasks.append({"task": task, "state": "would change"})
        elif kind == "runner_on_failed" and not data.get("ignore_errors"):
            msg = _failure_text(res)
            result.tasks.append({"task": task, "state": "failed", "msg": msg})
            failure = failure or (task, msg)
        elif kind == "runner_on_unreachable":
            unreachable = str(res.get("msg") or "unreachable")
    result.changed = list(dict.fromkeys(result.changed))
    if unreachable is not None:
        raise _unreachable_error(host, unreachable)
    if failure is not None:
        task, msg = failure
        if "No space left on device" in msg:
            raise ssh.DiskFull(f"host {host.name}: disk full during '{task}'")
        raise ssh.HostError(f"host {host.name}: provisioning failed at '{task}': {msg}")
    if runner.rc != 0:
        raise ssh.HostError(f"host {host.name}: ansible-playbook ended with status {runner.rc}")
    return result


def _failure_text(res: Mapping[str, object]) -> str:
    for key in ("stderr", "msg", "module_stderr", "stdout"):
        text = str(res.get(key) or "").strip()
        if text:
            lines = [ln for ln in text.splitlines() if ln.strip()]
            return lines[-1][:300]
    return "failed"


def _unreachable_error(host: Host, msg: str) -> ssh.HostError:
    where = f"host {host.name} ({host.target})"
    if "Host key verification failed" in msg or "REMOTE HOST IDENTIFICATION" in msg:
        return ssh.HostKeyChanged(f"{where}: host key not verified by known_hosts ({msg[:120]})")
    if "Permission denied" in msg:
        return ssh.AuthRefused(f"{where}: authentication refused")
    return ssh.Unreachable(f"{where}: unreachable ({msg.strip().splitlines()[-1][:200]})")
