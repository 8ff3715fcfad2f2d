#!/bin/sh
# What does synchronous replication cost when the replica is on another host? The sibling of
# sync-replication-cost.toml (where both servers share one machine) with the primary on host
# PRIMARY and its streaming replica on host REPLICA. A study file cannot place servers on hosts
# (its per-iteration settings are run layers, which pgrig does not write on another host's
# server), so this script does what the study does, with the same load: interleaved repeats of
# the three commit modes, each changed with `env set --sync` (pgrig's topology layer on the
# primary), then the comparison engine's verdicts against asynchronous streaming.
#
#   off           the commit waits for the primary's WAL flush only (asynchronous streaming)
#   on            ... and for the replica's WAL flush (one network round trip to REPLICA)
#   remote_apply  ... and for the replica to have replayed it (visible to its readers)
#
# Needs two hosts known and provisioned with PostgreSQL 18, e.g. on one machine:
#   scripts/test-hosts.sh up 2
#   pgrig host add db1 --ssh root@10.231.0.11 --identity /var/lib/pgrig-rig/client/id_ed25519 \
#       --known-hosts /var/lib/pgrig-rig/known_hosts          # and db2 at 10.231.0.12
#   pgrig host provision db1 --pg 18; pgrig host provision db2 --pg 18
# Then:  sh examples/studies/sync-replication-cost-hosts.sh
# Knobs: ENV PRIMARY REPLICA SCALE CLIENTS DURATION REPEATS (defaults below). About 4 minutes
# with the defaults. The environment is left for `pgrig runs compare`; `pgrig env destroy $ENV`.
set -eu

ENV=${ENV:-synchosts}
PRIMARY=${PRIMARY:-db1}
REPLICA=${REPLICA:-db2}
SCALE=${SCALE:-10}
CLIENTS=${CLIENTS:-8}
DURATION=${DURATION:-20}
REPEATS=${REPEATS:-3}

pgrig env create "$ENV" --pg 18 --on "$PRIMARY" --replica-on "$REPLICA"
pgrig db generate "$ENV" --scenario pgbench --scale "$SCALE"

run_id() {  # one run; prints its id
    pgrig run "$ENV" --workload pgbench:tpcb-like -c "$CLIENTS" -j 2 -T "$DURATION" --warmup 3 \
        --tag sync="$1" --tag example=sync-replication-cost-hosts --json |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'
}

off="" on="" apply=""
i=0
while [ "$i" -lt "$REPEATS" ]; do
    i=$((i + 1))
    for mode in off on remote_apply; do
        pgrig env set "$ENV" --sync "$mode"
        id=$(run_id "$mode")
        case $mode in
        off) off="${off:+$off,}$id" ;;
        on) on="${on:+$on,}$id" ;;
        remote_apply) apply="${apply:+$apply,}$id" ;;
        esac
    done
done
pgrig env set "$ENV" --sync off

echo "async (off): runs $off; sync on: runs $on; remote_apply: runs $apply"
pgrig runs compare "$off" "$on"
pgrig runs compare "$off" "$apply"
pgrig runs compare "$on" "$apply"
