"""Settings layers and the generated `pgrig.conf` of managed environments.

Precedence, lowest first: PostgreSQL defaults < insights < topology < profile < environment < run
(record/run.py SETTINGS_LAYERS defines it).
The topology layer is pgrig's own too (provision/topology_layer.py): synchronous replication
of an environment with replicas, WAL archiving set up for pgBackRest. The
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
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pgrig import safe_write
from pgrig.errors import InvalidSetting
from pgrig.provision.settings import insights_layer, topology_layer
from pgrig.provision.state.environment import Environment
from pgrig.provision.system import osuser
from pgrig.record.run import SETTINGS_LAYERS, settings_layer_order

CONF_NAME = "pgrig.conf"
INCLUDE_LINE = f"include_if_exists = '{CONF_NAME}'"
RUN_LAYER_FILE = "run-layer.json"
LAYERS = SETTINGS_LAYERS


@dataclass
class Layers:
    base: dict[str, str] = field(default_factory=dict)
    insights: dict[str, str] = field(default_factory=dict)
    topology: dict[str, str] = field(default_factory=dict)
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
            "topology": "pgrig topology layer (replicas, archiving)",
            "profile": f"profile {self.profile_name!r}",
            "environment": "environment settings",
            "run": "run settings",
        }
        return {k: labels[layer] for k, (_, layer) in self.merged().items()}


# --- parsing user input ------------------------------------------------------------------------


def parse_assignments(items: Iterable[str]) -> dict[str, str]:
    """['shared_buffers=1GB', "work_mem = '64MB'"] -> {'shared_buffers': '1GB', ...}: `env
    create --set` and `env set`'s arguments, read as every NAME=VALUE input is
    (request.values.name_values: a setting given twice is refused naming both)."""
    from pgrig.request.values import name_values

    return name_values(items, setting=True, error=InvalidSetting)


# --- layers of an environment ------------------------------------------------------------------


def base_settings(env: Environment) -> dict[str, str]:
    return {
        "listen_addresses": f"127.0.0.1,{env.listen}" if env.listen else "127.0.0.1",
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
        topology=topology_layer.settings(env),
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
        f"# Layers, lowest priority first: {settings_layer_order()}.",
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
            "topology": "topology: replication and WAL archiving (pgrig env set --sync)",
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
    # atomic, or over the old file's blocks on a full disk (undoing a run must still work)
    safe_write.replace_text(
        env.datadir / CONF_NAME,
        render(ls),
        prepare=lambda tmp: osuser.give_to_server(tmp, 0o600),
    )
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
