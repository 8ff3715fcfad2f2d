"""Settings rows: the settings that differ from PostgreSQL's defaults in one run, and the
settings that differ between runs. One rule for every surface: values in human units
(pgrig/format.py: "5.9 GiB", "5min"), compared exactly (by the value pg_settings gave and its
unit, so two values that print alike still differ), each with the layer that set it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pgrig import format as fmt
from pgrig import units
from pgrig.archive.records import RunRecord
from pgrig.record.run import SETTINGS_LAYERS

# Low to high, as pgrig.conf merges them (record/run.py). A study has no layer of its own: its
# points borrow the environment layer (provision/study_layer.py).
LAYER_ORDER = SETTINGS_LAYERS


@dataclass
class SettingRow:
    """One setting of one run: its value, PostgreSQL's default, and who set it."""

    name: str
    value: str
    default: str
    source: str  # pg_settings.source: configuration file, default, ...
    layer: str  # the pgrig layer that set it ("" for none)


@dataclass
class SettingDiff:
    """One setting that is not the same in every run: a value per column (a group's runs
    agreeing give one value, else every distinct one, "a / b")."""

    name: str
    layers: list[str]
    values: list[str]  # shown, per column
    raw: list[str | None]  # pg_settings' value per column (in its unit), "a / b" likewise

    @property
    def label(self) -> str:
        return f"{self.name} ({', '.join(self.layers)})" if self.layers else self.name


def layer_of(layers: dict[str, dict[str, str]], name: str) -> str:
    """The highest layer (LAYER_ORDER: ... topology < profile < ... < run) that sets `name`."""
    found = ""
    ordered = [k for k in LAYER_ORDER if k in layers] + [k for k in layers if k not in LAYER_ORDER]
    for layer in ordered:
        if name in (layers.get(layer) or {}):
            found = layer
    return found


def non_default_rows(rec: RunRecord) -> list[SettingRow]:
    """The run's settings that differ from PostgreSQL's built-in defaults, by name."""
    return [
        SettingRow(
            name=name,
            value=fmt.setting(s, name),
            default=fmt.setting(s, name, key="boot_val"),
            source=str(s.get("source") or ""),
            layer=layer_of(rec.settings_layers, name),
        )
        for name, s in sorted(rec.non_default_settings().items())
    ]


def _raw(rec: RunRecord, name: str) -> tuple[str, str] | None:
    entry = rec.settings.get(name)
    if not entry or entry.get("setting") is None:
        return None
    return str(entry["setting"]), str(entry.get("unit") or "")


def settings_diff(columns: Sequence[Sequence[RunRecord]]) -> tuple[list[SettingDiff], int]:
    """Settings whose value is not the same in every run of every column, and how many
    non-default settings are the same everywhere."""
    runs = [r for c in columns for r in c]
    names: set[str] = set()
    for r in runs:
        names.update(r.non_default_settings())
    for r in runs:  # a setting may be default in one run and absent from another's snapshot
        names.update(n for n in r.settings if any(n not in o.settings for o in runs))
    diff: list[SettingDiff] = []
    same = 0
    for name in sorted(names):
        raw = {_raw(r, name) for r in runs}
        if len(raw) <= 1:
            same += 1
            continue
        shown = {v: _show(name, v) for v in raw}
        if len(set(shown.values())) < len(shown):  # rounding made two values alike
            shown = {v: _exact(name, v) for v in raw}
        values = [
            " / ".join(dict.fromkeys(shown[_raw(r, name)] for r in column)) for column in columns
        ]
        raw_values: list[str | None] = []
        for column in columns:
            found = list(dict.fromkeys(_raw(r, name) for r in column))
            texts = [None if v is None else v[0] for v in found]
            raw_values.append(texts[0] if len(texts) == 1 else " / ".join(map(str, texts)))
        layers = sorted({layer_of(r.settings_layers, name) for r in runs} - {""})
        diff.append(SettingDiff(name, layers, values, raw_values))
    return diff, same


def _show(name: str, raw: tuple[str, str] | None) -> str:
    if raw is None:
        return fmt.MISSING
    return fmt.setting({"setting": raw[0], "unit": raw[1] or None}, name)


def _exact(name: str, raw: tuple[str, str] | None) -> str:
    if raw is None:
        return fmt.MISSING
    return units.show_setting(raw[0], raw[1] or None, name)
