"""Ansible inventories (INI or YAML) into hosts, read by Ansible's own inventory code.

Each inventory host becomes a Host named as in the inventory, from its variables (group
variables included): ansible_host (default: the name), ansible_user (default: the user
running pgrig), ansible_port (22), ansible_ssh_private_key_file, and a UserKnownHostsFile
given in ansible_ssh_common_args / ansible_ssh_extra_args. Nothing else is taken.
"""

from __future__ import annotations

import contextlib
import getpass
import io
import re
import shlex
from pathlib import Path
from typing import Any

from pgrig.errors import PgrigError
from pgrig.hosts.registry import Host


def read(path: Path) -> list[Host]:
    if not path.is_file():
        raise PgrigError(f"no inventory file {path}")
    try:
        from ansible.inventory.manager import InventoryManager
        from ansible.parsing.dataloader import DataLoader
        from ansible.vars.manager import VariableManager
    except ImportError as e:  # pragma: no cover - a dependency
        raise PgrigError("ansible-core is not installed (pip install ansible-core)") from e
    loader = DataLoader()
    said = io.StringIO()  # Ansible's warnings: its reasons, in pgrig's one-line error
    with contextlib.redirect_stderr(said), contextlib.redirect_stdout(said):
        inventory = InventoryManager(loader=loader, sources=[str(path)])
    if "No inventory was parsed" in said.getvalue():
        raise PgrigError(f"{path}: Ansible cannot read it as an inventory ({_reasons(said)})")
    if not inventory.hosts and not inventory.get_hosts():
        raise PgrigError(f"{path}: no hosts found (an Ansible INI or YAML inventory?)")
    variables = VariableManager(loader=loader, inventory=inventory)
    hosts = []
    for h in inventory.get_hosts():
        hv: dict[str, Any] = variables.get_vars(host=h)
        hosts.append(_host(h.name, hv, path))
    return hosts


def _reasons(said: io.StringIO) -> str:
    """Why each of Ansible's inventory plugins refused the file, on one line."""
    refusal = re.compile(r"Failed to parse inventory with '(\w+)' plugin: (.*)")
    found = [f"{m.group(1)}: {m.group(2).strip()}" for m in refusal.finditer(said.getvalue())]
    return "; ".join(found) or "no inventory plugin could parse it"


def _host(name: str, hv: dict[str, Any], source: Path) -> Host:
    identity = hv.get("ansible_ssh_private_key_file") or hv.get("ansible_private_key_file")
    args = " ".join(
        str(hv.get(k) or "") for k in ("ansible_ssh_common_args", "ansible_ssh_extra_args")
    )
    try:
        return Host(
            name=name,
            user=str(hv.get("ansible_user") or getpass.getuser()),
            address=str(hv.get("ansible_host") or name),
            port=int(hv.get("ansible_port") or 22),
            identity=str(Path(str(identity)).expanduser()) if identity else None,
            known_hosts=_known_hosts_from_args(args),
        )
    except PgrigError as e:
        raise PgrigError(f"{source}: {e}") from e


def _known_hosts_from_args(args: str) -> str | None:
    words = shlex.split(args)
    for i, word in enumerate(words):
        opt = word
        if word == "-o" and i + 1 < len(words):
            opt = words[i + 1]
        elif word.startswith("-o"):
            opt = word[2:]
        key, _, value = opt.partition("=")
        if key.strip().lower() == "userknownhostsfile" and value.strip():
            return str(Path(value.strip().split()[0]).expanduser())
    return None
