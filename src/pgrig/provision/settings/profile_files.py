"""Profile files: the TOML files shipped in `provision/profiles/` and the user's in
`paths.profiles_dir()` (a user file with the same name as a shipped one overrides it): finding,
listing, reading and checking them, and saving a user profile. What a profile computes for a
server is provision/profiles.py.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pgrig import paths, safe_write
from pgrig.errors import NotFound, PgrigError
from pgrig.provision.settings.profile_model import read_profile_model
from pgrig.request.vocabulary import valid_name


@dataclass(frozen=True)
class ProfileInfo:
    """What `pgrig profile list` shows about one profile."""

    name: str
    kind: str
    description: str
    source: str  # "shipped" or "user"
    path: str
    workload: str | None = None
    warning: str | None = None


@dataclass
class ProfileFile:
    """One profile file as read: what it lists, sets and says."""

    info: ProfileInfo
    settings: dict[str, str]
    rules: dict[str, str]
    notes: list[str]
    overrides_shipped: bool = False


def list_profiles() -> list[ProfileInfo]:
    """All profiles, shipped and user-defined (a user file shadows a shipped one), by name."""
    return [p.info for _, p in sorted(all_profiles().items())]


def shipped_dir() -> Path:
    return Path(str(resources.files("pgrig.provision.settings") / "profiles"))


def all_profiles() -> dict[str, ProfileFile]:
    return scan()[0]


def scan() -> tuple[dict[str, ProfileFile], dict[str, str]]:
    """The profiles, and the user files that cannot be read (name -> the one-line problem):
    a damaged user file is reported where it is used or listed, the others keep working."""
    found: dict[str, ProfileFile] = {}
    for f in sorted(shipped_dir().glob("*.toml")):
        found[f.stem] = load(f, "shipped")
    broken: dict[str, str] = {}
    user_dir = paths.profiles_dir()
    if user_dir.is_dir():
        for f in sorted(user_dir.glob("*.toml")):
            try:
                prof = load(f, "user")
            except PgrigError as e:
                broken[f.stem] = str(e)
                continue
            prof.overrides_shipped = f.stem in found
            found[f.stem] = prof
    return found, broken


def damaged_profiles() -> dict[str, str]:
    """User profile files that cannot be used, each with its problem (for `profile list`)."""
    return scan()[1]


def find(name: str) -> ProfileFile:
    profiles, broken = scan()
    if name in broken:  # a damaged user file never falls back silently to a shipped one
        raise PgrigError(broken[name])
    if name not in profiles:
        known = ", ".join(sorted(profiles))
        raise NotFound(f"unknown profile {name!r}: known profiles are {known}")
    return profiles[name]


def load(path: Path, source: str) -> ProfileFile:
    """Read and check one profile file (profile_model.ProfileModel); any problem is one error
    naming the file and the key path."""
    model = read_profile_model(path)
    info = ProfileInfo(
        name=path.stem,
        kind=model.kind,
        description=model.description,
        source=source,
        path=str(path),
        workload=model.workload,
        warning=model.warning,
    )
    return ProfileFile(
        info=info, settings=dict(model.settings), rules=dict(model.rules), notes=list(model.notes)
    )


def save_profile(
    name: str, settings: dict[str, str], description: str, notes: list[str], force: bool = False
) -> Path:
    """Write a user profile (kind fixed) and load it back through the same checks as any
    profile file; an existing user profile is only replaced with `force`."""
    import json

    if not valid_name(name):
        raise PgrigError(f"bad profile name {name!r}: use letters, digits, '_', '.', '-'")
    if not settings:
        raise PgrigError(f"profile {name}: no settings to save")
    if (shipped_dir() / f"{name}.toml").is_file():
        raise PgrigError(
            f"profile {name} is shipped with pgrig: a saved profile of that name would replace "
            "it for every environment created with it; save under another name"
        )
    path = paths.profiles_dir() / f"{name}.toml"
    if path.exists() and not force:
        raise PgrigError(f"profile {name} exists ({path}): add --force to replace it")
    # TOML basic strings accept JSON's escapes (\" \\ \uXXXX), so json.dumps quotes safely
    lines = [f"description = {json.dumps(description)}", 'kind = "fixed"']
    lines.append("notes = [" + ", ".join(json.dumps(n) for n in notes) + "]")
    lines += ["", "[settings]"] + [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    with tempfile.TemporaryDirectory(prefix="pgrig-profile-") as scratch:
        check = Path(scratch) / f"{name}.toml"  # a profile that does not load is never saved
        check.write_text(text)
        load(check, "user")
    safe_write.write_text(path, text)
    return path
