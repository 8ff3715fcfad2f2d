"""Initial schema: runs, run_scripts, run_tags, run_blobs, run_series, studies.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "studies",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("spec", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("extra", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_studies")),
        sa.UniqueConstraint("name", name=op.f("uq_studies_name")),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("env_name", sa.String(length=100), nullable=False),
        sa.Column("managed", sa.Boolean(), nullable=False),
        sa.Column("target", sa.Text(), nullable=True),
        sa.Column("engine", sa.String(length=32), nullable=False),
        sa.Column("server_version", sa.String(length=64), nullable=True),
        sa.Column("server_major", sa.Integer(), nullable=True),
        sa.Column("pgbench_version", sa.String(length=64), nullable=True),
        sa.Column("database", sa.String(length=100), nullable=True),
        sa.Column("scenario", sa.String(length=32), nullable=True),
        sa.Column("workload", sa.Text(), nullable=False),
        sa.Column("scale", sa.Integer(), nullable=True),
        sa.Column("db_size_bytes", sa.BigInteger(), nullable=True),
        sa.Column("via", sa.String(length=32), nullable=False),
        sa.Column("clients", sa.Integer(), nullable=False),
        sa.Column("threads", sa.Integer(), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("transactions_per_client", sa.BigInteger(), nullable=True),
        sa.Column("warmup_s", sa.Float(), nullable=False),
        sa.Column("rate", sa.Float(), nullable=True),
        sa.Column("latency_limit_ms", sa.Float(), nullable=True),
        sa.Column("protocol", sa.String(length=16), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("owner", sa.String(length=100), nullable=True),
        sa.Column("study_id", sa.Integer(), nullable=True),
        sa.Column("study_point", sa.Text(), nullable=True),
        sa.Column("repeat", sa.Integer(), nullable=False),
        sa.Column("measured_s", sa.Float(), nullable=True),
        sa.Column("tps", sa.Float(), nullable=True),
        sa.Column("transactions", sa.BigInteger(), nullable=True),
        sa.Column("failed", sa.BigInteger(), nullable=True),
        sa.Column("retried", sa.BigInteger(), nullable=True),
        sa.Column("skipped", sa.BigInteger(), nullable=True),
        sa.Column("rollbacks", sa.BigInteger(), nullable=True),
        sa.Column("nopm", sa.Float(), nullable=True),
        sa.Column("tpm", sa.Float(), nullable=True),
        sa.Column("latency_avg", sa.Float(), nullable=True),
        sa.Column("latency_stddev", sa.Float(), nullable=True),
        sa.Column("latency_p50", sa.Float(), nullable=True),
        sa.Column("latency_p90", sa.Float(), nullable=True),
        sa.Column("latency_p95", sa.Float(), nullable=True),
        sa.Column("latency_p99", sa.Float(), nullable=True),
        sa.Column("latency_p999", sa.Float(), nullable=True),
        sa.Column("latency_max", sa.Float(), nullable=True),
        sa.Column("cpu_user", sa.Float(), nullable=True),
        sa.Column("cpu_system", sa.Float(), nullable=True),
        sa.Column("cpu_iowait", sa.Float(), nullable=True),
        sa.Column("cpu_idle", sa.Float(), nullable=True),
        sa.Column("hit_ratio", sa.Float(), nullable=True),
        sa.Column("host_cpus", sa.Integer(), nullable=True),
        sa.Column("host_name", sa.String(length=255), nullable=True),
        sa.Column("command", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["study_id"], ["studies.id"], name=op.f("fk_runs_study_id_studies"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
    )
    op.create_index(op.f("ix_runs_env_name"), "runs", ["env_name"], unique=False)
    op.create_index(op.f("ix_runs_started_at"), "runs", ["started_at"], unique=False)
    op.create_index(op.f("ix_runs_status"), "runs", ["status"], unique=False)
    op.create_index(op.f("ix_runs_study_id"), "runs", ["study_id"], unique=False)
    op.create_index(op.f("ix_runs_workload"), "runs", ["workload"], unique=False)

    op.create_table(
        "run_blobs",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("codec", sa.String(length=16), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_blobs_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "kind", name=op.f("pk_run_blobs")),
    )
    op.create_table(
        "run_scripts",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("script_no", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("weight", sa.Integer(), nullable=False),
        sa.Column("transactions", sa.BigInteger(), nullable=False),
        sa.Column("failed", sa.BigInteger(), nullable=False),
        sa.Column("retried", sa.BigInteger(), nullable=False),
        sa.Column("skipped", sa.BigInteger(), nullable=False),
        sa.Column("rollbacks", sa.BigInteger(), nullable=False),
        sa.Column("tps", sa.Float(), nullable=True),
        sa.Column("latency_avg", sa.Float(), nullable=True),
        sa.Column("latency_stddev", sa.Float(), nullable=True),
        sa.Column("latency_p50", sa.Float(), nullable=True),
        sa.Column("latency_p90", sa.Float(), nullable=True),
        sa.Column("latency_p95", sa.Float(), nullable=True),
        sa.Column("latency_p99", sa.Float(), nullable=True),
        sa.Column("latency_p999", sa.Float(), nullable=True),
        sa.Column("latency_max", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_scripts_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "script_no", name=op.f("pk_run_scripts")),
    )
    op.create_table(
        "run_series",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("codec", sa.String(length=16), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_series_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "kind", name=op.f("pk_run_series")),
    )
    op.create_table(
        "run_tags",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_tags_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "key", name=op.f("pk_run_tags")),
    )
    op.create_index(op.f("ix_run_tags_key_value"), "run_tags", ["key", "value"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_run_tags_key_value"), table_name="run_tags")

    op.drop_table("run_tags")
    op.drop_table("run_series")
    op.drop_table("run_scripts")
    op.drop_table("run_blobs")
    op.drop_index(op.f("ix_runs_workload"), table_name="runs")
    op.drop_index(op.f("ix_runs_study_id"), table_name="runs")
    op.drop_index(op.f("ix_runs_status"), table_name="runs")
    op.drop_index(op.f("ix_runs_started_at"), table_name="runs")
    op.drop_index(op.f("ix_runs_env_name"), table_name="runs")

    op.drop_table("runs")
    op.drop_table("studies")
