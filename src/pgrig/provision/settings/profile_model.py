"""A profile file's TOML, declared: its keys, what each takes, and the rules between them
(profile_files.py finds, lists and saves the files; profiles.py resolves them for a server).

A problem is reported like any input file's (request/problems.py): the key path, then the
predicate, after the file it is in (`profile /home/me/profiles/x.toml: kind: must be one of
fixed, pgtune, pgconfig (got 'magic')`).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, Field, ValidationError, model_validator

from pgrig.errors import PgrigError
from pgrig.provision.settings.formula import WORKLOADS
from pgrig.request.fields import STRICT
from pgrig.request.problems import Refusal, in_file
from pgrig.request.tables import Settings
from pgrig.request.vocabulary import valid_name

__all__ = ["KINDS", "ProfileModel", "read_profile_model"]

KINDS = ("fixed", "pgtune", "pgconfig")


class ProfileModel(BaseModel):
    """What a profile file may say: a fixed [settings] table, or a formula (PGTune,
    pgconfig.org) for a workload with [settings] on top; a rule per setting, notes."""

    model_config = STRICT

    description: str = ""
    kind: Literal["fixed", "pgtune", "pgconfig"] = "fixed"
    workload: Literal["web", "oltp", "dw", "desktop", "mixed"] | None = None
    source: str | None = None  # where the values come from (a seed, a web page)
    warning: str | None = None  # shown with every use (e.g. durability turned off)
    notes: list[str] = Field(default_factory=list)
    settings: Settings = Field(default_factory=dict)
    rules: dict[str, str] = Field(default_factory=dict)  # setting -> why it has this value

    @model_validator(mode="after")
    def _rules(self) -> Self:
        if self.kind != "fixed" and self.workload is None:
            raise Refusal(
                f"is required for kind {self.kind}: one of {', '.join(WORKLOADS)}",
                field="workload",
            )
        if self.kind == "fixed" and self.workload is not None:
            raise Refusal(
                "applies only to kind pgtune or pgconfig (got kind fixed)", field="workload"
            )
        stray = [name for name in self.rules if name not in self.settings]
        if stray:
            raise Refusal(
                f"has a rule for {stray[0]}, which [settings] does not set", field="rules"
            )
        return self


def read_profile_model(path: Path) -> ProfileModel:
    """Read and check one profile file; any problem is one error naming the file and key."""
    where = f"profile {path}"
    if not valid_name(path.stem):
        raise PgrigError(f"{where}: bad name {path.stem!r} (letters, digits, _ . -)")
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise PgrigError(f"{where}: cannot read: {e}") from e
    try:
        return ProfileModel.model_validate(data)
    except ValidationError as e:
        raise PgrigError(f"{where}: {in_file(e, ProfileModel)}") from None
