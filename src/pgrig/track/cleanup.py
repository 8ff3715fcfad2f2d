"""`pgrig track NAME --destroy`: remove the environments a series made (its clusters and their
generated data), on request.

A series keeps its environments (trk-<series>-<version>), stopped, so that extending it,
bisecting and `--check` reuse them. Destroying them loses nothing measured: the runs and the
series stay in the archive, and the same `pgrig track NAME` recreates whatever a later call
needs. The PostgreSQL builds stay in the shared build cache (other environments use them;
`pgrig pg` manages them).

Which environments: those the series' version points name, those named trk-<series>-<version>
for its versions, and any other trk-<series>-<version> directory (a create killed before the
point was saved). A series named "a" never matches "trk-a-b-17.2" (of series "a-b"): a version
is digits and dots only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime

from pgrig import paths
from pgrig.errors import NotFound, PgrigError
from pgrig.record.protocol import RunStore
from pgrig.track.runner import Series, load_series
from pgrig.track.spec import ENV_PREFIX, env_name

VERSION = r"\d+(?:\.\d+)*"


def environments(series: Series) -> list[str]:
    """The environments of `series` that exist on this machine, sorted."""
    name = series.spec.name
    wanted = {p.env for p in series.points if p.env}
    wanted |= {env_name(name, p.version) for p in series.points}
    pattern = re.compile(re.escape(f"{ENV_PREFIX}{name}-") + VERSION)
    envs_dir = paths.envs_dir()
    if envs_dir.is_dir():
        wanted |= {d.name for d in envs_dir.iterdir() if pattern.fullmatch(d.name)}
    return sorted(n for n in wanted if (envs_dir / n).is_dir())


def destroy(
    archive: RunStore, name: str, force: bool = False, say: Callable[[str], None] | None = None
) -> list[str]:
    """Destroy every environment of the series `name`; returns their names. Refuses, before
    destroying any, while a run holds one of them (unless `force`)."""
    from pgrig.provision import cluster
    from pgrig.provision.state import env_lock

    series = load_series(archive, name, with_runs=False)
    names = environments(series)
    for env in names:  # all checked first: never half the series destroyed, then refused
        env_lock.refuse_if_busy(paths.envs_dir() / env, env, "track --destroy", force)
    done: list[str] = []
    failed: list[str] = []
    for env in names:
        try:
            cluster.destroy_environment(env, say=say)
        except NotFound:
            continue  # destroyed meanwhile by someone else
        except (PgrigError, OSError) as e:
            failed.append(f"{env}: {e}")
            continue
        done.append(env)
        if say is not None:
            say(f"destroyed {env}")
    if done:
        archive.update_study_extra(
            name,
            {"environments_destroyed": {"at": datetime.now(UTC).isoformat(), "names": done}},
        )
    if failed:
        raise PgrigError("could not destroy " + "; ".join(failed))
    return done
