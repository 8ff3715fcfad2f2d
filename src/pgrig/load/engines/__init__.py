"""The load engines behind one seam (driver.py): pgbench and sysbench command lines, processes,
output, per-transaction logs and results."""
