"""The run's part of the server log of an environment on another host (`env create --on`):
its end marked over SSH before the load, the part streamed after it (argv, as root), fed to
the insights and kept by the same bounded rule as a local server's log, so the artifact and
extra["server_log"] say the same for the same lines; a host lost after the run keeps what
came and says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_pooler_log_on_host import FakeHost  # the same fake host, a server's log on it

from pgrig.archive.records import RunRecord
from pgrig.hosts import registry, ssh
from pgrig.hosts.registry import Host
from pgrig.load.core import run_files
from pgrig.load.core.server_log_follow import RemoteServerLog, RunServerLog
from pgrig.provision.state.environment import Environment

LOGS = Path(__file__).parents[1] / "fixtures" / "insights"
RECORDS = (LOGS / "pg15_locks_temp_errors.log").read_text()
REMOTE_LOG = "/var/lib/pgrig/envs/lab/server.log"


@pytest.fixture
def fake_host(pgrig_home: Path, monkeypatch: pytest.MonkeyPatch) -> FakeHost:
    registry.add(Host(name="h1", user="root", address="10.9.0.11"))
    log = pgrig_home / "h1" / "envs" / "lab" / "server.log"  # h1's /var/lib/pgrig: pgrig_home/h1
    log.parent.mkdir(parents=True)
    fake = FakeHost(log, root=pgrig_home / "h1")
    monkeypatch.setattr(ssh, "run", fake.run)
    monkeypatch.setattr(ssh, "open_session", fake.session)
    return fake


class Feed:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, text: str) -> None:
        self.lines.append(text)


def _finish(log: RunServerLog, art: Path) -> tuple[RunRecord, str]:
    rec = RunRecord(env_name="lab", workload="x", clients=1, threads=1)
    log.finish(run_files.RunFiles(rec, art), rec)
    return rec, (art / "server.log").read_text()


def test_the_log_on_the_host_is_read_and_kept_like_a_local_one(
    fake_host: FakeHost, tmp_path: Path
) -> None:
    there = Environment(name="lab", kind="remote", on="h1", host="10.9.0.11", port=5433)
    here = Environment(name="loc", member_dir=str(tmp_path / "loc"))
    here.dir.mkdir()
    before = "2026-12-07 13:00:00.000 UTC [1] LOG:  before the run\n"
    for f in (fake_host.log, here.logfile):
        f.write_text(before)
    feeds, logs = [Feed(), Feed()], []
    for env, feed in zip((there, here), feeds, strict=True):
        (tmp_path / f"art-{env.name}").mkdir()
        log = RunServerLog.open(env, tmp_path / f"art-{env.name}", feed)
        assert log is not None
        log.follow()
        logs.append(log)
    assert isinstance(logs[0], RemoteServerLog) and logs[0].pos == len(before)
    for f in (fake_host.log, here.logfile):
        with f.open("a") as out:
            out.write(RECORDS)
    for log in logs:
        log.stop()
    (rec_there, text_there), (rec_here, text_here) = (
        _finish(log, tmp_path / f"art-{env.name}")
        for log, env in zip(logs, (there, here), strict=True)
    )
    assert text_there == text_here and "before the run" not in text_there
    assert feeds[0].lines == feeds[1].lines == RECORDS.splitlines()
    doc_there, doc_here = rec_there.extra["server_log"], rec_here.extra["server_log"]
    assert doc_there == doc_here  # nothing cut from either: the local file is small
    assert doc_there["written_bytes"] == len(RECORDS.encode())
    assert rec_there.artifacts == {"server.log": "server.log"}
    # argv, as root, never a shell string: stat before, tail after
    assert [argv for argv, _root in fake_host.calls] == [
        ["stat", "-c", "%s", "--", REMOTE_LOG],
        ["tail", "-c", f"+{len(before) + 1}", "--", REMOTE_LOG],
    ]
    assert all(root for _argv, root in fake_host.calls)


def test_a_host_lost_after_the_run_keeps_what_came_and_says_so(
    fake_host: FakeHost, tmp_path: Path
) -> None:
    env = Environment(name="lab", kind="remote", on="h1", host="10.9.0.11", port=5433)
    fake_host.log.write_text("")
    log = RunServerLog.open(env, tmp_path)
    assert log is not None
    fake_host.log.write_text(RECORDS)
    fake_host.lose_after = 3
    rec, text = _finish(log, tmp_path)
    assert text.splitlines() == RECORDS.splitlines()[:3]
    problems = rec.extra["server_log"]["problems"]
    assert problems == [
        "the log on host h1 was not read to its end: host h1: connection lost (cut)"
    ]


def test_a_host_that_cannot_be_asked_before_the_run_gives_no_log(
    fake_host: FakeHost, tmp_path: Path
) -> None:
    env = Environment(name="lab", kind="remote", on="h1", host="10.9.0.11", port=5433)
    fake_host.down = True
    assert RunServerLog.open(env, tmp_path) is None  # the run then says it did not read it


def test_a_size_that_is_not_ascii_digits_is_one_line_naming_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """str.isdigit took "²" as a size, and int() then raised a bare ValueError."""
    from pgrig.errors import PgrigError
    from pgrig.hosts import remote

    host = Host(name="h1", user="root", address="10.9.0.11")
    printed = ssh.Result(host="h1", argv=("stat",), rc=0, stdout="²\n", stderr="")
    monkeypatch.setattr(ssh, "run", lambda *a, **k: printed)
    with pytest.raises(PgrigError, match="host h1: stat of the server log printed '²'"):
        remote.file_size(host, "/x", "the server log")
