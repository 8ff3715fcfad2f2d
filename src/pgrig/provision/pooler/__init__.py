"""A connection pooler (pgbouncer) in front of a managed environment.

Seed 003 put pgbouncer between pgbench and PostgreSQL by hand: a config file, an auth file built
from pg_shadow, a .pgpass, and LimitNOFILE raised after "accept() failed: Too many open files"
above 900 clients. Here it is one command, and every piece is kept inside the environment:

  <env>/pooler/pgbouncer-K.ini|.pid|.log, run-K/ (unix socket), userlist.txt (0600)
  <env>/pooler.pgpass (0600, the invoking user's: how pgbench and the sampler log in)

One concern per module (patroni/postgresql's layout):
  config.py     the options (PoolerConfig, validation, a study's pooler table, --via)
  layout.py     where the pooler's files live inside the environment
  auth.py       the pool role, SCRAM verifiers, the auth file and the clients' passfile
  daemon.py     the pgbouncer binary and its processes (start, stop, status, logs, nofile)
  capacity.py   what fits: server connection limits, pool size, a run's clients
  client.py     how clients and the sampler connect (libpq variables, console parameters)
  lifecycle.py  add / remove / restart / ensure / describe / start / stop: the pieces together
  remote.py     the pooler of an environment on another host, from the control machine: on
                the server's host or a host of its own, passwords kept here

This package re-exports the names its callers use, so `from pgrig.provision import pooler`
and `pooler.add(env, cfg)` read as one concept.
"""

from __future__ import annotations

from pgrig.provision.pooler.auth import SCRAM_ITERATIONS, scram_verifier
from pgrig.provision.pooler.capacity import check_pool_fits, check_run, server_limits
from pgrig.provision.pooler.client import client_env, console_params
from pgrig.provision.pooler.config import (
    POOL_ROLE,
    STATS_USER,
    TABLE_KEYS,
    PoolerConfig,
    config_of,
    no_pooler_error,
    normalize_via,
    options,
    options_from_table,
    render_ini,
)
from pgrig.provision.pooler.daemon import (
    binary,
    is_running,
    pids,
    pids_callable,
    raise_nofile,
    status,
    version,
)
from pgrig.provision.pooler.layout import (
    auth_file,
    ini_file,
    log_file,
    passfile,
    pid_file,
    pooler_dir,
    socket_dir,
)
from pgrig.provision.pooler.lifecycle import (
    add,
    check_server_record,
    describe,
    ensure,
    for_server,
    log_offsets,
    log_since,
    parse_server,
    remove,
    restart,
    start,
    stop,
)
from pgrig.request.pooler import (  # the pooler request: one definition, for the CLI and studies
    DEFAULT_MAX_CLIENT_CONN,
    DEFAULT_MODE,
    DEFAULT_POOL_SIZE,
    KINDS,
    MODES,
)

__all__ = [
    "DEFAULT_MAX_CLIENT_CONN",
    "DEFAULT_MODE",
    "DEFAULT_POOL_SIZE",
    "KINDS",
    "MODES",
    "POOL_ROLE",
    "SCRAM_ITERATIONS",
    "STATS_USER",
    "TABLE_KEYS",
    "PoolerConfig",
    "add",
    "auth_file",
    "binary",
    "check_pool_fits",
    "check_run",
    "check_server_record",
    "client_env",
    "config_of",
    "console_params",
    "describe",
    "ensure",
    "for_server",
    "ini_file",
    "is_running",
    "log_file",
    "log_offsets",
    "log_since",
    "no_pooler_error",
    "normalize_via",
    "options",
    "options_from_table",
    "parse_server",
    "passfile",
    "pid_file",
    "pids",
    "pids_callable",
    "pooler_dir",
    "raise_nofile",
    "remove",
    "render_ini",
    "restart",
    "scram_verifier",
    "server_limits",
    "socket_dir",
    "start",
    "status",
    "stop",
    "version",
]
