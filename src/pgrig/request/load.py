"""The run request: every load parameter, its allowed values and cross-field rules, once.

`LoadParams` is what a study's [run] table holds (and what iterations and sweep points
change); `RunRequest` adds what one run of `pgrig run` or of a study needs besides (target,
settings, labels, study membership). Both are frozen pydantic models: a request that exists
is valid. Each field carries its study-file key (the alias, e.g. `duration` for duration_s)
and its CLI flag, so problems are reported in the words of the surface (see problems.py).

Field names are the archive's: every LoadParams field is a column of `runs` and a field of
RunRecord under the same name (archive/models.py derives the columns from this class).
"""

import functools
import re
from typing import Annotated, Any, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    TypeAdapter,
    model_validator,
)

from pgrig.format import duration as fmt_duration
from pgrig.request.fields import INT_MAX, STRICT, flag_field
from pgrig.request.problems import Refusal
from pgrig.request.values import (
    ascii_digits,
    check_cpus,
    cpu_count,
    foreign_digits,
    number_text,
    parse_cpu_list,
    parse_duration,
    parse_server_time,
    setting_text,
)
from pgrig.request.vocabulary import (
    CHBENCH_WORKLOAD,
    SYSBENCH_PREFIX,
    TPCC_TYPES,
    TPCC_WORKLOAD,
    TPCH_MAX_STREAMS,
    TPCH_PREFIX,
    TPCH_STREAMED,
    TPCH_WORKLOADS,
    VIAS,
    Connect,
    PgbenchBuiltin,
    Protocol,
    TargetRole,
    TpccStockLevel,
    TxlogMode,
    Via,
)

__all__ = [
    "INT_MAX",
    "LOAD_FIELDS",
    "LoadParams",
    "RunRequest",
    "ScriptSpec",
    "load_values",
    "tpcc_mix_weights",
    "validate_field",
]

MAX_ANALYTIC_CLIENTS = 64  # CH-benCHmark's analytic streams: each is a session and a thread
MAX_REPEATS = 100  # runs of one point: past this, a comparison resolves nothing more here


def check_repeat(repeat: int) -> None:
    """`--repeat N`: at least one run, at most MAX_REPEATS."""
    from pgrig.errors import PgrigError

    if repeat < 1:
        raise PgrigError(f"--repeat must be at least 1 (got {repeat}): how many runs to make")
    if repeat > MAX_REPEATS:
        raise PgrigError(
            f"--repeat must be between 1 and {MAX_REPEATS} (got {repeat}): more repeats "
            "of one point resolve nothing more on one machine (see `pgrig runs compare`)"
        )


MIN_DURATION_S = 1.0  # pgbench -T counts whole seconds: less is rounded up to a second of load
# The longest window (and, apart, warm-up) of a run pgrig takes: a month, as a tuning
# study's whole budget (tune/request.py MAX_BUDGET_S); longer is a typo ("100000h").
MAX_DURATION_S = 30 * 86400.0
# Options pgrig sets itself (or that change what its log processing reads): not extra args.
_MANAGED_OPTIONS = frozenset(
    {
        *("-c", "--client", "-j", "--jobs", "-T", "--time", "-t", "--transactions"),
        *("-R", "--rate", "-L", "--latency-limit", "-M", "--protocol", "-D", "--define"),
        *("-b", "--builtin", "-f", "--file", "-l", "--log", "--log-prefix", "-P", "--progress"),
        *("-n", "--no-vacuum", "--max-tries", "--failures-detailed", "-i", "--initialize"),
        *("-S", "--select-only", "-N", "--skip-some-updates"),
        *("--aggregate-interval", "--sampling-rate"),
    }
)
_DEFINE_NAME_RE = re.compile(r"[^\s=]+")


# --- field syntaxes --------------------------------------------------------------------------


def _seconds(value: object) -> float | None:
    """Durations: a number of seconds, or a string with its unit ("15s", "2min", "500ms")."""
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value
    return _parsed_seconds(value)


def _parsed_seconds(value: object) -> float:
    try:
        return parse_duration(value)
    except ValueError as e:
        raise Refusal(str(e)) from None


def _at_least_a_second(value: float | None) -> float | None:
    if value is not None and value < MIN_DURATION_S:
        raise Refusal(
            f"must be at least 1 s (got {number_text(value)} s): pgbench runs whole seconds"
        )
    return _whole_seconds(value)


def _whole_seconds(value: float | None) -> float | None:
    """A run's measured window: whole seconds (pgbench's -T and sysbench's --time count
    them, so 1.5 s would run 2 and be recorded 1.5), at most MAX_DURATION_S."""
    if value is None:
        return None
    if value > MAX_DURATION_S:
        raise Refusal(
            f"must be at most {fmt_duration(MAX_DURATION_S)} (got {fmt_duration(value)}): "
            "one run lasts up to a month"
        )
    if value != int(value):
        raise Refusal(
            f"must be whole seconds (got {number_text(value)} s): pgbench runs whole seconds; "
            f"give {int(value)}s or {int(value) + 1}s"
        )
    return value


def _milliseconds(value: object) -> object:
    """A latency limit: a bare number is milliseconds (pgbench -L); strings carry their unit."""
    if isinstance(value, str):
        return _parsed_seconds(value) * 1000.0
    return value


def _via(value: object) -> object:
    """ "pooler" means the environment's pooler, pgbouncer: the archive records the kind."""
    if not isinstance(value, str):
        return value
    word = value.strip().lower()
    if word not in VIAS:
        raise Refusal(f"must be one of {', '.join(VIAS)} (got {value!r})")
    return "direct" if word == "direct" else "pgbouncer"


def _cpus(value: object) -> str | None:
    """CPUs to pin a side to: a list or a count of cores (this machine's: the runner's check)."""
    if value is None:
        return None
    try:
        return check_cpus(value)
    except ValueError as e:
        raise Refusal(str(e)) from None


def _defines(value: object) -> object:
    """-D name=value: names pgbench can take, values as text (true -> on, like settings)."""
    if not isinstance(value, dict):
        return value
    out = {}
    for name, text in value.items():
        if not isinstance(name, str) or not _DEFINE_NAME_RE.fullmatch(name):
            raise Refusal(f"has an invalid variable name {name!r} (no spaces or '=')")
        try:
            out[name] = setting_text(text)
        except ValueError as e:
            raise Refusal(f"value of {name}: {e}") from None
        if foreign_digits(out[name]):  # sysbench's Lua and pgbench read numbers in 0-9 only
            raise Refusal(
                f"value of {name}: {out[name]!r} is a number in digits other than 0-9: "
                "write it with 0-9"
            )
    return out


def _extra_args(value: list[str]) -> list[str]:
    for arg in value:
        option = arg.split("=", 1)[0]
        short = option[:2] if option.startswith("-") and not option.startswith("--") else option
        if option in _MANAGED_OPTIONS or short in _MANAGED_OPTIONS:
            raise Refusal(f"must not contain {arg!r}: pgrig sets that option from the request")
    return value


def tpcc_mix_weights(value: object) -> dict[str, int]:
    """A TPC-C mix as weights per transaction type; types left out get 0 (not run).

    Takes a table ({new_order = 45, payment = 43, ...}) or five weights in the order of
    TPCC_TYPES ("45,43,4,4,4", what --mix takes). Raises Refusal.
    """
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        if len(parts) != len(TPCC_TYPES):
            raise Refusal(f"needs 5 weights ({','.join(TPCC_TYPES)}), got {value!r}")
        if not all(ascii_digits(p) for p in parts):
            raise Refusal(f"weights must be integers >= 0 (got {value!r})")
        value = dict(zip(TPCC_TYPES, map(int, parts), strict=True))
    if not isinstance(value, dict):
        raise Refusal(f'expected weights such as "45,43,4,4,4" or a table (got {value!r})')
    unknown = sorted(str(k) for k in set(value) - set(TPCC_TYPES))
    if unknown:
        raise Refusal(
            f"has an unknown TPC-C transaction type {', '.join(unknown)} "
            f"(choose from {', '.join(TPCC_TYPES)})"
        )
    out = {}
    for name in TPCC_TYPES:
        w = value.get(name, 0)
        if not isinstance(w, int) or isinstance(w, bool) or w < 0:
            raise Refusal(f"weight of {name} must be an integer >= 0 (got {w!r})")
        out[name] = w
    if sum(out.values()) == 0:
        raise Refusal("weights are all 0: nothing to run")
    return out


def _mix(value: object) -> dict[str, int] | None:
    return None if value is None else tpcc_mix_weights(value)


def _server_seconds(value: object) -> float | None:
    """A time the server is given (--query-timeout): PostgreSQL's units, a bare number in s."""
    if value is None:
        return None
    try:
        return parse_server_time(value)
    except ValueError as e:
        raise Refusal(str(e)) from None


def _statement_timeout(value: float) -> float:
    """A query timeout the server holds as given: statement_timeout is whole milliseconds up
    to INT_MAX (2147483.647 s); PostgreSQL refuses more (2147490 s was taken, and every run
    then failed at its first SET), and reads a value under half a millisecond as 0, no
    timeout (1e-09 s ran as 1 ms)."""
    ms = round(value * 1000)  # as the server rounds a fractional value: half to even
    if value > 0 and ms < 1:
        raise Refusal(
            f"must be at least 0.001 s (got {number_text(value)}): statement_timeout holds "
            "whole milliseconds, and this one rounds to 0, which is no timeout"
        )
    if ms > INT_MAX:
        raise Refusal(
            f"must be at most {INT_MAX / 1000} s (got {number_text(value)}): "
            f"statement_timeout holds at most {INT_MAX:,} ms"
        )
    return value


Seconds = Annotated[float, BeforeValidator(_seconds)]
Duration = Annotated[float, BeforeValidator(_seconds), AfterValidator(_at_least_a_second)]
CpuList = Annotated[str, BeforeValidator(_cpus)]
Defines = Annotated[dict[str, str], BeforeValidator(_defines)]
TpccMix = Annotated[dict[str, int], BeforeValidator(_mix)]


# --- scripts -----------------------------------------------------------------------------------


class ScriptSpec(BaseModel):
    """One pgbench script: a builtin (`-b tpcb-like`) or a file (`-f path`), with a weight.

    Scripts are resolved from the workload by the runner (workloads/specs.py, TPC-C, tickets).
    """

    model_config = STRICT

    name: str  # display name: "pgbench:tpcb", "tpcc:new_order", "read.sql"
    builtin: PgbenchBuiltin | None = None
    path: str | None = None
    weight: int = Field(1, ge=0, le=INT_MAX)

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.builtin is None) == (self.path is None):
            raise Refusal(f"script {self.name!r} must be either a builtin or a file")
        if self.path is not None and "@" in self.path:
            raise Refusal(
                f"script path {self.path!r} contains '@', which pgbench reads as a weight"
            )
        return self


# --- the load ----------------------------------------------------------------------------------


class LoadParams(BaseModel):
    """The load of one run: a study's [run] table, `pgrig run`'s load flags."""

    model_config = STRICT

    # "pgbench:select-only", "tpcc", "tickets:read", "a.sql@3,b.sql@1" (workloads/specs.py)
    workload: str = flag_field("--workload", min_length=1)
    via: Annotated[Via, BeforeValidator(_via)] = flag_field("--via", default="direct")
    clients: int = flag_field("--clients", default=1, ge=1, le=INT_MAX)
    threads: int = flag_field("--threads", default=1, ge=1, le=INT_MAX)
    # the measured window (-T); the warm-up comes on top of it
    duration_s: Duration | None = flag_field("--duration", default=None, alias="duration")
    transactions_per_client: int | None = flag_field(
        "--transactions", default=None, alias="transactions", ge=1, le=INT_MAX
    )
    # the lead-in is the warm-up rounded up to whole seconds (docs/measurement.md): a minimum
    warmup_s: Seconds = flag_field("--warmup", default=0.0, alias="warmup", ge=0, le=MAX_DURATION_S)
    rate: float | None = flag_field("--rate", default=None, gt=0)  # -R, transactions per second
    latency_limit_ms: Annotated[float, BeforeValidator(_milliseconds)] | None = flag_field(
        "--latency-limit", default=None, alias="latency_limit", gt=0
    )
    protocol: Protocol = flag_field("--protocol", default="simple")
    max_tries: int = flag_field("--max-tries", default=1, ge=0, le=INT_MAX)  # 0: unlimited
    connect: Connect = flag_field("--connect", default="tcp")
    server_cpus: CpuList | None = flag_field("--server-cpus", default=None)  # pin the server
    client_cpus: CpuList | None = flag_field("--client-cpus", default=None)  # taskset pgbench
    defines: Defines = flag_field("--define", default_factory=dict)  # -D name=value
    extra_pgbench_args: Annotated[list[str], AfterValidator(_extra_args)] = flag_field(
        default_factory=list
    )
    # TPC-C only: transaction mix, a warehouse per transaction, the Stock-Level flavour
    tpcc_mix: TpccMix | None = flag_field("--mix", default=None)
    all_warehouses: bool = flag_field("--all-warehouses", default=False)
    tpcc_stock_level: TpccStockLevel = flag_field("--stock-level", default="standard")
    # keep the compressed per-transaction log as an artifact of the run
    keep_txlog: bool = flag_field("--keep-txlog", default=False)
    # pgbench's per-transaction log: auto (by expected rate), full, sampled or off; the
    # archive records the mode a run used (load/engines/txlog_mode.py)
    txlog: TxlogMode = flag_field("--txlog", default="auto")

    @model_validator(mode="after")
    def _rules(self) -> Self:
        _check_time(self)
        _check_throttle(self)
        _check_workload_options(self)
        _check_cpu_sides(self)
        _check_txlog(self)
        return self

    def planned_seconds(self) -> float | None:
        """Wall time one run should take (None: bounded by transactions, unknown)."""
        if self.duration_s is None:
            return None
        return self.duration_s + self.warmup_s

    @property
    def is_tpcc(self) -> bool:
        """The run's transactions are TPC-C's: tpcc, and chbench's transactional side."""
        return self.workload in (TPCC_WORKLOAD, CHBENCH_WORKLOAD)

    @property
    def is_chbench(self) -> bool:
        return self.workload == CHBENCH_WORKLOAD

    @property
    def is_sysbench(self) -> bool:
        return self.workload.strip().startswith(SYSBENCH_PREFIX)

    @property
    def is_tpch(self) -> bool:
        w = self.workload.strip()
        return w in TPCH_WORKLOADS or w.startswith(TPCH_PREFIX)


def _check_time(p: LoadParams) -> None:
    if p.threads > p.clients:
        raise Refusal(
            lambda n: f"cannot exceed {n('clients')} ({p.threads} > {p.clients}): pgbench refuses",
            field="threads",
            others=("clients",),
        )
    if p.duration_s is not None and p.transactions_per_client is not None:
        raise Refusal(
            lambda n: f"cannot be combined with {n('duration_s')}: give one of them",
            field="transactions_per_client",
            others=("duration_s",),
        )
    if p.duration_s is None and p.transactions_per_client is None and not p.is_tpch:
        raise Refusal(
            lambda n: (
                f'is required (how long to run, e.g. 15 or "15s"), '
                f"or give {n('transactions_per_client')} per client"
            ),
            field="duration_s",
        )


def _check_cpu_sides(p: LoadParams) -> None:
    """The server and pgbench on the same CPU would compete for it: what pinning is meant to
    prevent. (Counts of cores are placed apart by the runner, load/core/pinning.py.)"""
    if not p.server_cpus or not p.client_cpus:
        return
    if cpu_count(p.server_cpus) is not None or cpu_count(p.client_cpus) is not None:
        return
    shared = sorted(set(parse_cpu_list(p.server_cpus)) & set(parse_cpu_list(p.client_cpus)))
    if shared:
        cpus = ",".join(map(str, shared))
        raise Refusal(
            lambda n: (
                f"shares CPU {cpus} with {n('server_cpus')} ({p.client_cpus} and "
                f"{p.server_cpus}): the server and pgbench would compete for it; give them "
                "separate CPUs"
            ),
            field="client_cpus",
            others=("server_cpus",),
        )


def _check_throttle(p: LoadParams) -> None:
    if p.latency_limit_ms is not None and p.rate is None:
        raise Refusal(
            lambda n: (
                f"needs {n('rate')}: pgrig uses -L to skip transactions already late "
                "behind a throttled schedule"
            ),
            field="latency_limit_ms",
            others=("rate",),
        )
    if p.max_tries == 0 and p.duration_s is None and p.latency_limit_ms is None:
        raise Refusal(
            lambda n: (
                f"0 (unlimited retries) needs {n('duration_s')} or "
                f"{n('latency_limit_ms')}: pgbench refuses"
            ),
            field="max_tries",
            others=("duration_s", "latency_limit_ms", "transactions_per_client"),
        )


def _check_txlog(p: LoadParams) -> None:
    if p.is_tpcc and p.txlog in ("sampled", "off"):
        raise Refusal(
            lambda n: (
                f"{p.txlog} is not available with {n('workload')} {p.workload}: NOPM and "
                "rollbacks are counted from its per-transaction log"
            ),
            field="txlog",
            others=("workload",),
        )
    if p.keep_txlog and p.txlog in ("sampled", "off"):
        raise Refusal(
            lambda n: f"needs every transaction logged: not with {n('txlog')} {p.txlog}",
            field="keep_txlog",
            others=("txlog",),
        )


def _check_workload_options(p: LoadParams) -> None:
    """Options of one workload are refused elsewhere rather than silently ignored."""
    if p.is_sysbench:
        _check_sysbench(p)
    if p.is_tpch:
        _check_tpch(p)
    if p.is_chbench and p.transactions_per_client is not None:
        raise Refusal(
            lambda n: (
                f"does not apply to {n('workload')} chbench: its analytic streams run over a "
                f"timed window; give {n('duration_s')}"
            ),
            field="transactions_per_client",
            others=("workload", "duration_s"),
        )
    if p.is_tpcc:
        if p.defines:
            raise Refusal(
                lambda n: (
                    f"does not apply to {n('workload')} {p.workload}: TPC-C sets its own variables"
                ),
                field="defines",
                others=("workload",),
            )
        return
    tpcc_only = {
        "tpcc_mix": p.tpcc_mix is not None,
        "all_warehouses": p.all_warehouses,
        "tpcc_stock_level": p.tpcc_stock_level != "standard",
    }
    for name, given in tpcc_only.items():
        if given:
            raise Refusal(
                lambda n: f"applies only to {n('workload')} tpcc (got {p.workload!r})",
                field=name,
                others=("workload",),
            )


# What sysbench cannot do as pgrig asks (load/engines/sysbench_driver.py), with the reason.
_SYSBENCH_REFUSED: dict[str, str] = {
    "threads": "sysbench runs one thread per client (--clients); leave --threads at 1",
    "transactions_per_client": "sysbench runs are timed: give a duration",
    "latency_limit_ms": "sysbench has no latency limit",
    "max_tries": "sysbench retries deadlocks and serialization failures itself",
    "extra_pgbench_args": "these are pgbench options; give sysbench's Lua options with --define",
    "keep_txlog": "sysbench keeps no per-transaction log",
    "txlog": "sysbench keeps no per-transaction log (its percentiles come from --histogram)",
}


# What a TPC-H run does not take (load/engines/tpch_driver.py), with the reason.
_TPCH_REFUSED: dict[str, str] = {
    "duration_s": "a TPC-H run lasts as long as its queries take (bound them with --query-timeout)",
    "transactions_per_client": "a TPC-H stream runs its 22 queries once",
    "warmup_s": "a TPC-H run measures its first query too (the spec's power test is cold)",
    "clients": "TPC-H sessions are its streams: give --streams with tpch or tpch:throughput",
    "threads": "TPC-H runs one session per stream",
    "rate": "TPC-H queries are not throttled",
    "latency_limit_ms": "TPC-H has no latency limit: give --query-timeout",
    "max_tries": "TPC-H queries are not retried",
    "defines": "TPC-H draws its own parameters (give --tpch-seed)",
    "extra_pgbench_args": "these are pgbench options",
    "keep_txlog": "TPC-H keeps no per-transaction log",
    "txlog": "TPC-H keeps no per-transaction log: each query's time is recorded",
    "protocol": "TPC-H sends each query once, as text",
}


def _check_tpch(p: LoadParams) -> None:
    if p.workload.strip() not in TPCH_WORKLOADS:
        raise Refusal(
            f"must be one of {', '.join(TPCH_WORKLOADS)} (got {p.workload!r})", field="workload"
        )
    given = {
        "duration_s": p.duration_s is not None,
        "transactions_per_client": p.transactions_per_client is not None,
        "warmup_s": p.warmup_s != 0,
        "clients": p.clients != 1,
        "threads": p.threads != 1,
        "rate": p.rate is not None,
        "latency_limit_ms": p.latency_limit_ms is not None,
        "max_tries": p.max_tries != 1,
        "defines": bool(p.defines),
        "extra_pgbench_args": bool(p.extra_pgbench_args),
        "keep_txlog": p.keep_txlog,
        "txlog": p.txlog not in ("auto", "off"),
        "protocol": p.protocol != "simple",
    }
    _refuse_first_given(p, given, _TPCH_REFUSED)


def _refuse_first_given(p: LoadParams, given: dict[str, bool], why: dict[str, str]) -> None:
    """Refuse the first option given (in `given`'s order) that the workload's engine does
    not take, with that engine's reason."""
    wrong = next((name for name, here in given.items() if here), None)
    if wrong is not None:
        raise Refusal(
            lambda n: f"does not apply to {n('workload')} {p.workload}: {why[wrong]}",
            field=wrong,
            others=("workload",),
        )


def _check_sysbench(p: LoadParams) -> None:
    if "," in p.workload:
        raise Refusal("a sysbench workload cannot be mixed with other scripts", field="workload")
    given = {
        "threads": p.threads != 1,
        "transactions_per_client": p.transactions_per_client is not None,
        "latency_limit_ms": p.latency_limit_ms is not None,
        "max_tries": p.max_tries != 1,
        "extra_pgbench_args": bool(p.extra_pgbench_args),
        "keep_txlog": p.keep_txlog,
        "txlog": p.txlog not in ("auto", "off"),
    }
    _refuse_first_given(p, given, _SYSBENCH_REFUSED)
    if p.protocol == "extended":
        raise Refusal(
            lambda n: (
                f"extended is not available with {n('workload')} {p.workload}: sysbench "
                "uses server-side prepared statements (prepared) or none (simple)"
            ),
            field="protocol",
            others=("workload",),
        )


# --- the full request ----------------------------------------------------------------------------


TPCH_FIELDS = ("query_timeout_s", "streams", "tpch_seed")  # TpchLoad's own, TPC-H's
CHBENCH_FIELDS = ("analytic_clients",)  # TpchLoad's own, CH-benCHmark's


class TpchLoad(LoadParams):
    """The load parameters with TPC-H's own (workloads/tpch) and CH-benCHmark's analytic
    streams: what a run request and a study's [run] table both take (a study file's
    `analytic_clients = 1` as `--analytic-clients 1`). Not among LOAD_FIELDS (the record's
    columns): a TPC-H run records them in extra["tpch"], a CH-benCHmark run in
    extra["chbench"]."""

    # a query that runs longer is cancelled and recorded as timed out; the query streams of
    # tpch:throughput and tpch; the seed of the substitution parameters (None: a new one,
    # recorded with the run)
    query_timeout_s: Annotated[
        float, BeforeValidator(_server_seconds), AfterValidator(_statement_timeout)
    ] | None = flag_field(
        "--query-timeout", default=None, alias="query_timeout", gt=0, allow_inf_nan=False,
    )  # fmt: skip
    streams: int | None = flag_field("--streams", default=None, ge=1, le=TPCH_MAX_STREAMS)
    tpch_seed: int | None = flag_field("--tpch-seed", default=None, ge=0, le=2**62)
    # CH-benCHmark (workloads/chbench): analytic streams beside the TPC-C clients (0: TPC-C
    # alone on the same data); required with -w chbench, refused elsewhere
    analytic_clients: int | None = flag_field(
        "--analytic-clients", default=None, ge=0, le=MAX_ANALYTIC_CLIENTS
    )

    @model_validator(mode="after")
    def _tpch_options(self) -> Self:
        given = [
            name
            for name in TPCH_FIELDS
            if getattr(self, name) is not None
            # CH-benCHmark's analytic queries take the timeout too (workloads/chbench)
            and not (name == "query_timeout_s" and self.is_chbench)
        ]
        if given and not self.is_tpch:
            raise Refusal(
                lambda n: f"applies only to {n('workload')} {', '.join(TPCH_WORKLOADS)}",
                field=given[0],
                others=("workload",),
            )
        if self.streams is not None and self.workload.strip() not in TPCH_STREAMED:
            raise Refusal(
                lambda n: f"applies only to {n('workload')} {' or '.join(TPCH_STREAMED)}",
                field="streams",
                others=("workload",),
            )
        return self

    @model_validator(mode="after")
    def _chbench_options(self) -> Self:
        if self.is_chbench and self.analytic_clients is None:
            raise Refusal(
                lambda n: (
                    f"is required with {n('workload')} chbench: how many analytic streams run "
                    "beside the TPC-C clients (0: the TPC-C mix alone on the same data)"
                ),
                field="analytic_clients",
                others=("workload",),
            )
        if self.analytic_clients is not None and not self.is_chbench:
            raise Refusal(
                lambda n: f"applies only to {n('workload')} chbench (got {self.workload!r})",
                field="analytic_clients",
                others=("workload",),
            )
        if self.is_chbench and self.analytic_clients == 0 and self.query_timeout_s is not None:
            raise Refusal(
                lambda n: f"bounds the analytic queries: {n('analytic_clients')} 0 runs none",
                field="query_timeout_s",
                others=("analytic_clients",),
            )
        return self


class RunRequest(TpchLoad):
    """One run: the load, where it goes, the per-run settings layer, labels and membership."""

    env_name: str = flag_field("ENV")
    database: str | None = flag_field("--db", default=None, min_length=1)  # None: the env's default
    settings: dict[str, str] = flag_field("--set", default_factory=dict)  # the per-run layer
    profile: str | None = flag_field("--profile", default=None)  # a profile for this run only
    scenario: str | None = None  # pgbench, tpcc, tickets, custom, sysbench (None: from the dataset)
    note: str | None = flag_field("--note", default=None)
    tags: dict[str, str] = flag_field("--tag", default_factory=dict)
    # read the database into shared buffers before the run's CHECKPOINT (load/core/prewarm.py)
    prewarm: bool = flag_field("--prewarm", default=False)
    # pg_stat_activity's wait events sampled this many times a second (None: by the measured
    # window's length, metrics/wait_sampler.choose_hz; 1: the PostgreSQL sampler's own)
    waits_hz: float | None = flag_field("--waits-hz", default=None, ge=1, le=50)
    study: str | None = None
    study_point: str | None = None
    repeat: int = Field(0, ge=0, lt=MAX_REPEATS)  # this run's index among the point's repeats
    # which servers of an environment with replicas get the load (load/core/topology.py): the
    # primary, the replicas (read-only load) or all of them, clients spread by libpq
    target_role: TargetRole = flag_field("--target", default="primary")
    # a backup taken while the load runs (a study's [run].backup; load/backup/backup_during.py)
    backup_during: str | None = None
    # load hosts (`--load-from`, load/remote/split.py shares the load); empty: pgbench here
    load_from: list[str] = flag_field("--load-from", default_factory=list)
    # the scripts the workload resolved to (the runner fills them in)
    scripts: list[ScriptSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _weights(self) -> Self:
        if self.scripts and sum(s.weight for s in self.scripts) == 0:
            raise Refusal("all script weights are 0", field="workload")
        return self

    @model_validator(mode="after")
    def _chbench_load_from(self) -> Self:
        if self.is_chbench and self.load_from:
            raise Refusal(
                lambda n: (
                    f"does not apply to {n('workload')} chbench: its analytic streams run "
                    "from this machine beside pgbench"
                ),
                field="load_from",
                others=("workload",),
            )
        return self


LOAD_FIELDS = tuple(LoadParams.model_fields)


def load_values(params: LoadParams) -> dict[str, Any]:
    """Every load parameter by field name: what fills a RunRecord's load fields."""
    return {name: getattr(params, name) for name in LOAD_FIELDS}


@functools.cache
def _adapter(model: type[BaseModel], name: str) -> TypeAdapter[object]:
    info = model.model_fields[name]
    tp: Any = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    return TypeAdapter(tp, config=STRICT)


def validate_field(model: type[BaseModel], name: str, value: object) -> object:
    """One field's value checked alone (a sweep's values, before they meet each other)."""
    return _adapter(model, name).validate_python(value)
