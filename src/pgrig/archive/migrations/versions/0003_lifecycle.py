"""Leases of running runs, and Text wherever a length was a guess.

- `runs` gets the lease of a running run (archive/lease.py): the owner's host, pid and process
  start time, and its last heartbeat. A run whose owner died is marked "lost" by the next pgrig
  command instead of staying "running" for ever.
- Columns whose values come from users, servers or hosts become Text: server_version was
  VARCHAR(64) and version() is 97 characters on PostgreSQL 18.6, so a PostgreSQL archive could
  not store a run. Lengths stay only on pgrig's own vocabulary (status, kinds, codecs).

On SQLite the type change rebuilds the tables (batch mode). The store runs SQLite migrations
with foreign keys off (SQLite's own procedure for altering a table): dropping the old `runs`
would otherwise cascade to every child row.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, not imported from the models: a revision must not change when the code does.
LEASE_COLUMNS = (
    ("lease_host", sa.Text()),
    ("lease_pid", sa.Integer()),
    ("lease_pid_started", sa.Float()),
    ("heartbeat_at", sa.DateTime(timezone=True)),
)
# (table, column, old type, NOT NULL)
TO_TEXT = (
    ("studies", "name", sa.String(200), True),
    ("runs", "env_name", sa.String(100), True),
    ("runs", "engine", sa.String(32), True),
    ("runs", "server_version", sa.String(64), False),
    ("runs", "pgbench_version", sa.String(64), False),
    ("runs", "database", sa.String(100), False),
    ("runs", "scenario", sa.String(32), False),
    ("runs", "owner", sa.String(100), False),
    ("runs", "host_name", sa.String(255), False),
    ("run_tags", "key", sa.String(200), True),
)


def _retype(to_text: bool) -> None:
    for table in dict.fromkeys(t for t, *_ in TO_TEXT):
        with op.batch_alter_table(table) as batch:
            for t, column, old, not_null in TO_TEXT:
                if t == table:
                    batch.alter_column(
                        column,
                        type_=sa.Text() if to_text else old,
                        existing_type=old if to_text else sa.Text(),
                        existing_nullable=not not_null,
                    )


def upgrade() -> None:
    for name, type_ in LEASE_COLUMNS:
        op.add_column("runs", sa.Column(name, type_, nullable=True))
    _retype(to_text=True)


def downgrade() -> None:
    _retype(to_text=False)
    for name, _type in reversed(LEASE_COLUMNS):
        op.drop_column("runs", name)
