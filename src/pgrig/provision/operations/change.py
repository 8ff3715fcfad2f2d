"""`env set`: the change asked checked, then applied to the environment here (its settings,
its replication mode or its insights layer; or its disk limit) or forwarded to a host's pgrig,
and what changed described (`--json`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pgrig.errors import PgrigError
from pgrig.provision import env_settings
from pgrig.provision.server import disk_throttle, postmaster, replicas, server_settings
from pgrig.provision.settings import auto_conf, catalog, config
from pgrig.provision.settings.config import Layers
from pgrig.provision.state.environment import Environment, require_managed
from pgrig.request import disk_limit as disk_limits
from pgrig.request.disk_limit import DiskLimit
from pgrig.request.environment import REMOTE_DISK_LIMIT

Say = Callable[[str], None]


@dataclass(frozen=True)
class Change:
    """One `env set`: NAME=VALUE settings and resets, or the replication mode, or the
    insights layer (one of the three)."""

    assignments: list[str] = field(default_factory=list)
    reset: list[str] = field(default_factory=list)
    insights: bool | None = None
    sync: str | None = None

    @property
    def empty(self) -> bool:
        return (
            not self.assignments and not self.reset and self.insights is None and self.sync is None
        )

    def in_words(self) -> str:
        """'settings work_mem=64MB; reset jit', 'insights layer off', 'replication sync on'."""
        if self.insights is not None:
            return f"insights layer {'on' if self.insights else 'off'}"
        if self.sync is not None:
            return f"replication sync {self.sync}"
        parts = [f"settings {' '.join(self.assignments)}"] if self.assignments else []
        parts += [f"reset {' '.join(self.reset)}"] if self.reset else []
        return "; ".join(parts)


def check(change: Change, disk_limit: str | None = None) -> None:
    """The change is one thing: settings, --sync, --insights or --disk-limit alone."""
    if disk_limit is not None:
        if not change.empty:
            raise PgrigError("give --disk-limit alone, not with other changes")
        return
    if change.empty:
        raise PgrigError(
            "nothing to change: give NAME=VALUE settings, --reset NAME, --sync MODE, "
            "--disk-limit LIMITS or --insights/--no-insights"
        )
    one = change.insights is not None or change.sync is not None
    if one and (
        change.assignments
        or change.reset
        or (change.insights is not None and change.sync is not None)
    ):
        raise PgrigError("give --insights/--no-insights or --sync alone, not with other changes")


def forward(remote: Environment, change: Change, *, as_json: bool, force: bool, say: Say) -> int:
    """The change made by the pgrig of the environment's host; replicas on other hosts take
    the primary's settings, not its sync mode or insights layer. The worst exit status."""
    from pgrig.provision.remote import environments as remote_env

    argv = ["env", "set", remote.name, *change.assignments]
    for r in change.reset:
        argv += ["--reset", r]
    if change.insights is not None:
        argv.append("--insights" if change.insights else "--no-insights")
    if change.sync is not None:
        argv += ["--sync", change.sync]
    forced = ["--force"] if force else []
    same = change.insights is None and change.sync is None
    follow = remote_env.same_for_replicas([*argv, *forced]) if same else None
    return remote_env.forward(
        remote, [*argv, *(["--json"] if as_json else []), *forced], say=say,
        refresh_after=True, replicas_too=follow,
    )  # fmt: skip


@dataclass(frozen=True)
class Applied:
    """What `env set` did here: "restart", "reload" or "none" (the server is stopped or
    nothing changed), the setting names that changed, and the layers before (for --json)."""

    action: str
    changed: list[str]
    before: Layers


def apply(env: Environment, change: Change) -> Applied:
    """The change on the (locked) environment here (a damaged one refused first)."""
    env.check_intact()
    before_layers = config.layers(env)
    if change.sync is not None:
        before = dict(before_layers.topology)
        action = replicas.set_sync(env, change.sync)
        changed = config.changed_names(before, config.layers(env).topology)
    elif change.insights is not None:
        action, changed = set_enabled(env.name, change.insights)
    else:
        action, changed = env_settings.set_settings(
            env.name, config.parse_assignments(change.assignments), change.reset
        )
    return Applied(action, changed, before_layers)


def set_enabled(name: str, enabled: bool) -> tuple[str, list[str]]:
    """Apply or remove the insights layer; returns (action, changed setting names) as
    `env set` does: "restart" when shared_preload_libraries changed, "reload", or "none"."""
    env = Environment.load(name)
    require_managed(env, "change its insights layer (insights use what the server offers)")
    if env.insights == enabled:
        return "none", []

    def switch(env: Environment) -> None:
        env.insights = enabled

    applied = server_settings.change_layers(env, switch, keep_unchanged=True)
    return applied.action, applied.changed


def document(name: str, before: Layers, changed: list[str], action: str) -> dict[str, Any]:
    """`env set --json`: each changed setting's effective value before and after and the layer
    that sets it now, what was done (restart, reload, or none: stopped or unchanged) and the
    ALTER SYSTEM entries that hide a change."""
    env = Environment.load(name)
    old, new = before.merged(), config.layers(env).merged()
    hidden = {o.name: o.describe() for o in auto_conf.overrides(env) if o.name in changed}
    settings = catalog.load_catalog(env.bindir or "", env.version or "").settings

    def value(layers: dict[str, tuple[str, str]], k: str) -> tuple[str | None, str]:
        if k in layers:
            return layers[k]
        known = settings.get(k.lower())  # no layer sets it: PostgreSQL's default
        return (known.default_text() if known else None), "default"

    rows = []
    for k in changed:
        after, layer = value(new, k)
        rows.append(
            {
                "name": k,
                "before": value(old, k)[0],
                "after": after,
                "layer": layer,
                "overridden_by_auto_conf": hidden.get(k),
            }
        )
    return {"env": name, "action": action, "changed": rows}


def hidden_by_auto_conf(name: str, changed: list[str]) -> str | None:
    """A change that postgresql.auto.conf (ALTER SYSTEM) overrides, said (None: none)."""
    hidden = [o for o in auto_conf.overrides(Environment.load(name)) if o.name in changed]
    return auto_conf.message(hidden) if hidden else None


# --- `env set NAME --disk-limit ...` ------------------------------------------------------------


@dataclass(frozen=True)
class DiskLimitChange:
    """What `env set --disk-limit` did: the limits before and after (described), whether it
    changed and whether the server runs (in force at once, else at its next start)."""

    name: str
    before: str
    after: str
    changed: bool
    running: bool
    removed: bool
    where: str = ""  # how and on which disks the kernel holds it

    @property
    def action(self) -> str:
        return ("applied" if self.running else "next start") if self.changed else "unchanged"

    def as_dict(self) -> dict[str, Any]:
        rows = [{"name": "disk_limit", "before": self.before, "after": self.after}]
        return {"env": self.name, "action": self.action, "changed": rows if self.changed else []}


def parse_disk_limit(name: str, spec: str) -> DiskLimit | None:
    """The limit asked (None: remove it), refused for an environment on another host."""
    from pgrig.provision.remote import environments as remote_env

    limit = disk_limits.parse(spec)
    if remote_env.record(name) is not None:
        raise PgrigError(REMOTE_DISK_LIMIT)
    disk_limits.check_floor(limit)
    return limit


def set_disk_limit(env: Environment, limit: DiskLimit | None) -> DiskLimitChange:
    """The limit on the (locked) environment: in force at once on a running server.

    All that is said of the change is worked out before it is made: a damaged record (which
    this command replaces or removes) is described as it is, so no error can come after the
    kernel's files and env.json changed (an error exit then would say "nothing changed")."""
    env.check_intact()
    old = describe_record(env.disk_limit)
    where = disk_throttle.where(env) if limit else ""
    _before, changed = env_settings.set_disk_limit(env.name, limit)
    running = postmaster.is_running(env)
    return DiskLimitChange(
        env.name, old, disk_limits.describe(limit), changed, running, limit is None,
        where if changed else "",
    )  # fmt: skip


def describe_record(record: dict[str, Any] | None) -> str:
    """env.json's disk limit for people, "damaged (...)" where it is not a limit."""
    try:
        return disk_limits.describe(DiskLimit.from_dict(record) if record else None)
    except PgrigError:
        return f"damaged ({record!r})"
