"""The words a request may use: one definition each, imported by every layer above.

Names of environments, studies and profiles share one pattern (letters, digits, '_', '.', '-',
starting with a letter or digit); each kind has its own maximum length.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

Protocol = Literal["simple", "extended", "prepared"]  # pgbench -M
Connect = Literal["tcp", "socket"]  # how pgbench reaches the server or the pooler
Via = Literal["direct", "pgbouncer"]  # what a run records
TargetRole = Literal["primary", "replica", "split"]  # which servers of a topology get the load
PgbenchBuiltin = Literal["tpcb-like", "simple-update", "select-only"]
TpccStockLevel = Literal["standard", "hammerdb"]
# pgbench's per-transaction log: every transaction, a --sampling-rate sample, or none;
# auto chooses by the expected rate (load/engines/txlog_mode.py)
TxlogMode = Literal["auto", "full", "sampled", "off"]
Scenario = Literal[
    "pgbench", "tpcc", "chbench", "tickets", "custom", "sysbench", "tpch"
]  # datasets

PROTOCOLS: tuple[str, ...] = get_args(Protocol)
CONNECTS: tuple[str, ...] = get_args(Connect)
VIAS = ("direct", "pooler", "pgbouncer")  # what a user may say: "pooler" is the env's pgbouncer
PGBENCH_BUILTINS: tuple[PgbenchBuiltin, ...] = get_args(PgbenchBuiltin)
TPCC_STOCK_LEVELS: tuple[str, ...] = get_args(TpccStockLevel)
TXLOG_MODES: tuple[str, ...] = get_args(TxlogMode)
SCENARIOS: tuple[str, ...] = get_args(Scenario)
TPCC_WORKLOAD = "tpcc"
# CH-benCHmark (workloads/chbench): TPC-C's transactions and M analytic streams at once
CHBENCH_WORKLOAD = "chbench"
TPCH_PREFIX = "tpch:"  # tpch:power | tpch:throughput (workloads/tpch)
# tpch: the performance test (clause 5.3.2: the power test, then the throughput test: QphH)
TPCH_WORKLOADS = ("tpch", "tpch:power", "tpch:throughput")
TPCH_STREAMED = ("tpch", "tpch:throughput")  # the workloads that take --streams
# --streams' limit, said once: each stream's refresh pair takes one of the 23 order keys of
# every 32 that neither dbgen nor tpchgen-cli uses (workloads/tpch/refresh.py); a performance
# test's power test takes the first
TPCH_MAX_STREAMS = 22
SYSBENCH_PREFIX = "sysbench:"  # sysbench:oltp_read_write, sysbench:PATH.lua (workloads/sysbench.py)
TPCC_TYPES = ("new_order", "payment", "order_status", "delivery", "stock_level")
# streaming replicas of an environment (request/environment.py), and their replication mode:
# off is asynchronous; the others are synchronous_commit's (provision/settings/topology_layer.py)
MAX_REPLICAS = 8
PORT_RANGE = (1024, 65535)  # a server's or a pooler's TCP port (provision/server/ports.py)
SYNC_MODES = ("off", "on", "remote_write", "remote_apply")
# a PostgreSQL version as a user gives it: a major (18), an exact (18.6 or 18.6.0); ASCII
# digits only (a regex's \d takes other scripts' digits too)
_PG_VERSION_RE = re.compile(r"([0-9]{1,2})(?:\.([0-9]{1,3})(?:\.([0-9]{1,3}))?)?")

NAME_MAX = 63  # PostgreSQL's identifier length: an environment name fits a database name
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
SETTING_RE = re.compile(r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$")
# Databases that hold no benchmark data: the templates every CREATE DATABASE copies, and the
# maintenance database tools connect to.
RESERVED_DATABASES = ("template0", "template1", "postgres")


def pg_version(spec: str | int) -> tuple[int, str | None]:
    """'18' -> (18, None); '18.6' or '18.6.0' -> (18, '18.6'): every --pg and study `version`
    (provision/server/binaries.parse_spec, request.environment.Version). ValueError otherwise."""
    s = str(spec).strip()
    m = _PG_VERSION_RE.fullmatch(s)
    if not m or int(m.group(1)) < 9:
        raise ValueError(f"invalid PostgreSQL version {s!r}: use a major (18) or exact (18.6.0)")
    major = int(m.group(1))
    return major, (f"{major}.{m.group(2)}" if m.group(2) is not None else None)


def valid_name(name: object, max_len: int = NAME_MAX) -> bool:
    """An environment, study or profile name (letters, digits, '_', '.', '-'; max_len)."""
    return isinstance(name, str) and len(name) <= max_len and bool(_NAME_RE.fullmatch(name))
