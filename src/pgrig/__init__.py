"""pgrig: a PostgreSQL benchmarking and tuning lab."""

import os

__version__ = "0.1.0"

# pgrig shares the machine with the load it measures: its bulk number crunching (polars, in the
# per-transaction log reader during a run) uses one core unless the user says otherwise; a
# thread pool per core would compete with the server and pgbench for no gain at these rates.
os.environ.setdefault("POLARS_MAX_THREADS", "1")
