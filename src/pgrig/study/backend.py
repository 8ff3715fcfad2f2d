"""The study runner's link to the real world: provisioning, data generation and the run
orchestrator. Everything is imported lazily so the study model stays testable with fakes.

The study owns the *environment layer* of its environments while it runs: each point's
settings become that layer (on top of what the environment had before the study), applied
through provisioning, which reloads or restarts the server as the changed settings require.
Settings are not passed as a per-run layer because that one is undone after every run
(a restart-only setting would then restart the server twice per run). What the environment
had before is kept in <home>/studies/<env>.settings.json until it is put back, so even a
killed study restores it on its next run.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from pgrig.archive.protocol import RunStore
from pgrig.archive.records import RunRecord
from pgrig.errors import NotFound, PgrigError
from pgrig.format import pgrig_command
from pgrig.provision import study_layer
from pgrig.provision.state.environment import managed_problem
from pgrig.request import RunRequest
from pgrig.study.spec import DatasetSpec, EnvSpec, StudySpecError

if TYPE_CHECKING:
    from pgrig.provision.state.env_lock import ForcedNote
    from pgrig.provision.state.environment import Environment

PREWARM_SQL = """
SELECT count(pg_prewarm(c.oid))
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'i', 'm') AND c.relpersistence <> 't'
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
"""


class ProvisionBackend:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.study: str | None = None  # who borrows the environment layer (begin_study)
        self.kind = "study"
        self._holds: dict[str, Any] = {}  # env name -> its run lock, held by this study

    def begin_study(self, name: str, kind: str) -> None:
        """Name the study: it holds its environments and is named if it dies holding them."""
        self.study, self.kind = name, kind

    def hold(self, env_name: str) -> None:
        """The environment's run lock for the rest of the study (no run slips in between
        points; a run of this study nests in it)."""
        from pgrig.provision.state.env_lock import EnvLock

        if env_name in self._holds:
            return
        e = _require(env_name)
        what = f"{'tune' if self.kind == 'tune' else 'study run'} {self.study or ''}".strip()
        self._holds[env_name] = EnvLock(e.dir, e.name).acquire(what)

    def let_go(self) -> None:
        """The study has ended: its environments are free again."""
        for name in list(self._holds):
            self._holds.pop(name).release()

    # --- checks before anything runs ---------------------------------------------------------
    def check_environment(self, env: EnvSpec) -> None:
        from pgrig.provision.server import binaries

        existing = _load(env.name)
        if existing is None:
            if not env.create:
                raise StudySpecError(
                    f"{env.path}.name: environment {env.name!r} does not exist "
                    "(create it with `pgrig env create`, or set create = true)"
                )
            try:
                _bindir, version = binaries.find_bindir(env.version or "")
            except PgrigError as e:
                raise StudySpecError(f"{env.path}.version: {e}") from None
            self._check_profile(env, binaries.major_of(version))
            self._check_pooler(env)
            return
        if env.version and not _version_matches(existing.version, env.version):
            raise StudySpecError(
                f"{env.path}.version: environment {env.name!r} exists with PostgreSQL "
                f"{existing.version}, not {env.version} (destroy it or give another name)"
            )
        if env.profile and existing.profile != env.profile:
            raise StudySpecError(
                f"{env.path}.profile: environment {env.name!r} exists with profile "
                f"{existing.profile!r}, not {env.profile!r} (destroy it or give another name)"
            )
        if existing.kind == "remote":  # on a host (`env create --on`): its runs, its pooler;
            self._check_pooler(env)  # settings stay as they are (apply_settings refuses)
            return
        problem = managed_problem(
            existing, "run a study on it (a study changes its settings and restarts it)"
        )
        if problem is not None:
            raise StudySpecError(f"{env.path}.name: {problem}")
        self._check_pooler(env)

    def _check_pooler(self, env: EnvSpec) -> None:
        """[environment].pooler = {mode = ..., pool_size = ...}: checked before anything runs."""
        from pgrig.provision import pooler

        if env.pooler is not None:
            try:
                pooler.options_from_table(env.pooler)
                pooler.binary()
            except PgrigError as e:
                raise StudySpecError(f"{env.path}.pooler: {e}") from None

    def _check_profile(self, env: EnvSpec, major: int) -> None:
        from pgrig.provision import cluster

        try:
            cluster.resolve_profile(env.profile or "default", major)
        except PgrigError as e:
            raise StudySpecError(f"{env.path}.profile: {e}") from None

    def validate_settings(
        self, env: EnvSpec, settings: dict[str, str], origins: dict[str, str]
    ) -> None:
        """All settings at once through the real parser; on failure, find the culprit."""
        from pgrig.provision.server import binaries
        from pgrig.provision.settings import catalog, validator

        if not settings:
            return
        existing = _load(env.name)
        if existing is not None and existing.bindir and existing.version:
            bindir, version = Path(existing.bindir), existing.version
        else:
            bindir, version = binaries.find_bindir(env.version or "")
        major = binaries.major_of(version)
        cat = catalog.load_catalog(bindir, version)

        def check(items: dict[str, str]) -> None:
            norm = validator.normalize(items)
            validator.check_reserved(norm)
            validator.validate(bindir, major, cat, norm)

        try:
            check(settings)
            return
        except PgrigError as whole:
            for name, value in settings.items():
                try:
                    check({name: value})
                except PgrigError as e:
                    where = origins.get(name, f"{env.path}.settings.{name}")
                    raise StudySpecError(f"{where}: {e}") from None
            raise StudySpecError(
                f"{env.path}: these settings do not work together: {whole}"
            ) from None

    def check_clients(
        self, env: EnvSpec, settings: dict[str, str], clients: int, via: str, where: str
    ) -> None:
        """A direct run of `clients` must fit max_connections as the point will configure it
        (the runner refuses it otherwise, mid-study): the environment's layers, or for one the
        study creates its profile and settings, then the point's settings."""
        if via != "direct":
            return
        s = {**self._configured(env), **{k.lower(): v for k, v in settings.items()}}
        try:
            mc = int(s.get("max_connections", 100))
            reserved = int(s.get("superuser_reserved_connections", 3)) + int(
                s.get("reserved_connections", 0)
            )
        except ValueError:
            return  # the server's parser judges such values (validate_settings)
        if clients > mc - reserved:
            need = -(-(clients + reserved + 10) // 100) * 100
            raise StudySpecError(
                f"{where}: {clients} clients exceed max_connections={mc} of environment "
                f"{env.name} ({reserved} reserved for superusers): set max_connections = {need} "
                f"in {env.path}.settings, or run via the pooler"
            )

    def _configured(self, env: EnvSpec) -> dict[str, str]:
        from pgrig.provision import cluster
        from pgrig.provision.server import binaries
        from pgrig.provision.settings import config

        existing = _load(env.name)
        if existing is not None:
            own = study_layer.original(env.name)  # a dead study's borrowed layer is not its own
            if own is not None:
                existing.settings = own
            return config.layers(existing).effective()
        try:
            _bindir, version = binaries.find_bindir(env.version or "")
            profile, _notes = cluster.resolve_profile(
                env.profile or "default", binaries.major_of(version)
            )
        except PgrigError:
            profile = {}  # check_environment has said what is wrong
        return {**profile, **{k.lower(): str(v) for k, v in env.settings.items()}}

    # --- environments ------------------------------------------------------------------------
    def ensure_environment(self, env: EnvSpec) -> bool:
        from pgrig.provision import cluster

        existing = _load(env.name)
        if existing is None:
            self.console.print(
                f"  creating environment {env.name} (PostgreSQL {env.version}, "
                f"profile {env.profile or 'default'})",
                highlight=False,
                soft_wrap=True,
            )
            cluster.create_environment(env.request())
            self.hold(env.name)
            self._ensure_pooler(env)
            return True
        self.hold(env.name)
        started = cluster.ensure_running(existing)
        self._ensure_pooler(env)
        return started

    def _ensure_pooler(self, env: EnvSpec) -> None:
        """The environment's pooler as the study file describes it, running (for via sweeps)."""
        from pgrig.provision import cluster, pooler

        if env.pooler is not None:
            pooler.ensure(
                cluster.running_environment(env.name), pooler.options_from_table(env.pooler)
            )

    def apply_settings(self, env: EnvSpec, settings: dict[str, str]) -> None:
        from pgrig.provision import env_settings

        current = _load(env.name)
        if current is None:
            raise NotFound(f"environment {env.name!r} disappeared during the study")
        if current.kind == "remote":
            if settings:
                raise PgrigError(
                    f"environment {env.name!r} is on host {current.on}: a study does not change "
                    "its settings yet (set them with `pgrig env set` before the study)"
                )
            return
        base = study_layer.remember(current.name, current.settings, self.study, self.kind)
        target = {**base, **settings}
        reset = [k for k in current.settings if k not in target]
        upd = {k: v for k, v in target.items() if current.settings.get(k) != v}
        if not upd and not reset:
            return
        action, changed = env_settings.set_settings(env.name, upd, reset=reset)
        if changed:
            self.console.print(
                f"  settings: {', '.join(changed)} ({action})", highlight=False, soft_wrap=True
            )

    def stop(self, env: EnvSpec) -> None:
        """Stop the server, then put the environment's own settings back."""
        from pgrig.provision import cluster

        if _load(env.name) is None:
            return
        cluster.stop_environment(env.name)
        self.restore(env)

    def restore(self, env: EnvSpec) -> None:
        """Put back the settings the environment had before the study (reload/restart), and
        undo what an interrupted run of it left (per-run settings, pinning); then let go."""
        from pgrig.provision import env_settings, run_journal
        from pgrig.provision.state import env_lock

        current = _load(env.name)
        if current is not None and current.kind == "remote":  # its host's pgrig undoes runs
            return
        base = study_layer.original(env.name)
        forced = self._forced_settings(env.name, current.dir if current is not None else None)
        if current is not None and base is not None:
            reset = [k for k in current.settings if k not in base]
            upd = {k: v for k, v in base.items() if current.settings.get(k) != v}
            if upd or reset:
                env_settings.set_settings(env.name, upd, reset=reset)
        study_layer.forget(env.name)
        if forced and base is not None:
            said = "; ".join(f"{f['change']} (`pgrig {f['command']}`)" for f in forced)
            what = "tune" if self.kind == "tune" else "study"
            self.console.print(
                f"  [yellow]{escape(env.name)}: undone with its own settings[/yellow]: what "
                f"was forced on it during the {what}, {escape(said)}; set it again with "
                f"`{escape(pgrig_command('env', 'set', env.name, rest='...'))}` if it is to stay",
                highlight=False,
                soft_wrap=True,
            )
        current = _load(env.name)  # as put back: the journal's undo rewrites pgrig.conf from it
        if current is not None:
            held = env_lock.held_here(current.dir)
            for line in run_journal.recover(current, holding_lock=held):
                self.console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)

    def _forced_settings(self, env_name: str, env_dir: Path | None) -> list[ForcedNote]:
        """The settings changes forced on the environment (`env set ... --force`) while this
        study held it (provision/state/env_lock.py note_forced): putting its own settings
        back undoes them, which restore() says."""
        from pgrig.provision.state import env_lock

        lock = self._holds.get(env_name)
        if lock is None or env_dir is None:
            return []
        found = env_lock.forced_between(env_dir, lock.since, time.time())
        return [f for f in found if str(f.get("change", "")).startswith(("settings ", "reset "))]

    # --- data ----------------------------------------------------------------------------------
    def prepare_dataset(self, env: EnvSpec, dataset: DatasetSpec, force: bool) -> bool:
        from pgrig.workloads import datasets

        e = _require(env.name)
        db = dataset.database or e.default_database
        if not force and datasets.matches(datasets.get(e, db), dataset):
            return False
        self.console.print(
            f"  generating {dataset.scenario} data ({dataset.size_label()}) in {env.name}/{db}",
            highlight=False,
            soft_wrap=True,
        )
        datasets.generate(e, dataset)
        return True

    def action(self, env: EnvSpec, action: str, database: str | None) -> None:
        from pgrig.provision import cluster
        from pgrig.provision.server import postmaster
        from pgrig.workloads import database as dbmod

        e = _require(env.name)
        db = database or e.default_database
        self.console.print(f"  {action} ({env.name})", highlight=False, soft_wrap=True)
        if action == "restart":
            cluster.restart_environment(env.name)
        elif action == "checkpoint":
            postmaster.checkpoint(e, db)
        elif action in ("vacuum", "analyze"):
            with dbmod.connect(e, db) as conn:
                conn.execute("VACUUM (ANALYZE)" if action == "vacuum" else "ANALYZE")
        elif action == "prewarm":
            with dbmod.connect(e, db) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
                conn.execute(PREWARM_SQL)
        else:
            raise PgrigError(f"unknown action {action!r}")

    # --- runs ------------------------------------------------------------------------------------
    def execute(self, request: RunRequest, archive: RunStore, console: Console) -> RunRecord:
        from pgrig.load.core.runner import execute

        if request.backup_during:  # the load is the study's run; the backup is archived beside
            from pgrig.load.backup import backup_during

            return backup_during.during_study_run(request, archive=archive, console=console)
        return execute(request, archive=archive, console=console, live=console.is_terminal)


def _load(name: str) -> Environment | None:
    from pgrig.provision.state.environment import Environment

    try:
        return Environment.load(name)
    except NotFound:
        return None


def _require(name: str) -> Environment:
    env = _load(name)
    if env is None:
        raise NotFound(f"environment {name!r} does not exist")
    return env


def _version_matches(actual: str | None, wanted: str) -> bool:
    if not actual:
        return False
    return actual == wanted or actual.split(".")[0] == wanted


def settings_saved(env_name: str) -> bool:
    """Whether a study (or a tune) changed the environment's settings and has not yet put its
    own back (a killed process leaves them changed: the next one restores them first)."""
    return study_layer.saved(env_name)
