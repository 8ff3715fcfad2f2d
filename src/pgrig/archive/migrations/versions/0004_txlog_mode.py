"""The run request's transaction-log mode becomes a column of `runs`.

`txlog` is the mode a run used: full (every transaction in pgbench's log), sampled (a
--sampling-rate sample: TPS and counts from pgbench's summary, percentiles from the sample) or
off (no log: percentiles unavailable). Runs archived before this revision keep NULL there; they
were all "full".

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("txlog", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "txlog")
