"""The knob space a tuning study searches: which settings, over which ranges, for this host.

The default space follows the issue's groups (memory, WAL and checkpoints, planner costs,
background writer, parallelism, asynchronous I/O on 18); its ranges derive from the host's RAM
and CPUs (and the free disk space for max_wal_size). `--space FILE` replaces it by a TOML file:

    [knobs.shared_buffers]
    low = "128MB"          # sizes with a unit, or numbers (in `unit`, default none)
    high = "2GB"
    log = true             # sample on a log scale
    [knobs.random_page_cost]
    low = 1.1              # integer ends sample integers: write 1.0, not 1, for a real range
    high = 4.0
    [knobs.wal_compression]
    choices = ["off", "lz4"]

Durability-changing settings (fsync, synchronous_commit, full_page_writes) are left out unless
the user allows unsafe settings. Every knob is then checked against the exact server version
(`check_space`): names through the catalogue, both ends of each range and every choice through
the real parser (`postgres -C`), like any setting pgrig applies; choices a build rejects
(zstd without libzstd) are dropped with a note. Knobs that need a restart are marked, so the
runner can keep them fixed over a group of trials (RESTART_GROUP).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pydantic import ValidationError

from pgrig import units
from pgrig.errors import PgrigError
from pgrig.provision.settings import profiles
from pgrig.record.documents import SpaceKnobDoc
from pgrig.request.problems import in_file
from pgrig.tune import space_file
from pgrig.tune.space_file import KnobTable, SpaceFile

if TYPE_CHECKING:
    from pgrig.provision.settings.catalog import Catalog

MIB = 1024**2
UNSAFE = ("fsync", "synchronous_commit", "full_page_writes")
# Linux's methods (fsync_writethrough exists elsewhere only): check_space drops what the server
# rejects.
WAL_SYNC_METHODS = ("fdatasync", "open_datasync", "fsync", "open_sync")
RESTART_GROUP = 4  # trials sharing the values of restart-only knobs (one restart per group)


# a knob's value as Optuna holds it: a choice (text), or a number of its range
Param = str | int | float


class Suggester(Protocol):
    """What a knob needs of an Optuna trial (optuna.trial.Trial has these methods)."""

    def suggest_int(self, name: str, low: int, high: int, *, log: bool = False) -> int: ...

    def suggest_float(self, name: str, low: float, high: float, *, log: bool = False) -> float: ...

    def suggest_categorical(self, name: str, choices: Sequence[str]) -> str: ...


@dataclass(frozen=True)
class Knob:
    """One setting to tune: a numeric range (int or float) in `unit`, or a list of choices."""

    name: str
    low: float = 0
    high: float = 0
    unit: str = ""  # appended to the number: "MB", "s", "ms" (PostgreSQL accepts these)
    log: bool = False
    integer: bool = True
    choices: tuple[str, ...] = ()
    restart: bool = False  # needs a server restart (context postmaster)
    group: str = ""
    # a space file's low and high as written ("3TB" where the range counts in kB): what a
    # refusal quotes back
    written: tuple[str, ...] = field(default=(), compare=False)

    def suggest(self, trial: Suggester) -> str:
        """The value this trial tries, as setting text."""
        if self.choices:
            return str(trial.suggest_categorical(self.name, list(self.choices)))
        if self.integer:
            return self.text(
                trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log)
            )
        return self.text(trial.suggest_float(self.name, self.low, self.high, log=self.log))

    def text(self, value: Param) -> str:
        """A sampled value (Optuna's parameter) as setting text: 512 -> '512MB'."""
        if self.choices:
            return str(value)
        if self.integer:
            return f"{int(value)}{self.unit}"
        return f"{float(value):.4g}{self.unit}"

    def ends(self) -> list[str]:
        """Values that must all be valid: both ends of the range, or every choice."""
        return list(self.choices) if self.choices else [self.text(self.low), self.text(self.high)]

    def describe(self) -> str:
        if self.choices:
            return " | ".join(self.choices)
        scale = ", log scale" if self.log else ""
        return f"{self.text(self.low)} .. {self.text(self.high)}{scale}"


@dataclass
class Space:
    knobs: list[Knob]
    notes: list[str] = field(default_factory=list)
    origin: str = ""  # the space file ("": the default space, built for this host)

    @property
    def names(self) -> list[str]:
        return [k.name for k in self.knobs]

    def knob(self, name: str) -> Knob:
        return next(k for k in self.knobs if k.name == name)

    @property
    def restart_names(self) -> list[str]:
        return [k.name for k in self.knobs if k.restart]

    def suggest(self, trial: Suggester) -> dict[str, str]:
        """Settings for one trial (restart-only knobs first: the runner may have fixed them)."""
        ordered = sorted(self.knobs, key=lambda k: not k.restart)
        return {k.name: k.suggest(trial) for k in ordered}

    def settings(self, params: Mapping[str, Param]) -> dict[str, str]:
        """A finished trial's Optuna parameters as settings (knobs it lacks are left out)."""
        return {k.name: k.text(params[k.name]) for k in self.knobs if k.name in params}

    def with_restart(self, needs_restart: Callable[[str], bool]) -> Space:
        knobs = [replace(k, restart=needs_restart(k.name)) for k in self.knobs]
        return Space(knobs, list(self.notes), self.origin)

    @property
    def unsafe_names(self) -> list[str]:
        return [k.name for k in self.knobs if k.name in UNSAFE]

    def as_dicts(self) -> list[SpaceKnobDoc]:
        """What the archive keeps with the study and the report shows."""
        return [
            SpaceKnobDoc(name=k.name, group=k.group, range=k.describe(), restart=k.restart)
            for k in self.knobs
        ]


# --- the default space -----------------------------------------------------------------------
# --- spaces per workload class (`--space read|mixed|write`, the presets') ---------------------
# The knobs that matter for each class of workload: fewer knobs, so a dozen trials explore
# them; the default space (all groups) stays for `--space default`.
CLASS_KNOBS: dict[str, tuple[str, ...]] = {
    # reads over data larger than shared_buffers: the cache, the planner's view of I/O
    "read": ("shared_buffers", "effective_cache_size", "random_page_cost",
             "effective_io_concurrency", "jit", "max_parallel_workers_per_gather",
             "io_method", "io_workers", "bgwriter_delay", "bgwriter_lru_maxpages",
             "checkpoint_timeout", "max_wal_size"),
    # OLTP writes plus reports that sort and hash: memory per operation, then WAL
    "mixed": ("shared_buffers", "work_mem", "hash_mem_multiplier", "jit",
              "max_parallel_workers_per_gather", "random_page_cost", "effective_io_concurrency",
              "max_wal_size", "checkpoint_timeout", "checkpoint_completion_target",
              "wal_compression", "commit_delay", "commit_siblings", "bgwriter_delay",
              "bgwriter_lru_maxpages"),
    # commits on a slow disk: WAL volume and flushes, checkpoint spreading, the bgwriter
    "write": ("shared_buffers", "max_wal_size", "checkpoint_timeout",
              "checkpoint_completion_target", "wal_buffers", "wal_compression",
              "wal_sync_method", "commit_delay", "commit_siblings", "bgwriter_delay",
              "bgwriter_lru_maxpages", "bgwriter_lru_multiplier", "effective_io_concurrency",
              "io_method", "io_workers"),
    # few sessions running large queries (TPC-H): memory per sort and hash, JIT and when it
    # compiles, parallel query and what the planner thinks it costs, the planner's view of I/O
    "analytics": ("shared_buffers", "effective_cache_size", "work_mem", "hash_mem_multiplier",
                  "jit", "jit_above_cost", "jit_inline_above_cost", "jit_optimize_above_cost",
                  "max_parallel_workers_per_gather", "parallel_setup_cost",
                  "parallel_tuple_cost", "random_page_cost", "effective_io_concurrency"),
    # TPC-C's commits beside analytic queries on the same tables (CH-benCHmark): the cache
    # both share, memory per sort and hash and parallel query for the queries (which take
    # the CPU the transactions want), the planner's view of I/O, and the WAL and checkpoints
    # the transactions write through
    "htap": ("shared_buffers", "effective_cache_size", "work_mem", "hash_mem_multiplier",
             "jit", "max_parallel_workers_per_gather", "parallel_setup_cost",
             "parallel_tuple_cost", "random_page_cost", "max_wal_size",
             "checkpoint_completion_target", "wal_buffers"),
}  # fmt: skip
# Knobs only the class spaces search (not in the default space): name -> the knob. The JIT
# thresholds around their defaults (100,000 and 500,000) on a log scale, the parallel costs
# around theirs (1,000 and 0.1).
CLASS_ONLY: dict[str, Knob] = {
    k.name: k
    for k in (
        Knob("hash_mem_multiplier", 1.0, 8.0, integer=False, group="memory"),
        Knob("jit_above_cost", 10_000, 10_000_000, log=True, group="planner"),
        Knob("jit_inline_above_cost", 50_000, 50_000_000, log=True, group="planner"),
        Knob("jit_optimize_above_cost", 50_000, 50_000_000, log=True, group="planner"),
        Knob("parallel_setup_cost", 10.0, 10_000.0, integer=False, log=True, group="parallel"),
        Knob("parallel_tuple_cost", 0.001, 1.0, integer=False, log=True, group="parallel"),
    )
}
CLASSES = tuple(CLASS_KNOBS)
READ_SHARED_BUFFERS = 0.6  # of RAM: read-heavy data may want most of it cached by the server


def class_space(
    workload_class: str,
    major: int,
    ram_bytes: int,
    cpus: int,
    *,
    disk_free_bytes: int | None = None,
    io_uring: bool = False,
    allow_unsafe: bool = False,
) -> Space:
    """The default space cut to the class's knobs (CLASS_KNOBS), with the class-only knobs it
    names (CLASS_ONLY: hash_mem_multiplier, JIT thresholds, parallel costs) and
    shared_buffers up to READ_SHARED_BUFFERS of RAM for reads."""
    if workload_class not in CLASS_KNOBS:
        raise PgrigError(
            f"--space {workload_class}: use default, {', '.join(CLASSES)} or a TOML file"
        )
    full = default_space(
        major, ram_bytes, cpus, disk_free_bytes=disk_free_bytes, io_uring=io_uring,
        allow_unsafe=allow_unsafe,
    )  # fmt: skip
    wanted = CLASS_KNOBS[workload_class]
    knobs = []
    for k in full.knobs:
        if k.name == "shared_buffers" and workload_class == "read":
            k = replace(k, high=max(256, int(ram_bytes // MIB * READ_SHARED_BUFFERS)))
        if k.name in wanted or k.group == "unsafe":
            knobs.append(k)
    knobs += [CLASS_ONLY[name] for name in wanted if name in CLASS_ONLY]
    if "work_mem" in wanted:  # reports: up to 1/32 of RAM per sort or hash (8 clients, 2 nodes)
        knobs = [
            replace(k, high=_clamp(ram_bytes // MIB // 32, 64, 2048)) if k.name == "work_mem" else k
            for k in knobs
        ]
    notes = [f"space for {workload_class} workloads: {len(knobs)} knobs", *full.notes]
    return Space(knobs, notes)


def warm_start(space: Space, settings: Mapping[str, str]) -> dict[str, Param]:
    """A profile's point (pgtune-oltp's) as Optuna parameters of `space`: every knob it sets,
    in the knob's unit, clipped to the knob's range; a value the space cannot express (a
    choice it lacks, a unit it cannot convert) is left out, and Optuna samples that knob."""
    out: dict[str, Param] = {}
    for k in space.knobs:
        text = settings.get(k.name)
        if text is None:
            continue
        if k.choices:
            if str(text) in k.choices:
                out[k.name] = str(text)
            continue
        value = _in_unit(str(text), k.unit)
        if value is None:
            continue
        value = min(max(value, k.low), k.high)
        out[k.name] = round(value) if k.integer else float(value)
    return out


_TIME_S = units.TIME_UNITS


def _in_unit(text: str, unit: str) -> float | None:
    """'6171024kB' in MB -> 6026.4; '15min' in s -> 900; '1.1' without a unit -> 1.1."""

    sign = -1.0 if text.strip().startswith("-") else 1.0
    m = units.amount(text.strip().removeprefix("-"))
    if not m:
        return None
    number, given = sign * m.value, m.unit
    if not given:
        return number if not unit or unit in ("s", "ms") else None
    if unit in ("MB", "kB"):
        try:
            size = profiles.parse_size(text)
        except PgrigError:
            return None
        return size / (MIB if unit == "MB" else 1024)
    if unit in _TIME_S and given in _TIME_S:
        return number * _TIME_S[given] / _TIME_S[unit]
    return None


def default_space(
    major: int,
    ram_bytes: int,
    cpus: int,
    *,
    disk_free_bytes: int | None = None,
    io_uring: bool = False,
    allow_unsafe: bool = False,
) -> Space:
    """The issue's knob groups with ranges for this host; 18-only knobs only on 18+."""
    if ram_bytes < 256 * MIB or cpus < 1:
        raise PgrigError(f"tuning needs at least 256MB of RAM and 1 CPU (have {ram_bytes} B)")
    ram_mb = ram_bytes // MIB
    wal_mb = 16 * 1024 if disk_free_bytes is None else disk_free_bytes // MIB // 4
    wal_mb = _clamp(wal_mb, 512, 16 * 1024)
    parallel = min(cpus, 8)  # max_worker_processes defaults to 8: more would not start
    knobs = [
        Knob("shared_buffers", 128, max(256, ram_mb * 2 // 5), "MB", log=True, group="memory"),
        Knob("effective_cache_size", max(128, ram_mb // 4), ram_mb, "MB", log=True, group="memory"),
        Knob("work_mem", 1, _clamp(ram_mb // 128, 4, 1024), "MB", log=True, group="memory"),
        Knob(
            "maintenance_work_mem",
            16,
            _clamp(ram_mb // 8, 64, 2048),
            "MB",
            log=True,
            group="memory",
        ),
        Knob("max_wal_size", 256, wal_mb, "MB", log=True, group="wal"),
        Knob("checkpoint_timeout", 30, 1800, "s", log=True, group="wal"),
        Knob("checkpoint_completion_target", 0.5, 0.95, integer=False, group="wal"),
        Knob("wal_buffers", 1, 64, "MB", log=True, group="wal"),
        Knob("wal_compression", choices=_wal_compression(major), group="wal"),
        # How the WAL is flushed at commit: all methods are durable on storage that honours
        # them, and on fsync-bound workloads they can differ (bench/tpcb_knob_ceiling.py).
        Knob("wal_sync_method", choices=WAL_SYNC_METHODS, group="wal"),
        Knob("commit_delay", 0, 1000, group="wal"),  # microseconds
        Knob("commit_siblings", 1, 20, group="wal"),
        Knob("random_page_cost", 1.0, 4.0, integer=False, group="planner"),
        Knob("effective_io_concurrency", 1, 512, log=True, group="planner"),
        Knob("jit", choices=("on", "off"), group="planner"),
        Knob("bgwriter_delay", 10, 1000, "ms", log=True, group="bgwriter"),
        Knob("bgwriter_lru_maxpages", 0, 1000, group="bgwriter"),
        Knob("bgwriter_lru_multiplier", 0.5, 10.0, integer=False, group="bgwriter"),
        Knob("max_parallel_workers_per_gather", 0, parallel, group="parallel"),
    ]
    notes: list[str] = []
    if major >= 18:
        methods = ("worker", "sync", "io_uring") if io_uring else ("worker", "sync")
        knobs.append(Knob("io_method", choices=methods, group="io"))
        knobs.append(
            Knob("io_workers", 1, min(profiles.IO_WORKERS_MAX, max(2, 2 * cpus)), group="io")
        )
        if not io_uring:
            notes.append("io_method = io_uring left out: this build has no liburing")
    else:
        notes.append(
            f"io_method and io_workers left out: PostgreSQL {major} has no asynchronous I/O"
        )
    if allow_unsafe:
        knobs += [Knob(name, choices=("on", "off"), group="unsafe") for name in UNSAFE]
        notes.append(unsafe_warning(UNSAFE))
    else:
        notes.append(
            f"durability settings ({', '.join(UNSAFE)}) left out: --allow-unsafe adds them"
        )
    return Space(knobs, notes)


def unsafe_warning(names: tuple[str, ...] | list[str]) -> str:
    return (
        f"UNSAFE: the search may turn off {', '.join(names)}: a crash can lose or corrupt data; "
        "only for throw-away data, never for a configuration you will deploy as is"
    )


def _wal_compression(major: int) -> tuple[str, ...]:
    """off/pglz/lz4/zstd on 15+ (the build may lack some: check_space drops those); 14: on/off."""
    if major < 15:
        return ("off", "on")
    return ("off", "pglz", "lz4", "zstd")


def _clamp(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


# --- a space file ----------------------------------------------------------------------------
def load_space(
    path: Path,
    allow_unsafe: bool = False,
    unit_of: Callable[[str], str | None] | None = None,
) -> Space:
    """A TOML space file (space_file.SpaceFile); a problem is one error naming the file and
    the key path. `unit_of(name)`: the setting's pg_settings unit (the catalogue; KeyError:
    not known), so each knob's values are read in its setting's kind: a time for
    checkpoint_timeout, a size for work_mem, a plain number for random_page_cost."""
    where = f"--space {path}"
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:  # "Is a directory", "Permission denied": no errno and path noise
        raise PgrigError(f"{where}: cannot read: {e.strerror or e}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise PgrigError(f"{where}: cannot read: {e}") from None
    try:
        file = SpaceFile.model_validate(data)
    except ValidationError as e:
        raise PgrigError(f"{where}: {in_file(e, SpaceFile)}") from None
    for name, table in file.knobs.items():
        try:
            unit = unit_of(name) if unit_of is not None else None
        except KeyError:  # not known: the server's parser judges its values (check_space)
            continue
        if unit_of is not None:
            _check_kind(where, name, table, unit)
    knobs = [_knob(name, table) for name, table in file.knobs.items()]
    unsafe = [k.name for k in knobs if k.name in UNSAFE]
    notes = []
    if unsafe and not allow_unsafe:
        raise PgrigError(
            f"{where}: knobs.{unsafe[0]}: changes durability: add --allow-unsafe "
            "(only for throw-away data) or remove it"
        )
    if unsafe:
        notes.append(unsafe_warning(unsafe))
    elif allow_unsafe:
        notes.append(
            f"--allow-unsafe: the space file has no durability knob ({', '.join(UNSAFE)}): "
            "nothing unsafe is searched"
        )
    return Space(knobs, notes, str(path))


def _check_kind(where: str, name: str, table: KnobTable, pg_unit: str | None) -> None:
    """A range's values in the kind its setting takes (pg_settings unit)."""
    if table.choices is not None:
        return
    wanted, given = space_file.setting_kind(pg_unit), table.kind()
    if given is None or given == wanted:
        return
    key = "unit" if not isinstance(table.low, str) else "low"
    shown = table.unit if key == "unit" else table.low
    if wanted is None:
        raise PgrigError(
            f"{where}: knobs.{name}.{key}: {name} takes a plain number, not a {given} "
            f"({shown!r}): give low and high as numbers"
        )
    raise PgrigError(
        f"{where}: knobs.{name}.{key}: {name} takes a {wanted} ({space_file.kind_units(wanted)}"
        f"), not a {given} ({shown!r})"
    )


def _knob(name: str, table: KnobTable) -> Knob:
    if table.choices is not None:
        return Knob(name, choices=tuple(table.choices), group="file")
    low, high, unit = table.bounds()
    integer = all(isinstance(v, int) for v in (low, high))
    written = tuple(
        v if isinstance(v, str) else f"{v}{table.unit}" for v in (table.low, table.high)
    )
    return Knob(
        name, low, high, unit, log=table.log, integer=integer, group="file", written=written
    )


# --- validation against the server -----------------------------------------------------------
class Validator(Protocol):
    def __call__(self, settings: dict[str, str]) -> None:
        """Raise PgrigError (InvalidSetting) if the server would refuse these settings."""


def check_space(space: Space, check: Validator) -> Space:
    """Every range end and choice through `check` (the real parser). A space file is the
    user's input: any value the server refuses is one error naming the file and the key path
    (knobs.work_mem.high, knobs.wal_compression.choices[3]). The default space is pgrig's own:
    choices this build lacks (zstd without libzstd) are dropped with a note. A space left
    without a knob is refused: there would be nothing to search."""
    strict = bool(space.origin)
    where = f"--space {space.origin}" if strict else "--space"
    numeric = [k for k in space.knobs if not k.choices]
    for side in (0, 1):
        values = {k.name: k.ends()[side] for k in numeric}
        try:
            check(values)
        except PgrigError as whole:
            if strict:  # name the culprit's key path
                for k in numeric:
                    try:
                        check({k.name: k.ends()[side]})
                    except PgrigError as e:
                        key = ("low", "high")[side]
                        said = _said_refusal(check, k, side) or e
                        raise PgrigError(f"{where}: knobs.{k.name}.{key}: {said}") from None
            raise PgrigError(f"{where}: {whole}") from None
    knobs, notes = [], list(space.notes)
    for k in space.knobs:
        if not k.choices:
            knobs.append(k)
            continue
        kept = []
        for i, choice in enumerate(k.choices):
            try:
                check({k.name: choice})
                kept.append(choice)
            except PgrigError as e:
                if strict:
                    raise PgrigError(f"{where}: knobs.{k.name}.choices[{i}]: {e}") from None
                notes.append(f"{k.name} = {choice} left out: {e}")
        if len(kept) >= 2:
            knobs.append(replace(k, choices=tuple(kept)))
        else:
            notes.append(f"{k.name} left out: fewer than two of its values are accepted")
    if not knobs:
        raise PgrigError(f"{where}: no knob is left to search ({'; '.join(notes) or 'empty'})")
    return Space(knobs, notes, space.origin)


def _said_refusal(check: Validator, knob: Knob, side: int) -> PgrigError | None:
    """The server's refusal of a range end as the file wrote it ("3TB", not the
    "3221225472kB" the range counts in), None when it takes that text (the refusal is then of
    the converted end, which is the one to show)."""
    if not knob.written or knob.written[side] == knob.ends()[side]:
        return None
    try:
        check({knob.name: knob.written[side]})
    except PgrigError as e:
        return e
    return None


JIT_KNOBS = ("jit", "jit_above_cost", "jit_inline_above_cost", "jit_optimize_above_cost")


def without_jit(space: Space) -> Space:
    """A space for a build without a JIT provider: its JIT settings change nothing there."""
    left = [k for k in space.knobs if k.name not in JIT_KNOBS]
    if len(left) == len(space.knobs):
        return space
    note = (
        "jit and its thresholds left out: this build has no JIT provider (llvmjit.so, built "
        "without --with-llvm), so they change nothing"
    )
    return Space(left, [*space.notes, note], space.origin)


def for_server(
    bindir: str | Path, version: str, space_arg: str, allow_unsafe: bool, disk_path: Path
) -> Space:
    """The space `--space` names (default, or a file) for this server build, every knob checked
    by its parser, restart-only knobs marked from its catalogue; `disk_path`: where the WAL
    grows (max_wal_size stays below a quarter of its free space)."""
    import shutil

    from pgrig.provision.server import binaries
    from pgrig.provision.settings import catalog, insights_layer, validator

    major = binaries.major_of(version)
    cat = catalog.load_catalog(bindir, version)
    if space_arg in CLASS_KNOBS:
        space = class_space(
            space_arg,
            major,
            profiles.host_ram_bytes(),
            profiles.host_cpus(),
            disk_free_bytes=shutil.disk_usage(disk_path).free,
            io_uring=profiles.io_uring_supported(bindir, major),
            allow_unsafe=allow_unsafe,
        )
    elif space_arg == "default":
        space = default_space(
            major,
            profiles.host_ram_bytes(),
            profiles.host_cpus(),
            disk_free_bytes=shutil.disk_usage(disk_path).free,
            io_uring=profiles.io_uring_supported(bindir, major),
            allow_unsafe=allow_unsafe,
        )
    else:
        path = space_file_path(space_arg)
        space = load_space(path, allow_unsafe, unit_of=lambda n: _unit_of(cat, n))
        refuse_text_settings(space, lambda n: s.type if (s := cat.get(n)) else None)
    if not space.origin and not insights_layer.jit_available(str(bindir)):
        space = without_jit(space)

    def check(settings: dict[str, str]) -> None:
        norm = validator.normalize(settings)
        validator.check_reserved(norm)
        validator.validate(bindir, major, cat, norm)

    return check_space(space.with_restart(cat.needs_restart), check)


def refuse_text_settings(space: Space, type_of: Callable[[str], str | None]) -> None:
    """A space searches numbers, booleans and enums: a text setting (a list of libraries, a
    path, a name; pg_settings vartype string) has no range to sample, and the server reads
    any text it is given, so its choices would only be found wrong at a trial's start.
    `type_of(name)`: the catalogue's type (STRING, ...), None when the name is not known."""
    where = f"--space {space.origin}"
    for k in space.knobs:
        if type_of(k.name) != "STRING":
            continue
        why = {
            "shared_preload_libraries": (
                "a list of libraries loaded at server start (a restart, and each library "
                "installed), which changes what the server can do rather than how fast"
            ),
        }.get(k.name, "a text setting (a list, a path or a name)")
        raise PgrigError(
            f"{where}: knobs.{k.name}: {k.name} is {why}: not a number, boolean or enum to "
            f"search; set it on the environment instead (`pgrig env set`) "
            "and leave it out of the space"
        )


# What a server takes out of max_connections before any client: each setting's default (when
# the environment does not set it) and the major that brought it
RESERVED_CONNECTIONS = {"superuser_reserved_connections": (3, 0), "reserved_connections": (0, 16)}


def check_connections(
    space: Space, clients: int, configured: Mapping[str, str], major: int = 0
) -> None:
    """Every trial must start and take the run's clients: PostgreSQL refuses to start unless
    max_connections exceeds superuser_reserved_connections + reserved_connections (which
    postgres -C does not check), and a run refuses clients beyond what is left. So the least
    max_connections a space may try (its knob's low, or the environment's) must hold the most
    those may reserve (their knobs' high, or the environment's) plus `clients`.
    `configured`: the environment's effective settings; `major`: the server's (0: unknown),
    whose reserved settings alone the refusal names."""
    reserved_kinds = {
        n: default
        for n, (default, since) in RESERVED_CONNECTIONS.items()
        if not major or major >= since
    }
    ranges = {k.name: k for k in space.knobs if k.name in ("max_connections", *reserved_kinds)}
    if not ranges:
        return

    def end(name: str, least: bool, default: int) -> int | None:
        k = ranges.get(name)
        try:
            if k is None:
                return int(configured.get(name, default))
            values = [float(v) for v in k.choices] if k.choices else [k.low, k.high]
        except ValueError:
            return None  # not a number: the server's parser judges it (check_space)
        return int(min(values) if least else max(values))

    mc = end("max_connections", True, 100)
    held = [end(n, False, d) for n, d in reserved_kinds.items()]
    if mc is None or None in held:
        return
    reserved = sum(h for h in held if h is not None)
    if mc >= reserved + clients:
        return
    need = reserved + clients
    them = "them" if len(reserved_kinds) > 1 else "it"
    if "max_connections" in ranges:
        key = "choices" if ranges["max_connections"].choices else "low"
        where = f"knobs.max_connections.{key}"
        fix = f"give max_connections {need} or more"
    else:
        culprit = next(n for n in reserved_kinds if n in ranges)
        where = f"knobs.{culprit}"
        fix = f"keep the reserved connections at most {mc - clients} in all"
    raise PgrigError(
        f"--space {space.origin}: {where}: max_connections={mc} leaves no room for the run's "
        f"{clients} client{'s' if clients != 1 else ''}: PostgreSQL keeps "
        f"{' + '.join(reserved_kinds)} ({reserved}) out of it and "
        f"does not start unless max_connections exceeds {them}: {fix}"
    )


def space_file_path(space_arg: str) -> Path:
    """`--space` naming a file: refused as what it is when it is not a readable file (a
    directory, nothing there), never as a parse error of what could not be read."""
    path = Path(space_arg)
    if path.is_file():
        return path
    others = f"or use --space default, {', '.join(CLASSES)}"
    if path.is_dir():
        raise PgrigError(
            f"--space {space_arg}: is a directory, not a space file (give a TOML file of "
            f"[knobs.<setting>] tables, {others})"
        )
    if not path.exists():
        raise PgrigError(f"--space {space_arg}: no such file ({others})")
    raise PgrigError(f"--space {space_arg}: not a regular file ({others})")


def _unit_of(cat: Catalog, name: str) -> str | None:
    """A setting's pg_settings unit; KeyError when the catalogue does not know it (an unknown
    name, which check_space refuses, or units not read from a server yet)."""
    setting = cat.get(name)
    if setting is None or not cat.enriched:
        raise KeyError(name)
    return setting.unit
