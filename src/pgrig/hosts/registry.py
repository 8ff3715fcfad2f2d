"""The hosts pgrig knows: name -> how to reach it over SSH.

API (used by the CLI and by the run-time side):

    Host(name, user, address, port=22, identity=None, known_hosts=None)
        .identity      path of the private key file (None: the SSH agent / ~/.ssh defaults)
        .known_hosts   path of the known_hosts file the host key is verified against
                       (None: ~/.ssh/known_hosts)
        .target        "user@address:port" as printed
        .to_json()     the stored document (paths only: a key's content is never read here)
    parse_ssh_target("root@10.0.0.5:2222") -> (user, address, port)
    add(host) / get(name) / remove(name) / all_hosts()
    state_dir(name)   <home>/hosts/<name>/: what pgrig records about the host (checks, tune state)

Each host is one file, <home>/hosts/<name>.json, written atomically. "localhost" and "local"
are reserved: they mean this machine, which needs no entry.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pgrig import paths, safe_write
from pgrig.errors import NotFound, PgrigError
from pgrig.request.values import ascii_digits

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_USER = re.compile(r"^[A-Za-z_][A-Za-z0-9._-]{0,31}$")
_ADDRESS = re.compile(r"^[A-Za-z0-9.:_-]{1,253}$")
RESERVED = ("localhost", "local")


@dataclass(frozen=True)
class Host:
    name: str
    user: str
    address: str
    port: int = 22
    identity: str | None = None
    known_hosts: str | None = None

    def __post_init__(self) -> None:
        check_name(self.name)
        if not _USER.match(self.user):
            raise PgrigError(f"host {self.name}: invalid user name {self.user!r}")
        if not _ADDRESS.match(self.address) or self.address.startswith("-"):
            raise PgrigError(f"host {self.name}: invalid address {self.address!r}")
        if not 0 < self.port < 65536:
            raise PgrigError(f"host {self.name}: invalid port {self.port}")

    @property
    def target(self) -> str:
        return f"{self.user}@{self.address}:{self.port}"

    @property
    def known_hosts_path(self) -> Path:
        return Path(self.known_hosts or Path.home() / ".ssh" / "known_hosts")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Host:
        return cls(
            name=str(doc["name"]),
            user=str(doc["user"]),
            address=str(doc["address"]),
            port=int(doc.get("port", 22)),
            identity=doc.get("identity"),
            known_hosts=doc.get("known_hosts"),
        )


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise PgrigError(
            f"invalid host name {name!r}: letters, digits, '.', '_' and '-', at most 63"
        )
    if name in RESERVED:
        raise PgrigError(f"{name!r} is this machine: it needs no host entry")
    return name


def parse_ssh_target(text: str) -> tuple[str, str, int]:
    """USER@ADDRESS[:PORT] (an IPv6 address in brackets: root@[fd00::5]:22)."""
    user, at, rest = text.partition("@")
    if not at or not user or not rest:
        raise PgrigError(f"--ssh {text!r}: expected USER@ADDRESS[:PORT]")
    port = 22
    if rest.startswith("["):
        address, _, tail = rest[1:].partition("]")
        if tail:
            if not tail.startswith(":") or not ascii_digits(tail[1:]):
                raise PgrigError(f"--ssh {text!r}: expected [ADDRESS]:PORT")
            port = int(tail[1:])
    elif rest.count(":") == 1:
        address, _, port_text = rest.partition(":")
        if not ascii_digits(port_text):
            raise PgrigError(f"--ssh {text!r}: the port must be a number")
        port = int(port_text)
    else:
        address = rest
    return user, address, port


def hosts_dir() -> Path:
    return paths.home() / "hosts"


def _file(name: str) -> Path:
    return hosts_dir() / f"{check_name(name)}.json"


def state_dir(name: str) -> Path:
    """What pgrig records about a host (host check results, `host tune` saved state)."""
    return hosts_dir() / check_name(name)


def exists(name: str) -> bool:
    return _file(name).exists()


def get(name: str) -> Host:
    f = _file(name)
    if not f.exists():
        known = ", ".join(h.name for h in all_hosts()) or "none"
        raise NotFound(f"no host {name!r} (known: {known}; add one with `pgrig host add`)")
    return Host.from_json(json.loads(f.read_text()))


def add(host: Host, *, replace: bool = False) -> None:
    f = _file(host.name)
    if f.exists() and not replace:
        raise PgrigError(f"host {host.name!r} exists already (`pgrig host remove` it first)")
    f.parent.mkdir(parents=True, exist_ok=True)
    safe_write.write_text(f, json.dumps(host.to_json(), indent=2) + "\n", mode=0o600)


def remove(name: str) -> Host:
    host = get(name)
    _file(name).unlink()
    return host


def all_hosts() -> list[Host]:
    d = hosts_dir()
    if not d.is_dir():
        return []
    return [Host.from_json(json.loads(f.read_text())) for f in sorted(d.glob("*.json"))]
