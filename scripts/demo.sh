#!/usr/bin/env bash
# The embedded default job: one environment on the newest PostgreSQL, pgbench data, and one
# question answered with a verdict at 95%: what does waiting for the WAL flush at every commit
# cost this write workload? Four interleaved repeats per side (ABBA order, so a slow drift of the
# host spreads over both sides), judged by the comparison engine, explained by the wait profile.
#
# Why this question and not "defaults vs pgtune-oltp": on a small host pgbench's tpcb is bound
# by WAL flushes and the row locks held across them (bench/tpcb_knob_ceiling.py); no durable
# knob moves it, so that comparison ends "inconclusive" however it is run. The cost of the flush
# is large, real and explained by the insights pgrig records.
set -euo pipefail
ENV="${PGRIG_DEMO_ENV:-demo}"
PG="${PGRIG_PG_MAJOR:-18}"
SCALE="${PGRIG_DEMO_SCALE:-10}"
DURATION="${PGRIG_DEMO_DURATION:-8}"
REPEATS="${PGRIG_DEMO_REPEATS:-4}"  # the fewest per side whose bounds reach 95%

pgrig env destroy "$ENV" --yes >/dev/null 2>&1 || true
pgrig env create "$ENV" --pg "$PG"
pgrig db generate "$ENV" --scenario pgbench --scale "$SCALE"

common=(--workload pgbench:tpcb --clients 8 --threads 2 --duration "$DURATION" --warmup 2)
run_id() { python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
durable=() fast=()
one() {  # one run of side $1 (durable: the default synchronous_commit=on; fast: off)
  local side=$1 id
  if [ "$side" = durable ]; then
    id=$(pgrig run "$ENV" "${common[@]}" --note "synchronous_commit=on (default)" \
         --tag demo=durable --json | run_id)
    durable+=("$id")
  else
    id=$(pgrig run "$ENV" "${common[@]}" --set synchronous_commit=off \
         --note "synchronous_commit=off" --tag demo=fast --json | run_id)
    fast+=("$id")
  fi
}
for ((k = 0; k < REPEATS; k += 2)); do  # ABBA: durable fast fast durable, twice
  one durable; one fast; one fast; one durable
done

join() { local IFS=,; echo "$*"; }
echo
echo "Question: what does waiting for the WAL flush at each commit cost pgbench:tpcb here?"
echo "A = synchronous_commit=on (PostgreSQL's default, durable), B = off (a crash can lose"
echo "the last few hundred milliseconds of commits; never corrupts). $REPEATS interleaved runs each."
echo
pgrig runs compare "$(join "${durable[@]}")" "$(join "${fast[@]}")"
echo
echo "Read the verdict line above (ratio B/A with its 95% bounds), then the wait profile: with"
echo "synchronous_commit=on the backends wait on LWLock:WALWrite and IO:WalSync (the flush);"
echo "with off those waits vanish and what is left is row locks and CPU."
where() { python3 -c "from pgrig import paths; print($1)"; }
echo "archive:   $(where 'paths.default_archive_url()')"
echo "next:      pgrig runs show ${fast[0]};  pgrig report compare $(join "${durable[@]}") $(join "${fast[@]}") --format html;  pgrig env destroy $ENV"
