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

import json
import os
from pathlib import Path
from typing import Any

from rich.console import Console

from pgrig import paths
from pgrig.archive.records import RunRecord
from pgrig.errors import NotFound, PgrigError
from pgrig.request import RunRequest
from pgrig.study.spec import DatasetSpec, EnvSpec, StudySpecError

PREWARM_SQL = """
SELECT count(pg_prewarm(c.oid))
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'i', 'm') AND c.relpersistence <> 't'
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
"""


class ProvisionBackend:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)

    # --- checks before anything runs ---------------------------------------------------------
    def check_environment(self, env: EnvSpec) -> None:
        from pgrig.provision import binaries

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
        if not existing.managed:
            raise StudySpecError(
                f"{env.path}.name: {env.name!r} is an external server: a study changes "
                "settings and restarts servers, so it needs a managed environment"
            )
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
        from pgrig.provision import binaries, catalog, validator

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
            cluster.create_environment(
                env.name, env.version or "", profile=env.profile or "default",
                settings=dict(env.settings),
            )  # fmt: skip
            self._ensure_pooler(env)
            return True
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
        from pgrig.provision import cluster

        current = _load(env.name)
        if current is None:
            raise NotFound(f"environment {env.name!r} disappeared during the study")
        base = _remember_original(current)
        target = {**base, **settings}
        reset = [k for k in current.settings if k not in target]
        upd = {k: v for k, v in target.items() if current.settings.get(k) != v}
        if not upd and not reset:
            return
        action, changed = cluster.set_settings(env.name, upd, reset=reset)
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
        """Put back the settings the environment had before the study (reload/restart)."""
        from pgrig.provision import cluster

        current = _load(env.name)
        original = _original_file(env.name)
        if current is not None and original.exists():
            base = json.loads(original.read_text())
            reset = [k for k in current.settings if k not in base]
            upd = {k: v for k, v in base.items() if current.settings.get(k) != v}
            if upd or reset:
                cluster.set_settings(env.name, upd, reset=reset)
            original.unlink(missing_ok=True)

    # --- data ----------------------------------------------------------------------------------
    def prepare_dataset(self, env: EnvSpec, dataset: DatasetSpec, force: bool) -> bool:
        from pgrig.provision.environment import DEFAULT_DATABASE
        from pgrig.workloads import datasets

        e = _require(env.name)
        db = dataset.database or DEFAULT_DATABASE
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
        from pgrig.provision import cluster, postmaster
        from pgrig.provision.environment import DEFAULT_DATABASE
        from pgrig.workloads import database as dbmod

        e = _require(env.name)
        db = database or DEFAULT_DATABASE
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
    def execute(self, request: RunRequest, archive: Any, console: Console) -> RunRecord:
        from pgrig.load.runner import execute

        return execute(request, archive=archive, console=console, live=console.is_terminal)


def _load(name: str) -> Any:
    from pgrig.provision.environment import Environment

    try:
        return Environment.load(name)
    except NotFound:
        return None


def _require(name: str) -> Any:
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
    return _original_file(env_name).exists()


def _original_file(env_name: str) -> Path:
    return paths.home() / "studies" / f"{env_name}.settings.json"


def _remember_original(env: Any) -> dict[str, str]:
    """The environment layer as it was before any study touched it (kept until restored)."""
    f = _original_file(env.name)
    if f.exists():
        return json.loads(f.read_text())
    f.parent.mkdir(parents=True, exist_ok=True)
    tmp = f.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(env.settings, indent=1, sort_keys=True))
    os.replace(tmp, f)
    return dict(env.settings)
