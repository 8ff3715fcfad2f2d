"""The settings catalogue of one exact server version.

Built from `postgres --describe-config` (works without a data directory, even as root) and
cached as JSON under `<home>/catalog/`. That output lacks developer options and read-only
("internal") settings and prints unreliable defaults for numbers and booleans, so once a server
of that version runs, `enrich()` merges `pg_settings` (boot values, units, enum values, every
setting) into the cached file.

The context decides how a change takes effect: "postmaster" needs a restart, everything else
settable is applied by a reload (new sessions pick up user/superuser/backend settings), and
"internal" cannot be set at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pgrig import paths, safe_write
from pgrig.errors import PgrigError
from pgrig.units import show_setting

Apply = Literal["restart", "reload", "internal", "unknown"]
RELOAD_CONTEXTS = {"sighup", "superuser", "user", "backend", "superuser-backend"}
FORMAT = 1


@dataclass
class Setting:
    name: str
    context: str
    group: str
    type: str  # BOOLEAN, INTEGER, REAL, STRING, ENUM (describe-config spelling)
    default: str | None
    min: str | None
    max: str | None
    description: str
    unit: str | None = None
    enumvals: list[str] | None = None

    def default_text(self) -> str | None:
        """The default as SHOW prints it: '4MB', '128MB', 'on' (raw until units are known)."""
        if self.default is None:
            return None
        return show_setting(self.default, self.unit, self.name)

    @property
    def apply(self) -> Apply:
        if self.context == "postmaster":
            return "restart"
        if self.context == "internal":
            return "internal"
        return "reload" if self.context in RELOAD_CONTEXTS else "unknown"


@dataclass
class Catalog:
    version: str
    settings: dict[str, Setting] = field(default_factory=dict)  # keyed by lower-case name
    enriched: bool = False  # complete (pg_settings merged) or describe-config only

    def get(self, name: str) -> Setting | None:
        return self.settings.get(name.lower())

    def __contains__(self, name: str) -> bool:
        return name.lower() in self.settings

    def names(self) -> list[str]:
        return sorted(self.settings)

    def needs_restart(self, name: str) -> bool:
        s = self.get(name)
        return s is not None and s.context == "postmaster"

    def apply_mode(self, name: str) -> Apply:
        s = self.get(name)
        if s is None:
            # custom (dotted) settings of extensions are reloadable unless they say otherwise
            return "reload" if "." in name else "unknown"
        return s.apply

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": self.version,
            "enriched": self.enriched,
            "settings": [asdict(s) for s in self.settings.values()],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Catalog:
        settings = {s["name"].lower(): Setting(**s) for s in data["settings"]}
        return cls(data["version"], settings, bool(data.get("enriched")))


# --- parsing -----------------------------------------------------------------------------------


def parse_describe_config(text: str) -> dict[str, Setting]:
    """Tab-separated lines: name, context, group, type, default, min, max, short, extra."""
    out: dict[str, Setting] = {}
    for line in text.splitlines():
        cols = line.split("\t")
        if len(cols) < 8:
            continue
        name, context, group, vtype, shown, vmin, vmax, short = cols[:8]
        extra = cols[8] if len(cols) > 8 else ""
        # describe-config prints reset values that are not initialised yet: only strings and
        # enums are meaningful there (numbers show 0, booleans FALSE).
        default = shown if vtype in ("STRING", "ENUM") else None
        out[name.lower()] = Setting(
            name=name,
            context=context,
            group=group,
            type=vtype,
            default=default,
            min=vmin or None,
            max=vmax or None,
            description=(short + (" " + extra if extra else "")).strip(),
        )
    return out


PG_SETTINGS_QUERY = (
    "select name, context, category, vartype, boot_val, min_val, max_val, short_desc, "
    "unit, enumvals from pg_settings"
)
_VARTYPES = {
    "bool": "BOOLEAN",
    "integer": "INTEGER",
    "real": "REAL",
    "string": "STRING",
    "enum": "ENUM",
}


def merge_pg_settings(catalog: Catalog, rows: list[tuple[Any, ...]]) -> None:
    """Merge rows of PG_SETTINGS_QUERY: exact defaults, units, enum values, all names."""
    for name, context, category, vartype, boot, vmin, vmax, short, unit, enumvals in rows:
        prev = catalog.get(name)
        catalog.settings[name.lower()] = Setting(
            name=name,
            context=context,
            group=category,
            type=_VARTYPES.get(vartype, str(vartype).upper()),
            default=boot,
            min=vmin,
            max=vmax,
            description=prev.description if prev else (short or ""),
            unit=unit,
            enumvals=list(enumvals) if enumvals else None,
        )
    catalog.enriched = True


# --- cache -------------------------------------------------------------------------------------


def _cache_file(bindir: Path, version: str) -> Path:
    # Two builds of one version may differ (e.g. io_uring compiled in or not): key by path too.
    tag = hashlib.sha256(str(Path(bindir).resolve()).encode()).hexdigest()[:8]
    return paths.home() / "catalog" / f"{version}-{tag}.json"


def load_catalog(bindir: str | Path, version: str) -> Catalog:
    """The catalogue of the server in `bindir`, from the cache or built now (~20 ms)."""
    f = _cache_file(Path(bindir), version)
    if f.exists():
        try:
            data = json.loads(f.read_text())
            if data.get("format") == FORMAT and data.get("version") == version:
                return Catalog.from_json(data)
        except (OSError, ValueError, KeyError, TypeError):
            pass  # rebuild a damaged cache
    exe = Path(bindir) / "postgres"
    try:
        proc = subprocess.run(
            [str(exe), "--describe-config"],
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise PgrigError(f"cannot run {exe} --describe-config: {e}") from e
    if proc.returncode != 0 or not proc.stdout:
        raise PgrigError(f"{exe} --describe-config failed: {proc.stderr.strip()[:200]}")
    cat = Catalog(version, parse_describe_config(proc.stdout))
    save_catalog(bindir, cat)
    return cat


def save_catalog(bindir: str | Path, catalog: Catalog) -> None:
    """Best effort: a cache must not make a read-only home fail (the catalogue is rebuilt)."""
    f = _cache_file(Path(bindir), catalog.version)
    with contextlib.suppress(OSError):
        f.parent.mkdir(parents=True, exist_ok=True)
        safe_write.write_text(f, json.dumps(catalog.to_json(), indent=1))


def enrich(bindir: str | Path, catalog: Catalog, conninfo: str) -> None:
    """Merge pg_settings of a running server of this version into the cached catalogue."""
    if catalog.enriched:
        return
    import psycopg

    try:
        with psycopg.connect(conninfo) as conn:
            rows = conn.execute(PG_SETTINGS_QUERY).fetchall()
    except psycopg.Error:
        return  # optional refinement: the describe-config catalogue stays usable
    merge_pg_settings(catalog, rows)
    save_catalog(bindir, catalog)
