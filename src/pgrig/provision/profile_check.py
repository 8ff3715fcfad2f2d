"""A profile's values checked by the real parser of an installed PostgreSQL (`profile show
--pg N`), as `env create` would check them."""

from __future__ import annotations

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.provision.server import binaries
from pgrig.provision.settings import catalog, validator


def check_values(settings: dict[str, str], major: int) -> str:
    """Every value through the real parser of an installed PostgreSQL `major`, as env create
    would; a value it refuses is an error naming the setting. Returns what was checked."""
    if not settings:
        return "nothing to check"
    try:
        bindir, version = binaries.find_bindir(major)
    except PgrigError:
        cmd = pgrig_command("pg", "install", major)
        return f"values not checked: PostgreSQL {major} is not installed ({cmd})"
    cat = catalog.load_catalog(bindir, version)
    norm = validator.normalize(settings)
    try:
        validator.validate(bindir, major, cat, norm)
    except PgrigError as e:
        raise PgrigError(f"profile values refused by PostgreSQL {version}: {e}") from None
    return f"values checked by PostgreSQL {version}'s own parser"
