"""The server's disk limit becomes a column of `runs`.

`disk_limit` is the environment's block I/O limit at the start of a run and what the kernel
held of it (provision/server/disk_throttle.in_force: the limit asked for, the cgroup files read
back per disk, whether the server's processes were in the cgroup). {"text": "none"} for a run
without a limit; runs archived before this revision keep NULL ("not recorded").

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("disk_limit", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "disk_limit")
