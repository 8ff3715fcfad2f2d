"""The shape of an archive's schema as SQLAlchemy's inspector reads it, on SQLite and
PostgreSQL alike: for holding an archive created at head (archive/schema.py _create_at_head)
equal to one brought there by every Alembic revision."""

from __future__ import annotations

from typing import Any

from sqlalchemy import create_engine, inspect

from pgrig.archive.store import normalize_url


def schema_of(url: str) -> dict[str, Any]:
    """Per table: columns (type, nullability, default), primary key, foreign keys, indexes,
    unique and check constraints; column order left out (a revision adds at the end)."""
    engine = create_engine(normalize_url(url))
    try:
        with engine.connect() as conn:
            found = inspect(conn)
            out: dict[str, Any] = {}
            for table in sorted(found.get_table_names()):
                out[table] = {
                    "columns": {
                        c["name"]: (str(c["type"]), c["nullable"], c.get("default"))
                        for c in found.get_columns(table)
                    },
                    "primary_key": found.get_pk_constraint(table),
                    "foreign_keys": sorted(
                        (
                            str(fk.get("name")),
                            tuple(fk["constrained_columns"]),
                            fk["referred_table"],
                            tuple(fk["referred_columns"]),
                            tuple(sorted((fk.get("options") or {}).items())),
                        )
                        for fk in found.get_foreign_keys(table)
                    ),
                    "indexes": sorted(
                        (str(i["name"]), tuple(map(str, i["column_names"])), bool(i["unique"]))
                        for i in found.get_indexes(table)
                    ),
                    "unique": sorted(
                        (str(u["name"]), tuple(u["column_names"]))
                        for u in found.get_unique_constraints(table)
                    ),
                    "checks": sorted(
                        (str(c.get("name")), str(c["sqltext"]))
                        for c in found.get_check_constraints(table)
                    ),
                }
            return out
    finally:
        engine.dispose()
