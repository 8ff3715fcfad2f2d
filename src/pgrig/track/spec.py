"""What a series measures at every version: one load, one dataset, one settings layer.

Stored verbatim (canonical JSON) as the spec of the series' archive object (a study of kind
"track"), so resuming or adding versions later measures exactly the same thing.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from pgrig.errors import PgrigError
from pgrig.request import RunRequest, load_values
from pgrig.request.vocabulary import valid_name

if TYPE_CHECKING:
    from pgrig.request.environment import EnvironmentRequest

KIND = "track"
RESERVED_NAMES = ("show", "detect", "measure")
ENV_PREFIX = "trk-"
NAME_MAX = 40  # environments are named trk-<name>-<version>


@dataclass
class TrackSpec:
    name: str
    load: dict[str, Any]  # LoadParams fields (workload, clients, threads, duration_s, ...)
    scale: int = 1
    repeat: int = 1
    profile: str = "default"
    settings: dict[str, str] = field(default_factory=dict)
    metric: str = "tps"
    insights: bool = True  # pgrig's insights layer (server-only builds cannot have it)

    def __post_init__(self) -> None:
        check_name(self.name)
        if self.repeat < 1:
            raise PgrigError(f"--repeat must be >= 1 (got {self.repeat})")
        if self.scale < 1:
            raise PgrigError(f"--scale must be >= 1 (got {self.scale})")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, indent=1, default=str)

    @classmethod
    def from_json(cls, text: str) -> TrackSpec:
        try:
            data = json.loads(text)
            return cls(**data)
        except (ValueError, TypeError) as e:
            raise PgrigError(f"the stored series spec cannot be read: {e}") from None

    def same_measurement(self, other: TrackSpec) -> bool:
        """Everything but the repeat count (more repeats later measure the same thing)."""
        mine, theirs = asdict(self), asdict(other)
        mine.pop("repeat")
        theirs.pop("repeat")
        return mine == theirs

    def request(
        self, env_name: str, version: str, repeat: int, phase: str, source: str
    ) -> RunRequest:
        return RunRequest(
            **self.load,
            env_name=env_name,
            scenario="pgbench",
            note=f"track {self.name}: PostgreSQL {version}"
            + ("" if phase == "series" else f" ({phase})"),
            tags={"track": self.name, "version": version, "phase": phase, "binaries": source},
            study=self.name,
            study_point=version,
            repeat=repeat,
        )

    def environment(self, env_name: str, version: str, source: str | None) -> EnvironmentRequest:
        """The environment one version is measured on: the series' profile and settings, its
        insights layer unless the binaries are a server-only build (maven's)."""
        from pgrig.request.environment import EnvironmentRequest

        return EnvironmentRequest(
            name=env_name,
            pg=version,
            profile=self.profile,
            settings=dict(self.settings),
            insights=self.insights and source != "maven",
        )

    def describe(self) -> str:
        ld = self.load
        dur = (
            f"{ld.get('duration_s'):g} s"
            if ld.get("duration_s")
            else f"{ld.get('transactions_per_client')} tx/client"
        )
        parts = [
            str(ld.get("workload")),
            f"scale {self.scale}",
            f"{ld.get('clients')} clients",
            f"{ld.get('threads')} threads",
            dur,
            f"{self.repeat} repeat{'s' if self.repeat != 1 else ''}",
            f"profile {self.profile}",
        ]
        if ld.get("warmup_s"):
            parts.append(f"warm-up {ld['warmup_s']:g} s")
        if not self.insights:
            parts.append("no insights layer")
        if self.settings:
            parts.append(", ".join(f"{k}={v}" for k, v in sorted(self.settings.items())))
        return ", ".join(parts)


def load_from_request(request: RunRequest) -> dict[str, Any]:
    return {k: v for k, v in load_values(request).items()}


def check_name(name: str) -> None:
    if not valid_name(name, NAME_MAX):
        raise PgrigError(
            f"series name {name!r}: letters, digits, '_', '.', '-', at most {NAME_MAX} characters"
        )
    if name in RESERVED_NAMES:
        raise PgrigError(f"series name {name!r} is a subcommand of `pgrig track`: choose another")


def env_name(series: str, version: str) -> str:
    return f"{ENV_PREFIX}{series}-{version}"
