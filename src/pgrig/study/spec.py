"""Study files (TOML): parse and validate the whole file into dataclasses before anything runs.

Every error names the key path it is about (``iterations[3].settings.shared_buffers: ...``) so
a user can fix the file without guessing. Each table is declared in study/tables.py (types,
ranges, unknown keys, its own rules); this module joins the tables (the [run] table with each
iteration's or sweep point's changes, environments to iterations, files that must exist).
Values of PostgreSQL settings are checked later against the exact server version by the study
runner, still before the first run starts.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, ValidationError, field_validator

from pgrig.errors import PgrigError
from pgrig.request import DatasetRequest, TpchLoad, problem_of, validate_field
from pgrig.request.problems import in_file, key_of, unknown_key

if TYPE_CHECKING:
    from pgrig.request.environment import EnvironmentRequest
from pgrig.request.values import ascii_digits, setting_text
from pgrig.request.vocabulary import SCENARIOS, valid_name
from pgrig.study.tables import Actions, EnvironmentTable, IterationTable, StudyFile, SweepTable

StudyKind = Literal["iterations", "sweep"]
# A swept value, checked as its run parameter or setting is (TOML has no null); a point's
# coordinates are these (an iteration's: its index)
SweptValue = str | int | float
# Sweep dimensions that map onto run parameters (settings.<name>, version, environment aside).
RUN_DIMENSIONS = (
    "clients",
    "threads",
    "rate",
    "workload",
    "via",
    "protocol",
    "connect",
    "server_cpus",
    "client_cpus",
)
STUDY_NAME_MAX = 48  # leaves room for "-<environment key>" in the environment names it creates
ENV_KEY_MAX = 31


class StudySpecError(PgrigError):
    """The study file is invalid; the message starts with the key path."""


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EnvSpec:
    """One environment a study runs on: an existing pgrig environment or one it creates."""

    key: str  # the key in the study file ("main" for a single [environment] table)
    name: str  # the pgrig environment name
    version: str | None = None  # "15", "18" or exact "18.6"; None: the existing env's own
    profile: str | None = None  # None: "default" when created, any when it exists already
    settings: dict[str, str] = field(default_factory=dict)  # the study's base settings layer
    create: bool = True  # create it when missing (False: must exist already)
    pooler: dict[str, object] | None = None  # passed to provisioning for via = "pgbouncer"
    replicas: int = 0  # streaming replicas created with it (provision/replicas.py)
    sync: str = "off"  # their replication mode: off | on | remote_write | remote_apply
    path: str = "environment"  # where it is defined in the file, for error messages

    @property
    def label(self) -> str:
        return f"{self.key} (PostgreSQL {self.version})" if self.version else self.key

    def request(self) -> EnvironmentRequest:
        """The environment to create when it does not exist (its pooler is the study's to
        ensure, created or not)."""
        from pgrig.request.environment import EnvironmentRequest

        return EnvironmentRequest(
            name=self.name,
            pg=self.version or "",
            profile=self.profile or "default",
            settings=dict(self.settings),
            replicas=self.replicas,
            sync=self.sync,
        )


class DatasetSpec(DatasetRequest):
    """A study's [dataset]: the dataset request, and when to generate it again."""

    reset: Literal["study", "point", "run"] = "study"  # once per study (if missing), point, run


class StudyRun(TpchLoad):
    """A study's [run] table: the load of every run (changed per iteration or sweep point),
    TPC-H's own parameters (query_timeout, streams, tpch_seed), and the actions before each
    run."""

    before_each: Actions = ()  # e.g. ("checkpoint",)
    load_from: list[str] = Field(default_factory=list)  # load hosts (`run --load-from`)
    # a backup taken while this load runs (load/backup/backup_during.py), e.g. "basebackup-full"
    backup: str | None = None

    @field_validator("backup")
    @classmethod
    def _backup(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from pgrig.load.backup import backup_run

        what = value.removeprefix(backup_run.PREFIX)
        if what == "restore" or what not in backup_run.WHATS:
            raise ValueError(
                "must be a backup: "
                + ", ".join(w for w in backup_run.WHATS if w != "restore")
                + f" (got {value!r})"
            )
        return what

    def with_changes(self, changes: Mapping[str, object]) -> StudyRun:
        """This run with `changes` (field names) applied, validated as a whole."""
        return StudyRun.model_validate(self.model_dump() | dict(changes))


@dataclass(frozen=True)
class Iteration:
    index: int
    name: str
    note: str | None = None
    settings: dict[str, str] = field(default_factory=dict)  # changes from the previous one
    reset: tuple[str, ...] = ()  # settings dropped from the study layer (back to profile)
    actions: tuple[str, ...] = ()  # once, when the iteration starts
    environment: str | None = None  # switch to another environment key (sticky)
    run_changes: dict[str, object] = field(default_factory=dict)  # [iterations.run], as written
    run: StudyRun | None = None  # the effective run parameters (overrides are sticky)


@dataclass(frozen=True)
class Dimension:
    name: str  # clients | threads | rate | workload | via | protocol | version | environment
    # | settings.<name>
    values: tuple[SweptValue, ...]

    @property
    def is_setting(self) -> bool:
        return self.name.startswith("settings.")


# Without [sweep].compare, the report compares along the first swept dimension in this order
# (what a sweep usually asks: this server/target/setting against that one, all else equal).
COMPARE_PREFERENCE = (
    "environment",
    "version",
    "via",
    "settings.",
    "protocol",
    "connect",
    "server_cpus",
    "client_cpus",
    "workload",
    "rate",
    "threads",
    "clients",
)


@dataclass(frozen=True)
class Sweep:
    dimensions: tuple[Dimension, ...]
    x: str  # the dimension on the x axis of the charts
    series: tuple[str, ...]  # the other dimensions: one line per combination
    compare: str | None = None  # [sweep].compare as written: the axis the report compares along

    def dimension(self, name: str) -> Dimension:
        return next(d for d in self.dimensions if d.name == name)

    def compare_axis(self) -> str | None:
        """The dimension whose values the report compares with its first value, all other
        coordinates equal: `compare`, else the first of the series in COMPARE_PREFERENCE
        order (None when only the x dimension is swept)."""
        if self.compare is not None:
            return self.compare
        for prefix in COMPARE_PREFERENCE:
            for name in self.series:
                if name == prefix or (prefix.endswith(".") and name.startswith(prefix)):
                    return name
        return None


@dataclass(frozen=True)
class StudySpec:
    name: str
    kind: StudyKind
    source: str  # the file's text, verbatim (archived with the study)
    base_dir: Path  # relative script paths resolve from here
    description: str | None = None
    repeats: int = 3
    order: str = "sequential"
    threshold: float = 0.02
    misrate: float = 0.05
    on_failure: str = "continue"
    tags: dict[str, str] = field(default_factory=dict)
    environments: dict[str, EnvSpec] = field(default_factory=dict)
    default_env: str = "main"
    dataset: DatasetSpec = field(default_factory=DatasetSpec)
    run: StudyRun = field(
        default_factory=lambda: StudyRun(workload="pgbench:tpcb-like", duration_s=60)
    )
    iterations: tuple[Iteration, ...] = ()
    sweep: Sweep | None = None


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------
def _define_text(value: object) -> str:
    """A script option as text, as on the command line (TOML true: "true")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def load(path: str | Path, *, name: str | None = None, check_files: bool = True) -> StudySpec:
    """Read and validate a study file. `name` overrides [study].name (``--name``)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StudySpecError(f"study file {str(p)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise StudySpecError(f"cannot read study file {str(p)!r}: {e}") from None
    return parse(
        text, base_dir=p.resolve().parent, default_name=p.stem, name=name, check_files=check_files
    )


def parse(
    text: str,
    *,
    base_dir: Path | None = None,
    default_name: str = "study",
    name: str | None = None,
    check_files: bool = True,
) -> StudySpec:
    """Validate a study file's text. check_files=False skips existence checks (reports)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise StudySpecError(f"not valid TOML: {e}") from None
    return _Parser(text, base_dir or Path.cwd(), default_name, name, check_files).parse(data)


# ---------------------------------------------------------------------------------------------
# Value helpers
# ---------------------------------------------------------------------------------------------
def setting_value(value: object, path: str) -> str:
    """A PostgreSQL setting value as text: booleans become on/off, numbers stay exact."""
    try:
        return setting_text(value)
    except ValueError as e:
        raise StudySpecError(f"{path}: {e}") from None


# ---------------------------------------------------------------------------------------------
# The parser: the tables checked by their models (study/tables.py), then joined
# ---------------------------------------------------------------------------------------------
_DATASET_KEYS = (
    "scenario", "scale", "warehouses", "database", "init", "reset", "options",
    "script", "defines",  # sysbench: a Lua script's own prepare, with its options
    "scale_factor",  # TPC-H
)  # fmt: skip
# [run] keys: the run request's load parameters by their study-file names, and before_each.
_RUN_FIELDS = {key_of(StudyRun, name): name for name in StudyRun.model_fields}
_RUN_KEYS = tuple(_RUN_FIELDS)
# [dataset].options
_DATASET_OPTIONS = ("partitions", "partition", "rows", "jobs", "tables", "table_size")
_SWEEP_KEYS = tuple(key for key in SweepTable.model_fields if key not in ("compare", "x", "series"))


def _check_keys(table: Mapping[str, object], allowed: tuple[str, ...], path: str) -> None:
    """The keys of a table checked by a request model field by field (a sweep's template)."""
    for key in table:
        if key not in allowed:
            raise StudySpecError(f"{path}.{key}: {unknown_key(key, allowed)}")


class _Parser:
    def __init__(
        self, text: str, base_dir: Path, default_name: str, name: str | None, check_files: bool
    ):
        self.text = text
        self.base_dir = base_dir
        self.default_name = default_name
        self.name_override = name
        self.check_files = check_files

    # --- sections --------------------------------------------------------------------------
    def parse(self, data: Mapping[str, object]) -> StudySpec:
        try:
            file = StudyFile.model_validate(data)
        except ValidationError as e:
            raise StudySpecError(in_file(e, StudyFile)) from None
        study = file.study
        name = self.name_override or study.name or self.default_name
        where = "--name" if self.name_override else "study.name"
        if not valid_name(name, STUDY_NAME_MAX):
            raise StudySpecError(
                f"{where}: invalid study name {name!r}: use letters, digits, '_', '.', '-' "
                "(max 48, starting with a letter or digit)"
            )
        if (file.iterations is None) == (file.sweep is None):
            raise StudySpecError(
                "study: give either [[iterations]] or [sweep] (exactly one of them)"
            )
        kind: StudyKind = "iterations" if file.iterations is not None else "sweep"

        envs, default_env = self._environments(file, name)
        dataset = self._dataset(file.dataset)
        run = self._run(file.run, "run", base=None, template=kind == "sweep")
        spec = StudySpec(
            name=name,
            kind=kind,
            source=self.text,
            base_dir=self.base_dir,
            description=study.description,
            repeats=study.repeats,
            order=study.order,
            threshold=study.threshold,
            misrate=study.misrate,
            on_failure=study.on_failure,
            tags=dict(study.tags),
            environments=envs,
            default_env=default_env,
            dataset=dataset,
            run=run,
        )
        if file.iterations is not None:
            spec = replace(spec, iterations=self._iterations(file.iterations, spec))
        else:
            # the dimensions in the order the file gives them (the model's fields have theirs)
            written = data["sweep"]
            order = list(written) if isinstance(written, dict) else []
            spec = self._sweep(file.sweep or SweepTable(), order, spec)
        _check_poolers(spec)
        return spec

    def _environments(self, file: StudyFile, study: str) -> tuple[dict[str, EnvSpec], str]:
        if file.environment is not None and file.environments is not None:
            raise StudySpecError(
                "environments: give either [environment] or [environments.<key>], not both"
            )
        if file.environments is not None:
            if not file.environments:
                raise StudySpecError("environments: define at least one [environments.<key>]")
            envs = {}
            for key, table in file.environments.items():
                path = f"environments.{key}"
                if not valid_name(key, ENV_KEY_MAX):
                    raise StudySpecError(f"{path}: invalid key (letters, digits, '_', '.', '-')")
                envs[key] = self._environment(table, path, key, study)
            return envs, next(iter(envs))
        if file.environment is None:
            raise StudySpecError(
                'environment: missing; add [environment] with at least version = "15" '
                "(or name = an existing pgrig environment)"
            )
        env = self._environment(file.environment, "environment", None, study)
        return {env.key: env}, env.key

    def _environment(
        self, table: EnvironmentTable, path: str, key: str | None, study: str
    ) -> EnvSpec:
        version = table.version
        key = key or (f"pg{version.split('.')[0]}" if version else table.name) or "main"
        name = table.name or f"{study}-{key}"
        if not valid_name(name):
            raise StudySpecError(f"{path}.name: invalid environment name {name!r}")
        pooler = table.pooler.model_dump(exclude_unset=True) if table.pooler else None
        return EnvSpec(
            key=key,
            name=name,
            version=version,
            profile=table.profile,
            settings=dict(table.settings),
            create=table.create,
            pooler=pooler,
            replicas=table.replicas,
            sync=table.sync,
            path=path,
        )

    def _dataset(self, table: Mapping[str, object]) -> DatasetSpec:
        path = "dataset"
        _check_keys(table, _DATASET_KEYS, path)
        if "scenario" not in table:
            raise StudySpecError(
                f"{path}.scenario: is required, one of {', '.join(SCENARIOS)} "
                "(add a [dataset] table)"
            )
        scenario = table["scenario"]
        if "scale" in table and "warehouses" in table:
            raise StudySpecError(f"{path}.warehouses: give scale or warehouses, not both")
        values = {k: v for k, v in table.items() if k != "options"}
        size_key = "warehouses" if scenario == "tpcc" else "scale"
        if scenario == "tpcc" and "scale" in values:  # a TPC-C study may call its size scale
            values["warehouses"] = values.pop("scale")
        if scenario in ("pgbench", "tpcc") and not {"scale", "warehouses"} & set(table):
            raise StudySpecError(f"{path}.{size_key}: is required for scenario {scenario}")
        init, script = values.get("init"), values.get("script")
        if scenario == "custom" and isinstance(init, str):
            values["init"] = self._file(init, f"{path}.init")
        if isinstance(script, str) and scenario == "sysbench":
            values["script"] = self._file(script, f"{path}.script")
        if "defines" in values:
            defines = values["defines"]
            if not isinstance(defines, dict):
                raise StudySpecError(
                    f"{path}.defines: expected a table such as {{ scale = 1, tables = 2 }}"
                )
            values["defines"] = {str(k): _define_text(v) for k, v in defines.items()}
        options = table.get("options", {})
        if not isinstance(options, dict):
            raise StudySpecError(f"{path}.options: expected a table (got {options!r})")
        _check_keys(options, _DATASET_OPTIONS, f"{path}.options")
        try:
            return DatasetSpec.model_validate(values | options)
        except ValidationError as e:
            problem = problem_of(e, DatasetSpec)
            where = f"{path}.options" if problem.field in _DATASET_OPTIONS else path
            message = problem.at(where, DatasetSpec)
            if problem.field == "warehouses" and "scale" in table:
                message = message.replace(f"{path}.warehouses", f"{path}.scale", 1)
            raise StudySpecError(message) from None

    def _run(
        self, table: Mapping[str, object], path: str, base: StudyRun | None, template: bool = False
    ) -> StudyRun:
        """[run] (base=None, workload required) or an override table on top of `base`.

        A sweep's [run] is a template (`template`): the swept values complete it, so its fields
        are checked one by one here and each combination as a whole in _sweep."""
        _check_keys(table, _RUN_KEYS, path)
        changes = {_RUN_FIELDS[key]: value for key, value in table.items()}
        if "workload" in table:
            changes["workload"] = self._workload(table["workload"], f"{path}.workload")
        elif base is None:
            raise StudySpecError(
                f'{path}.workload: is required, e.g. "pgbench:tpcb-like", "tpcc" or "read.sql"'
            )
        if template:
            return self._template(changes, path)
        try:
            if base is not None:
                run = base.with_changes(changes)
            else:
                run = StudyRun.model_validate(changes)
        except ValidationError as e:
            problem = problem_of(e, StudyRun)
            # A rule broken by combining an override with the [run] table is the override's.
            own = base is None or bool(problem.fields & set(changes))
            raise StudySpecError(problem.at(path if own else "run", StudyRun)) from None
        own = base is None or bool({"workload", "defines"} & set(table))
        self._check_scripts(run, path if own else "run")
        return run

    def _template(self, changes: Mapping[str, object], path: str) -> StudyRun:
        fields: dict[str, object] = {}
        for name, value in changes.items():
            try:
                fields[name] = validate_field(StudyRun, name, value)
            except ValidationError as e:
                where = f"{path}.{key_of(StudyRun, name)}"
                raise StudySpecError(problem_of(e, StudyRun).at(where, StudyRun)) from None
        return StudyRun.model_construct(None, **fields)

    def _check_scripts(self, run: StudyRun, path: str) -> None:
        """The workload's scripts resolve, and every -D variable is read by one of them
        (pgbench would ignore the others): checked here, not when the run comes."""
        if not self.check_files:
            return
        from pgrig.workloads import specs

        try:
            scripts = specs.parse_workloads([run.workload])
        except PgrigError as e:
            raise StudySpecError(f"{path}.workload: {e}") from None
        unused = [] if run.is_tpcc else specs.unused_defines(scripts, run.defines)
        if unused:
            raise StudySpecError(
                f"{path}.defines.{unused[0]}: no script of workload {run.workload!r} "
                f"reads :{unused[0]}"
            )

    def _workload(self, value: object, path: str) -> str:
        """Keep the runner's syntax; resolve script files relative to the study file."""
        if not isinstance(value, str) or not value.strip():
            raise StudySpecError(f'{path}: expected a workload string such as "pgbench:tpcb-like"')
        parts = []
        for item in value.split(","):
            item = item.strip()
            script, _, weight = item.partition("@")
            if weight and not ascii_digits(weight):
                raise StudySpecError(f"{path}: weight of {script!r} must be an integer ({item!r})")
            if script.endswith(".sql"):
                script = self._file(script, path)
            elif script.startswith("sysbench:") and script.endswith(".lua"):
                script = "sysbench:" + self._file(script.removeprefix("sysbench:"), path)
            parts.append(f"{script}@{weight}" if weight else script)
        return ",".join(parts)

    def _file(self, name: str, path: str) -> str:
        p = Path(name).expanduser()
        if not p.is_absolute():
            p = self.base_dir / p
        if self.check_files and not p.is_file():
            raise StudySpecError(f"{path}: file {str(p)!r} does not exist")
        return str(p)

    def _iterations(self, tables: list[IterationTable], spec: StudySpec) -> tuple[Iteration, ...]:
        if not tables:
            raise StudySpecError("iterations: expected at least one [[iterations]] table")
        out = []
        names: set[str] = set()
        run = spec.run
        for i, table in enumerate(tables):
            path = f"iterations[{i}]"
            name = table.name or f"iteration {i}"
            if name in names:
                raise StudySpecError(f"{path}.name: {name!r} is used by an earlier iteration")
            names.add(name)
            env = table.environment
            if env is not None and env not in spec.environments:
                raise StudySpecError(
                    f"{path}.environment: {env!r} is not defined; "
                    f"known: {', '.join(spec.environments)}"
                )
            run = self._run(table.run, f"{path}.run", base=run)  # validates the combination
            out.append(
                Iteration(
                    index=i,
                    name=name,
                    note=table.note,
                    settings=dict(table.settings),
                    reset=tuple(table.reset),
                    actions=table.actions,
                    environment=env,
                    run_changes=dict(table.run),
                    run=run,
                )
            )
        return tuple(out)

    def _sweep(self, sweep: SweepTable, order: Iterable[str], spec: StudySpec) -> StudySpec:
        path = "sweep"
        dims = self._sweep_dimensions(sweep, order, spec, path)
        names = [d.name for d in dims]
        # Switching servers is the costly step: environment/version vary slowest.
        dims.sort(key=lambda d: d.name not in ("environment", "version"))
        envs, default_env = _version_environments(spec, dims, path)
        x, series, compare = _sweep_axes(sweep, dims, names, path)
        self._check_combinations(spec, dims, path)
        return replace(
            spec,
            environments=envs,
            default_env=default_env,
            sweep=Sweep(tuple(dims), x, tuple(series), compare),
        )

    def _sweep_dimensions(
        self, sweep: SweepTable, order: Iterable[str], spec: StudySpec, path: str
    ) -> list[Dimension]:
        """The swept dimensions in the order the file gives them, each value checked."""
        dims: list[Dimension] = []
        for key in order:
            if key in ("compare", "x", "series"):
                continue
            if key == "settings":
                for name, vals in sweep.settings.items():
                    spath = f"{path}.settings.{name}"
                    dims.append(
                        Dimension(
                            f"settings.{name}",
                            tuple(setting_value(v, f"{spath}[{i}]") for i, v in enumerate(vals)),
                        )
                    )
                continue
            vals = getattr(sweep, key)
            dims.append(Dimension(key, self._dimension_values(key, vals, spec, f"{path}.{key}")))
        if not dims:
            raise StudySpecError(f"{path}: sweep over at least one of {', '.join(_SWEEP_KEYS)}")
        return dims

    def _check_combinations(self, spec: StudySpec, dims: list[Dimension], path: str) -> None:
        """Check every combination of run parameters once, before anything runs."""
        run_dims = [d for d in dims if d.name in RUN_DIMENSIONS]
        combos: list[dict[str, SweptValue]] = [{}]
        for d in run_dims:
            combos = [c | {d.name: v} for c in combos for v in d.values]
        for combo in combos:
            try:
                run = point_run(spec.run, combo)
            except ValidationError as e:
                problem = problem_of(e, StudyRun)
                swept = {key_of(StudyRun, f) for f in problem.fields} & set(combo)
                raise StudySpecError(problem.at(path if swept else "run", StudyRun)) from None
            self._check_scripts(run, path if "workload" in combo else "run")

    def _dimension_values(
        self, key: str, vals: list[object], spec: StudySpec, path: str
    ) -> tuple[SweptValue, ...]:
        out: list[SweptValue] = []
        for i, v in enumerate(vals):
            p = f"{path}[{i}]"
            if key in RUN_DIMENSIONS:
                out.append(self._run_value(key, v, p))
            elif key == "version":  # checked by SweepTable
                out.append(str(v))
            elif key == "environment":
                if not isinstance(v, str) or v not in spec.environments:
                    raise StudySpecError(
                        f"{p}: {v!r} is not defined; known: {', '.join(spec.environments)}"
                    )
                out.append(v)
        if len(set(map(str, out))) != len(out):
            raise StudySpecError(f"{path}: values must be distinct")
        return tuple(out)

    def _run_value(self, key: str, value: object, path: str) -> SweptValue:
        """One swept value of a run parameter, checked as the [run] table would check it."""
        if key == "workload":
            value = self._workload(value, path)
        try:
            checked = validate_field(StudyRun, _RUN_FIELDS[key], value)
        except ValidationError as e:
            raise StudySpecError(problem_of(e, StudyRun).at(path, StudyRun)) from None
        if not isinstance(checked, str | int | float):  # a field that takes None: TOML has none
            raise StudySpecError(f"{path}: expected a value (got {value!r})")
        return checked


def point_run(base: StudyRun, coords: Mapping[str, object]) -> StudyRun:
    """The run at a sweep point: its swept run parameters on top of [run]. Unless threads are
    swept too, they follow a swept clients count down (pgbench needs threads <= clients)."""
    changes = {k: v for k, v in coords.items() if k in RUN_DIMENSIONS}
    clients = changes.get("clients")
    if isinstance(clients, int) and "threads" not in changes:  # a swept count: validated int
        changes["threads"] = min(base.threads, clients)
    return base.with_changes(changes)


def _version_environments(
    spec: StudySpec, dims: list[Dimension], path: str
) -> tuple[dict[str, EnvSpec], str]:
    """The study's environments and its default one; a sweep over versions replaces the single
    [environment] by one created environment per version (pg<version>)."""
    names = [d.name for d in dims]
    if "version" in names and len(spec.environments) > 1:
        raise StudySpecError(
            f"{path}.version: needs a single [environment] as the template for each version"
        )
    if "version" not in names:
        return dict(spec.environments), spec.default_env
    template = spec.environments[spec.default_env]
    if not template.create:
        raise StudySpecError(
            f"{path}.version: the environment must be created by the study "
            "(create = true) to sweep over versions"
        )
    envs: dict[str, EnvSpec] = {}
    for v in next(d for d in dims if d.name == "version").values:
        key = f"pg{v}"
        envs[key] = replace(template, key=key, name=f"{spec.name}-{key}", version=str(v))
    return envs, next(iter(envs))


def _sweep_axes(
    sweep: SweepTable, dims: list[Dimension], names: list[str], path: str
) -> tuple[str, list[str], str | None]:
    """The charts' x axis (clients when swept, else the first numeric dimension, else the
    last), the series (the other dimensions) and the comparison axis, each checked."""
    x = sweep.x
    if x is None:
        numeric = [d.name for d in dims if d.name in ("clients", "threads", "rate")]
        x = "clients" if "clients" in names else (numeric[0] if numeric else dims[-1].name)
    elif x not in names:
        raise StudySpecError(f"{path}.x: {x!r} is not a swept dimension ({', '.join(names)})")
    series_default = tuple(n for n in names if n != x)
    series = list(series_default) if sweep.series is None else sweep.series
    if sorted(series) != sorted(series_default):
        raise StudySpecError(
            f"{path}.series: must list the other swept dimensions ({', '.join(series_default)})"
        )
    compare = sweep.compare
    if compare is not None and compare not in names:
        close = difflib.get_close_matches(compare, names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise StudySpecError(
            f"{path}.compare: {compare!r} is not a swept dimension{hint}; swept: {', '.join(names)}"
        )
    return x, series, compare


def _check_poolers(spec: StudySpec) -> None:
    """via = pgbouncer on an environment the study creates needs its pooler described."""
    vias: set[str] = {spec.run.via} | {it.run.via for it in spec.iterations if it.run}
    if spec.sweep is not None:
        for d in spec.sweep.dimensions:
            if d.name == "via":
                vias |= {str(v) for v in d.values}
    if vias == {"direct"}:
        return
    for env in spec.environments.values():
        if env.pooler is None and env.create and env.name.startswith(f"{spec.name}-"):
            raise StudySpecError(
                f"{env.path}.pooler: runs go through pgbouncer, so describe the pooler, "
                'e.g. pooler = {mode = "transaction", pool_size = 20}'
            )
