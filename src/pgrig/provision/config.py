"""Settings layers and the generated `pgrig.conf` of managed environments.

Precedence, lowest first: PostgreSQL defaults < insights < profile < environment < run. The
profile and environment layers are recorded in env.json (`profile_settings`, `settings`); the run
layer exists only while a run that asked for settings is active (`<env>/run-layer.json`). The
insights layer is pgrig's own (provision/insights_layer.py): every user layer overrides it, except
shared_preload_libraries, where its libraries are appended to the user's.

`postgresql.conf` stays as initdb wrote it plus one appended line,
`include_if_exists = 'pgrig.conf'`. pgrig.conf holds the base layer (listen address, port,
socket dir) and the effective value of every overridden setting, each commented with the layer
it came from. It is rewritten atomically (temp file + rename) on every change.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pgrig.errors import InvalidSetting, PgrigError
from pgrig.provision import insights_layer, osuser
from pgrig.provision.environment import Environment

CONF_NAME = "pgrig.conf"
INCLUDE_LINE = f"include_if_exists = '{CONF_NAME}'"
RUN_LAYER_FILE = "run-layer.json"
LAYERS = ("base", "insights", "profile", "environment", "run")


@dataclass
class Layers:
    base: dict[str, str] = field(default_factory=dict)
    insights: dict[str, str] = field(default_factory=dict)
    profile: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    run: dict[str, str] = field(default_factory=dict)
    profile_name: str = "default"

    def merged(self) -> dict[str, tuple[str, str]]:
        """name -> (effective value, layer it came from)."""
        out: dict[str, tuple[str, str]] = {}
        for layer in LAYERS:
            for name, value in getattr(self, layer).items():
                out[name.lower()] = (value, layer)
        libs = self.insights.get(insights_layer.PRELOAD)
        user = out.get(insights_layer.PRELOAD)
        if libs and user is not None and user[1] != "insights":  # merged, never hidden
            out[insights_layer.PRELOAD] = (insights_layer.merge_preload(user[0], libs), user[1])
        return out

    def effective(self) -> dict[str, str]:
        return {k: v for k, (v, _) in self.merged().items()}

    def origins(self) -> dict[str, str]:
        """name -> human layer label, for error messages."""
        labels = {
            "base": "pgrig base layer",
            "insights": "pgrig insights layer",
            "profile": f"profile {self.profile_name!r}",
            "environment": "environment settings",
            "run": "run settings",
        }
        return {k: labels[layer] for k, (_, layer) in self.merged().items()}


# --- parsing user input ------------------------------------------------------------------------


def parse_assignments(items: Iterable[str]) -> dict[str, str]:
    """['shared_buffers=1GB', "work_mem = '64MB'"] -> {'shared_buffers': '1GB', ...}."""
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise InvalidSetting(f"expected NAME=VALUE, got {item!r}")
        name, value = item.split("=", 1)
        name, value = name.strip(), value.strip()
        if not name:
            raise InvalidSetting(f"expected NAME=VALUE, got {item!r}")
        if len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1].replace("''", "'")  # postgresql.conf-style quoting
        out[name.lower()] = value
    return out


# --- layers of an environment ------------------------------------------------------------------


def base_settings(env: Environment) -> dict[str, str]:
    return {
        "listen_addresses": "127.0.0.1",
        "port": str(env.port),
        "unix_socket_directories": str(env.socket_dir),
    }


def run_layer(env: Environment) -> dict[str, str]:
    f = env.dir / RUN_LAYER_FILE
    if not f.exists():
        return {}
    try:
        return {str(k): str(v) for k, v in json.loads(f.read_text()).items()}
    except (OSError, ValueError):
        return {}


def layers(
    env: Environment,
    run: Mapping[str, str] | None = None,
    insights_runtime: Mapping[str, str] | None = None,
) -> Layers:
    """The layers of `env`; `run` replaces the recorded run layer when given;
    `insights_runtime` overrides RUNTIME_KEYS of the insights layer while a run lasts."""
    insights = insights_layer.settings(env)
    if insights_runtime:
        insights.update(
            {k: v for k, v in insights_runtime.items() if k in insights_layer.RUNTIME_KEYS}
        )
    return Layers(
        base=base_settings(env),
        insights=insights,
        profile=dict(env.profile_settings),
        environment=dict(env.settings),
        run=dict(run) if run is not None else run_layer(env),
        profile_name=env.profile,
    )


# --- pgrig.conf --------------------------------------------------------------------------------


def quote(value: str) -> str:
    """A postgresql.conf string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def render(ls: Layers) -> str:
    lines = [
        "# Generated by pgrig: do not edit, use `pgrig env set` (rewritten on every change).",
        "# Layers, lowest priority first: PostgreSQL defaults < insights < profile < environment"
        " < run.",
        "",
    ]
    merged = ls.merged()
    for layer in LAYERS:
        names = sorted(n for n, (_, src) in merged.items() if src == layer)
        if not names:
            continue
        title = {
            "base": "base: fixed by pgrig",
            "insights": "insights: pg_stat_statements, auto_explain, logging (pgrig env set"
            " --no-insights removes it)",
            "profile": f"profile {ls.profile_name!r}",
            "environment": "environment (pgrig env create --set / pgrig env set)",
            "run": "run (active only during a run)",
        }[layer]
        lines.append(f"# --- {title}")
        for name in names:
            value = merged[name][0]
            note = f"# {layer}"
            below = [
                (lower, getattr(ls, lower)[name])
                for lower in LAYERS[: LAYERS.index(layer)]
                if name in getattr(ls, lower)
            ]
            if value != getattr(ls, layer)[name]:  # shared_preload_libraries, merged
                note += " + insights libraries"
            elif below:
                note += "; overrides " + ", ".join(f"{lay} {quote(v)}" for lay, v in below)
            lines.append(f"{name} = {quote(value)}  {note}")
        lines.append("")
    return "\n".join(lines)


def parse_conf(text: str) -> dict[str, str]:
    """Settings of a postgresql.conf-style text (simple form: name = 'value' or bare)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"\s*([A-Za-z_][\w.$]*)\s*=?\s*('(?:[^']|'')*'|[^\s#]+)", line)
        if not m or m.group(1).lower() in ("include", "include_if_exists", "include_dir"):
            continue
        v = m.group(2)
        if v.startswith("'"):
            v = v[1:-1].replace("''", "'").replace("\\\\", "\\")
        out[m.group(1).lower()] = v
    return out


def write_conf(
    env: Environment,
    run: Mapping[str, str] | None = None,
    insights_runtime: Mapping[str, str] | None = None,
) -> Layers:
    """Regenerate pgrig.conf from env.json (and the run layer) atomically."""
    ls = layers(env, run, insights_runtime)
    target = env.datadir / CONF_NAME
    tmp = env.datadir / f".{CONF_NAME}.{os.getpid()}.tmp"
    tmp.write_text(render(ls))
    osuser.give_to_server(tmp, 0o600)
    os.replace(tmp, target)
    return ls


def ensure_include(datadir: Path) -> None:
    """Append the include line to postgresql.conf once (the rest of it stays as initdb wrote)."""
    conf = datadir / "postgresql.conf"
    text = conf.read_text()
    if any(line.strip() == INCLUDE_LINE for line in text.splitlines()):
        return
    with conf.open("a") as f:
        f.write(("" if text.endswith("\n") else "\n") + INCLUDE_LINE + "\n")


def changed_names(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


# --- per-run settings --------------------------------------------------------------------------


class RunSettings:
    """Returned by apply_run_settings: call it (once or more) to restore the previous config.

    `action` says what applying did: "restart", "reload" or "none"; `changed` lists the names
    whose effective value changed.
    """

    def __init__(self, env: Environment, changed: list[str], action: str) -> None:
        self.env, self.changed, self.action = env, changed, action
        self.restored = not changed and not (env.dir / RUN_LAYER_FILE).exists()

    def __call__(self) -> str:
        """Restore; returns what that took ("restart", "reload" or "none")."""
        if self.restored:
            return "none"
        from pgrig.provision import postmaster, run_journal

        (self.env.dir / RUN_LAYER_FILE).unlink(missing_ok=True)
        write_conf(self.env, run={})
        self.restored = True
        action = postmaster.restart_or_reload(self.env, self.changed)
        run_journal.done(self.env, run_journal.CONF)
        return action


def apply_run_settings(env: Environment, settings: Mapping[str, str]) -> Callable[[], str]:
    """Validate and apply per-run settings (reload or restart as needed).

    Returns a callable that restores the environment's own configuration.
    """
    from pgrig.provision import catalog, postmaster, run_journal, validator

    if not settings:
        return RunSettings(env, [], "none")
    if not env.managed:
        raise PgrigError(
            f"environment {env.name!r} is external: pgrig cannot change its configuration "
            "(per-run settings need a managed environment)"
        )
    run = validator.normalize(settings)
    validator.check_reserved(run)
    major = env.major or 0
    cat = catalog.load_catalog(env.bindir or "", env.version or "")
    new = layers(env, run)
    validator.validate(env.bindir or "", major, cat, run, new.origins())
    before = layers(env, {}).effective()
    run_journal.note_conf(env, changed_names(before, new.effective()))  # before any change
    tmp = env.dir / f".{RUN_LAYER_FILE}.tmp"
    tmp.write_text(json.dumps(run, indent=2, sort_keys=True))
    os.replace(tmp, env.dir / RUN_LAYER_FILE)
    write_conf(env, run)
    changed = changed_names(before, new.effective())
    restore = RunSettings(env, changed, "none")
    try:
        restore.action = postmaster.restart_or_reload(env, changed)
    except PgrigError as e:
        restore()  # put the previous configuration back before reporting the failure
        if not postmaster.is_running(env):
            postmaster.start(env)
        raise PgrigError(f"run settings not applied: {e}; previous settings restored") from None
    return restore
