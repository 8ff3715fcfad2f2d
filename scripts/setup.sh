#!/usr/bin/env bash
# Installs everything pgrig needs on a fresh Debian 12 machine (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

pkgs=()
command -v pgbouncer >/dev/null 2>&1 || pkgs+=(pgbouncer)
command -v sysbench >/dev/null 2>&1 || pkgs+=(sysbench)
# pgBackRest for backup runs (backup:pgbackrest-full|diff|incr, provision/pgbackrest.py).
command -v pgbackrest >/dev/null 2>&1 || pkgs+=(pgbackrest)
[ -x /usr/lib/postgresql/15/bin/pgbench ] || pkgs+=(postgresql-15 postgresql-contrib)
# pg_wait_sampling for PostgreSQL 15 (wait profiles sampled inside the server, where loaded).
[ -f /usr/lib/postgresql/15/lib/pg_wait_sampling.so ] || pkgs+=(postgresql-15-pg-wait-sampling)
# sshd for the namespaced hosts of scripts/test-hosts.sh (the multi-host tests), ssh-keygen.
[ -x /usr/sbin/sshd ] || pkgs+=(openssh-server openssh-client)
if [ "${PGRIG_WITH_BROWSER:-0}" = "1" ] && ! command -v chromium >/dev/null 2>&1; then
  pkgs+=(chromium fonts-dejavu-core)
fi
if [ "${#pkgs[@]}" -gt 0 ]; then
  echo "setup: installing ${pkgs[*]} from apt" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

# The versions the suite last passed with (constraints.txt, scripts/constraints.py): a fresh
# machine gets what was tested, not what PyPI serves that day.
PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[dev]'

# The newest PostgreSQL major, fetched once into pgrig's cache (a no-op when present).
pgrig pg install "${PGRIG_PG_MAJOR:-18}" >&2
