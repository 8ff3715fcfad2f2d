"""The Jinja filters of the pages: pgrig/format.py's rules, the same as the CLI's and the
reports' (this module only names them for templates)."""

from __future__ import annotations

from datetime import datetime

from pgrig import format as fmt
from pgrig.record.documents import SettingDoc

num = fmt.number
ms = fmt.ms
pct = fmt.percent
signed_pct = fmt.signed_pct
size = fmt.size
duration = fmt.duration
engine = fmt.engine


def when(dt: datetime | None) -> str:
    return fmt.timestamp(dt)


def when_full(dt: datetime | None) -> str:
    return fmt.timestamp(dt, seconds=True)


def setting_value(s: SettingDoc | None, name: str = "", key: str = "setting") -> str:
    return fmt.setting(s, name, key)


FILTERS = {
    "num": num,
    "ms": ms,
    "pct": pct,
    "signed_pct": signed_pct,
    "size": size,
    "duration": duration,
    "when": when,
    "when_full": when_full,
    "setting_value": setting_value,
}
