"""One environment request (request/environment.py) for every way a server is asked for:
`env create` (here or --on a host), a study's [environment], a version series' servers."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgrig.errors import InvalidSetting
from pgrig.provision.operations import create
from pgrig.request.disk_limit import DiskLimit, DiskLimitError
from pgrig.request.environment import EnvironmentRequest
from pgrig.request.problems import from_flags
from pgrig.request.values import name_values


def test_env_create_flags_become_the_request(pgrig_home: Path) -> None:
    plan = create.check(
        from_flags(
            EnvironmentRequest, name="lab", pg="18", profile="oltp", settings=["Work_Mem='8MB'"],
            port=5999, insights=False, replicas=1, sync="on", disk_limit="wiops=100",
        )
    )  # fmt: skip
    r = plan.request
    assert (r.name, r.pg, r.profile, r.port, r.insights, r.replicas, r.sync) == (
        "lab", "18", "oltp", 5999, False, 1, "on",
    )  # fmt: skip
    assert r.settings == {"work_mem": "8MB"} and r.disk_limit == DiskLimit(wiops=100)
    assert plan.settings == r.settings and plan.disk_limit == r.disk_limit and not plan.on_host


def test_a_pooler_on_a_host_is_pgbouncer_unless_said(pgrig_home: Path) -> None:
    plan = create.check(from_flags(EnvironmentRequest, name="e", on="db1", pooler_on="db3"))
    assert plan.request.pooler == "pgbouncer" and plan.request.pooler_on == "db3"
    assert create.check(from_flags(EnvironmentRequest, name="e", on="db1")).request.pooler is None


def test_settings_for_a_host_are_read_here_as_the_host_reads_them(pgrig_home: Path) -> None:
    """`env create --on` forwarded --set unread: a bad one was said by the host's pgrig, after
    the host was reached. Now it is read here, by the same parser, first."""
    with pytest.raises(InvalidSetting, match="expected NAME=VALUE"):
        create.check(
            from_flags(EnvironmentRequest, name="e", on="db1", settings=["no_equals_sign"])
        )


@pytest.mark.parametrize("value", ["64MB", " padded ", "'quoted'", "%m 'x' ", "it''s", "", "a=b"])
def test_settings_forwarded_to_a_host_read_back_exactly(value: str) -> None:
    request = EnvironmentRequest(name="e", settings={"log_line_prefix": value, "work_mem": "1MB"})
    args = request.settings_args()
    assert args[0::2] == ["--set", "--set"]
    assert name_values(args[1::2], setting=True) == request.settings
    if value == "64MB":
        assert args[1] == "log_line_prefix=64MB"  # plain values go as they did


def test_a_disk_limit_is_parsed_or_refused_by_its_own_rules() -> None:
    assert EnvironmentRequest(name="e", disk_limit="rbps=1MB").disk_limit == DiskLimit(rbps=1024**2)
    assert EnvironmentRequest(name="e", disk_limit="none").disk_limit is None
    with pytest.raises(DiskLimitError, match="--disk-limit"):
        EnvironmentRequest(name="e", disk_limit="wbps=5xx")


def test_a_study_and_a_series_ask_with_the_same_request() -> None:
    from pgrig.study.spec import EnvSpec
    from pgrig.track.spec import TrackSpec

    study = EnvSpec(key="main", name="s-lab", version="18", settings={"work_mem": "4MB"},
                    replicas=1, sync="on")  # fmt: skip
    assert study.request() == EnvironmentRequest(
        name="s-lab", pg="18", profile="default", settings={"work_mem": "4MB"}, replicas=1,
        sync="on",
    )  # fmt: skip
    series = TrackSpec(name="s", load={}, profile="oltp", settings={"jit": "off"})
    assert series.environment("trk-s-18.6", "18.6", "pgdg") == EnvironmentRequest(
        name="trk-s-18.6", pg="18.6", profile="oltp", settings={"jit": "off"}
    )
    assert series.environment("trk-s-18.6", "18.6", "maven").insights is False
    # a study file names the version `version`, as the request's key
    assert EnvironmentRequest.model_validate({"name": "x", "version": "17"}).pg == "17"


STUDY = """
[study]
name = "t"
[environments.a]
{env}
[dataset]
scenario = "pgbench"
scale = 1
[run]
workload = "pgbench:select-only"
duration = "5s"
[[iterations]]
name = "one"
"""


@pytest.mark.parametrize(
    ("flags", "keys", "cli", "file"),
    [
        (
            {"sync": "on"},
            'version = "18"\nsync = "on"',
            "--sync on needs replicas (add --replicas N)",
            "environments.a.sync: on needs replicas (add replicas N)",
        ),
        (
            {"replicas": 9},
            'version = "18"\nreplicas = 9',
            "--replicas must be between 0 and 8 (got 9)",
            "environments.a.replicas: must be between 0 and 8 (got 9)",
        ),
        (
            {"replicas": 1, "sync": "sometimes"},
            'version = "18"\nreplicas = 1\nsync = "sometimes"',
            "--sync must be one of off, on, remote_write, remote_apply (got 'sometimes')",
            "environments.a.sync: must be one of off, on, remote_write, remote_apply "
            "(got 'sometimes')",
        ),
        (
            {"pg": "\u0661\u0668"},  # Arabic-Indic 18: no PostgreSQL reads it
            'version = "\u0661\u0668"',
            "--pg invalid PostgreSQL version '\u0661\u0668': use a major (18) or exact (18.6.0)",
            "environments.a.version: invalid PostgreSQL version '\u0661\u0668': use a major (18) "
            "or exact (18.6.0)",
        ),
    ],
)
def test_replicas_sync_and_version_refused_alike_by_the_cli_and_a_study_file(
    flags: dict[str, object], keys: str, cli: str, file: str, pgrig_home: Path
) -> None:
    """One rule set (the request's), said at each surface's place: `env create`'s flags and a
    study's [environments.<key>] table refuse the same input with the same words."""
    from typer.testing import CliRunner

    from pgrig.cli.env import app as env_app
    from pgrig.errors import PgrigError
    from pgrig.study.spec import StudySpecError, parse

    with pytest.raises(PgrigError) as flag_error:
        create.check(from_flags(EnvironmentRequest, name="e", **flags))
    assert str(flag_error.value) == cli
    with pytest.raises(StudySpecError) as file_error:
        parse(STUDY.format(env=keys))
    assert str(file_error.value) == file
    argv = ["create", "e"] + [a for k, v in flags.items() for a in (f"--{k}", str(v))]
    result = CliRunner().invoke(env_app, argv)
    assert result.exit_code != 0 and str(result.exception) == cli


def test_a_port_and_a_pooler_kind_follow_the_pooler_requests_rules() -> None:
    """`env create --port` and `env pooler add --port` take a port by one rule (it was checked
    only when the server was made, in other words); --pooler names its flag."""
    from pgrig.errors import PgrigError
    from pgrig.request.pooler import PoolerRequest

    said = []
    for model, flags in ((EnvironmentRequest, {"name": "e"}), (PoolerRequest, {})):
        with pytest.raises(PgrigError) as e:
            from_flags(model, port=80, **flags)  # type: ignore[arg-type]
        said.append(str(e.value))
    assert said == ["--port must be between 1024 and 65535 (got 80)"] * 2
    with pytest.raises(PgrigError, match=r"^--pooler must be one of pgbouncer \(got 'odyssey'\)$"):
        from_flags(EnvironmentRequest, name="e", pooler="odyssey")
