#!/usr/bin/env bash
# The embedded default job: one environment on the newest PostgreSQL, pgbench data, two short
# runs (PostgreSQL defaults vs the pgtune-oltp profile) and their comparison.
set -euo pipefail
ENV="${PGRIG_DEMO_ENV:-demo}"
PG="${PGRIG_PG_MAJOR:-18}"
SCALE="${PGRIG_DEMO_SCALE:-10}"
DURATION="${PGRIG_DEMO_DURATION:-30}"

pgrig env destroy "$ENV" --yes >/dev/null 2>&1 || true
pgrig env create "$ENV" --pg "$PG"
pgrig db generate "$ENV" --scenario pgbench --scale "$SCALE"

common=(--workload pgbench:tpcb --clients 8 --threads 2 --duration "$DURATION" --warmup 5)
a=$(pgrig run "$ENV" "${common[@]}" --note "PostgreSQL defaults" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
b=$(pgrig run "$ENV" "${common[@]}" --profile pgtune-oltp --note "pgtune-oltp profile" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')

echo
pgrig runs compare "$a" "$b"
echo
where() { python3 -c "from pgrig import paths; print($1)"; }
echo "archive:   $(where 'paths.default_archive_url()')"
echo "artifacts: $(where 'paths.artifacts_dir()')/{$a,$b}"
echo "next:      pgrig runs show $b | pgrig runs export $b --format json | pgrig env destroy $ENV"
