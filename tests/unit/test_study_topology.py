"""Study files: [environment] replicas/sync and [run].backup (a backup during the load)."""

from __future__ import annotations

import pytest

from pgrig.study.spec import StudySpecError, parse

STUDY = """
[study]
name = "t"
repeats = 2
[environment]
version = "18"
{env}
[dataset]
scenario = "pgbench"
scale = 1
[run]
workload = "pgbench:tpcb-like"
duration = "5s"
[[iterations]]
name = "alone"
[[iterations]]
name = "during"
run = {{ backup = "{backup}" }}
"""


def test_replicas_sync_and_backup_parse() -> None:
    s = parse(STUDY.format(env='replicas = 1\nsync = "remote_apply"', backup="basebackup-full"))
    env = s.environments[s.default_env]
    assert env.replicas == 1 and env.sync == "remote_apply"
    assert s.iterations[0].run is not None and s.iterations[0].run.backup is None
    assert s.iterations[1].run is not None and s.iterations[1].run.backup == "basebackup-full"


@pytest.mark.parametrize(
    ("env", "backup", "expected"),
    [
        # the environment request's rules and words (request/environment.py), at the key path
        (
            'sync = "on"',
            "basebackup-full",
            r"^environment.sync: on needs replicas \(add replicas N\)$",
        ),
        (
            "replicas = 9",
            "basebackup-full",
            r"^environment.replicas: must be between 0 and 8 \(got 9\)$",
        ),
        ("replicas = 1", "restore", "must be a backup"),
        ("replicas = 1", "tar", "must be a backup"),
    ],
)
def test_bad_topology_and_backup_values(env: str, backup: str, expected: str) -> None:
    with pytest.raises(StudySpecError, match=expected):
        parse(STUDY.format(env=env, backup=backup))
