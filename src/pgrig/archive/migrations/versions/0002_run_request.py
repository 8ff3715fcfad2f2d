"""The run request's remaining load parameters become columns of `runs`.

Revision 0001 stored clients, threads, duration, rate... but not max_tries, the connection
mode, CPU pinning, -D defines, extra pgbench arguments or the TPC-C options. Every load
parameter of the run request (pgrig.request.LoadParams) now has its column. Runs archived
before this revision keep NULL there: the value was not recorded (some of it survives in their
`extra` blob, which stays as it was).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, not imported from the models: a revision must not change when the code does.
COLUMNS = (
    ("max_tries", sa.Integer()),
    ("connect", sa.Text()),
    ("server_cpus", sa.Text()),
    ("client_cpus", sa.Text()),
    ("defines", sa.JSON()),
    ("extra_pgbench_args", sa.JSON()),
    ("tpcc_mix", sa.JSON()),
    ("all_warehouses", sa.Boolean()),
    ("tpcc_stock_level", sa.Text()),
    ("keep_txlog", sa.Boolean()),
)


def upgrade() -> None:
    # ADD COLUMN of a nullable column: no table rebuild, on SQLite or PostgreSQL.
    for name, type_ in COLUMNS:
        op.add_column("runs", sa.Column(name, type_, nullable=True))


def downgrade() -> None:
    # Plain DROP COLUMN (SQLite 3.35+): a batch rebuild of `runs` would cascade its deletion
    # to the rows of the tables that reference it.
    for name, _type in reversed(COLUMNS):
        op.drop_column("runs", name)
