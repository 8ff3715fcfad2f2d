"""Where a run's server was, as every surface says it: managed here (pgrig made it on this
machine), managed on another host (`env create --on HOST`: pgrig made it there) or external
(`env add --dsn`: pgrig only connects).

Runs recorded before the host was kept (extra["server_on"]) said `managed: false` for a
server pgrig made on another host; such a run is known by its host roles: a host sampled as
"db" is one pgrig made (an external server's host is never sampled).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pgrig.archive.records import RunRecord


@dataclass(frozen=True)
class RunEnvironment:
    name: str
    kind: Literal["managed", "remote", "external"]
    on: str | None  # the host of a remote one
    target: str | None  # the masked DSN or address

    @property
    def managed(self) -> bool:
        """pgrig made the server (here or on another host)."""
        return self.kind != "external"

    @property
    def here(self) -> bool:
        """The server ran on this machine, made by pgrig (its processes, disk and log are
        this machine's)."""
        return self.kind == "managed"

    def text(self, via: str) -> str:
        """'lab (managed, via direct)', 'lab (managed on db1, via direct)' or
        'prod (external postgresql://..., via direct)'."""
        if self.kind == "managed":
            where = "managed"
        elif self.kind == "remote":
            where = f"managed on {self.on}" if self.on else "managed on another host"
        else:
            where = f"external {self.target or ''}".strip()
        return f"{self.name} ({where}, via {via})"

    def as_dict(self) -> dict[str, str | bool | None]:
        return {"name": self.name, "kind": self.kind, "managed": self.managed, "on": self.on,
                "target": self.target}  # fmt: skip


def of(rec: RunRecord) -> RunEnvironment:
    extra = rec.extra if isinstance(rec.extra, dict) else {}
    on = extra.get("server_on")
    if on is None:  # an older run: the host sampled as its database host
        roles = extra.get("host_roles") or {}
        on = next((str(h) for h, rs in roles.items() if "db" in (rs or [])), None)
    kind: Literal["managed", "remote", "external"]
    if on is not None:
        kind = "remote"
    elif rec.managed:
        kind = "managed"
    else:
        kind = "external"
    return RunEnvironment(rec.env_name, kind, str(on) if on else None, rec.target)
