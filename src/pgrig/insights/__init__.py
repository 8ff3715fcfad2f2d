"""Insights: why a run got faster or slower (statements, plans, server log, waits).

Modules, one job each:
- collector: the runner's hooks (start before pgbench, stop after it, finish into rec.insights)
- statements: pg_stat_statements snapshots and their difference over the measured window
- plans: auto_explain JSON plans: shapes, plan hashes, misestimates, per-run aggregation
- sampling: the plan budget that sets auto_explain's sample rate during a run
- server_log, log_digest: the run's server log as records, and their digest
- log_feed: the run's server log fed line by line (the runner reads it once) into plans and
  the digest; log_excerpt: the bounded part of it a run keeps (head, stories, tail)
- waits: the wait profile from the PostgreSQL sampler's series
- compare: plan changes between two runs; summary: the "why" lines, their tables and the JSON
  parts; changes: what changed between A and B (every compare surface) and a group's evidence
- setup: the insights layer of a managed environment on or off
The settings pgrig adds to managed environments are provision/insights_layer.py.
Nothing is imported here: `pgrig runs show` reads summaries without loading psycopg.
"""
