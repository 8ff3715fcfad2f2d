"""The run's segment of the pooler's log when pgbouncer runs on a host of its own: read over
SSH (argv, as root, never a shell string), kept by the same bounded rule as a local pooler's
(insights/log_excerpt.py, pgbouncer's severities), so the artifact and what
extra["pooler"]["log"] says are the same for the same log."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pgrig.hosts import registry, ssh
from pgrig.hosts.registry import Host
from pgrig.load.core import pooler_log
from pgrig.provision import pooler
from pgrig.provision.pooler import layout
from pgrig.provision.state.environment import Environment

REMOTE_LOG = "/var/lib/pgrig/envs/lab/pooler/pgbouncer-0.log"


def _lines(a: int, b: int) -> str:
    out = []
    for i in range(a, b):
        level = "WARNING" if i % 997 == 0 else "LOG"
        out.append(f"2026-11-26 01:00:00.000 UTC [7] {level} C-0x{i:x}: login attempt: db=pgrig")
    return "\n".join(out) + "\n"


class FakeHost:
    """A host with a log file on it (a local file standing for it; `root` stands for the
    host's /var/lib/pgrig) and the argv it ran."""

    def __init__(self, log: Path, root: Path | None = None) -> None:
        self.log = log
        self.root = root if root is not None else log.parents[3]
        self.calls: list[tuple[list[str], bool]] = []
        self.lose_after: int | None = None
        self.down = False

    def run(self, host: Host, argv: list[str], **kw: Any) -> ssh.Result:
        if self.down:
            raise ssh.Unreachable(f"host {host.name} ({host.target}): unreachable (no answer)")
        self.calls.append((list(argv), bool(kw.get("root"))))
        assert argv[:4] == ["stat", "-c", "%s", "--"]
        if not Path(argv[4].replace("/var/lib/pgrig", str(self.root))).exists():
            return ssh.Result(host.name, tuple(argv), 1, "", "stat: No such file or directory")
        return ssh.Result(host.name, tuple(argv), 0, f"{self.log.stat().st_size}\n", "")

    @contextlib.asynccontextmanager
    async def session(self, host: Host, **kw: Any) -> AsyncIterator[Any]:
        if self.down:
            raise ssh.Unreachable(f"host {host.name} ({host.target}): unreachable (no answer)")
        fake = self

        class Proc:
            def __init__(self, argv: list[str]) -> None:
                assert argv[:2] == ["tail", "-c"] and argv[3] == "--"
                self.start = int(argv[2].lstrip("+")) - 1
                self.argv = argv

            async def lines(self) -> AsyncIterator[str]:
                with fake.log.open("rb") as f:
                    f.seek(self.start)
                    for n, raw in enumerate(f):
                        if fake.lose_after is not None and n >= fake.lose_after:
                            raise ssh.ConnectionLost(f"host {host.name}: connection lost (cut)")
                        yield raw.decode(errors="replace").rstrip("\n")

            async def wait(self, timeout: float | None = None) -> ssh.Result:
                return ssh.Result(host.name, tuple(self.argv), 0, "", "")

        class Session:
            async def start(self, argv: list[str], *, root: bool = False, errors: str = "") -> Proc:
                fake.calls.append((list(argv), root))
                assert errors == "replace"
                return Proc(argv)

        yield Session()


@pytest.fixture
def fake_host(pgrig_home: Path, monkeypatch: pytest.MonkeyPatch) -> FakeHost:
    registry.add(Host(name="h2", user="root", address="10.9.0.12"))
    log = pgrig_home / "h2" / "envs" / "lab" / "pooler" / "pgbouncer-0.log"
    log.parent.mkdir(parents=True)
    fake = FakeHost(log)
    monkeypatch.setattr(ssh, "run", fake.run)
    monkeypatch.setattr(ssh, "open_session", fake.session)
    return fake


def _remote_env() -> Environment:
    env = Environment(name="lab", kind="remote", on="h1", host="10.9.0.11", port=5433, major=18)
    env.pooler = pooler.PoolerConfig(port=6432, listen="10.9.0.12", on="h2",
                                     auth_from="control").as_dict()  # fmt: skip
    return env


def _local_env() -> Environment:
    env = Environment(name="loc", port=5440, major=18)
    env.pooler = pooler.PoolerConfig(port=6440).as_dict()
    layout.log_file(env, 0).parent.mkdir(parents=True)
    return env


def _record() -> Any:
    return SimpleNamespace(extra={}, artifacts={})


def test_remote_pooler_log_is_kept_like_a_local_one(fake_host: FakeHost, tmp_path: Path) -> None:
    local, there = _local_env(), _remote_env()
    before, during = _lines(0, 500), _lines(500, 40_000)  # ~2.8 MB over the run: bounded
    layout.log_file(local, 0).write_text(before)
    fake_host.log.write_text(before)
    marks = pooler_log.mark(local, "pgbouncer"), pooler_log.mark(there, "pgbouncer")
    assert marks[0] is not None and marks[1] is not None
    assert marks[0].offsets == marks[1].offsets == (len(before),)
    assert marks[1].where == "h2" and marks[0].where == "here"
    for f in (layout.log_file(local, 0), fake_host.log):
        with f.open("a") as out:
            out.write(during)
    got = []
    for env, m in zip((local, there), marks, strict=True):
        rec, art = _record(), tmp_path / env.name
        art.mkdir()
        pooler_log.keep(rec, env, m, art)
        assert rec.artifacts == {"pooler.log": "pooler.log"}
        got.append(((art / "pooler.log").read_text(), rec.extra["pooler"]["log"]))
    (text_here, doc_here), (text_there, doc_there) = got
    assert text_there == text_here
    assert {**doc_there, "where": "-"} == {**doc_here, "where": "-"}
    assert doc_there["collected"] and doc_there["truncated"] and doc_there["where"] == "h2"
    assert sum(doc_there["records"].values()) == 39_500 and doc_there["dropped"]["log"] > 0
    assert doc_there["written_bytes"] == len(during) and doc_there["kept_bytes"] == len(text_there)
    assert len(text_there) < 2 * 1024 * 1024  # head, tail, warnings and a budget of the rest
    assert doc_there["records"]["warning"] == 40 and "warning" not in doc_there["dropped"]
    assert "C-0x1f4:" in text_there.splitlines()[0]  # the run's first line, not the log's
    assert all(f" C-0x{i:x}: " in text_there for i in range(997, 40_000, 997))  # every warning
    # argv, as root: nothing a shell could expand
    tail = ["tail", "-c", f"+{len(before) + 1}", "--", REMOTE_LOG]
    assert fake_host.calls == [(["stat", "-c", "%s", "--", REMOTE_LOG], True), (tail, True)]


def test_no_log_yet_then_some(fake_host: FakeHost, tmp_path: Path) -> None:
    fake_host.log.unlink(missing_ok=True)
    m = pooler_log.mark(_remote_env(), "pgbouncer")
    assert m is not None and m.offsets == (0,)
    fake_host.log.write_text(_lines(0, 3))
    rec = _record()
    pooler_log.keep(rec, _remote_env(), m, tmp_path)
    assert (tmp_path / "pooler.log").read_text() == _lines(0, 3)
    assert rec.extra["pooler"]["log"]["truncated"] is False


def test_host_unreachable_or_lost(fake_host: FakeHost, tmp_path: Path) -> None:
    env = _remote_env()
    fake_host.log.write_text(_lines(0, 10))
    fake_host.down = True
    m = pooler_log.mark(env, "pgbouncer")
    assert m is not None and m.error is not None
    rec = _record()
    pooler_log.keep(rec, env, m, tmp_path)
    doc = rec.extra["pooler"]["log"]
    assert doc["collected"] is False and doc["reason"].startswith("not collected: host h2")
    assert rec.artifacts == {} and not (tmp_path / "pooler.log").exists()
    # reachable at the start, cut off while the segment streams: what came is kept, and said
    fake_host.down = False
    m = pooler_log.mark(env, "pgbouncer")
    with fake_host.log.open("a") as out:
        out.write(_lines(10, 20))
    fake_host.lose_after = 4
    rec = _record()
    pooler_log.keep(rec, env, m, tmp_path)
    text = (tmp_path / "pooler.log").read_text()
    assert text.splitlines()[:4] == _lines(10, 14).splitlines()
    assert text.endswith(
        "[pgrig] the log was not read to its end: host h2: connection lost (cut)\n"
    )
    got = rec.extra["pooler"]["log"]
    assert got["truncated"] and sum(got["records"].values()) == 4 and got["cut"]
    # and the host down when the run ended
    fake_host.lose_after, fake_host.down = None, True
    rec = _record()
    pooler_log.keep(rec, env, m, tmp_path / "x")
    assert rec.extra["pooler"]["log"]["collected"] is False and rec.artifacts == {}


def test_direct_runs_read_no_pooler_log(fake_host: FakeHost) -> None:
    assert pooler_log.mark(_remote_env(), "direct") is None
    assert fake_host.calls == []


def test_pgbouncer_severities() -> None:
    line = "2026-11-26 01:00:00.000 UTC [7] {} C-0x1: pgrig/pgrig_pool@10.0.0.1:4242 x"
    kinds = {sev: pooler_log.pgbouncer_kind(line.format(sev)) for sev in
             ("ERROR", "FATAL", "WARNING", "LOG", "NOISE")}  # fmt: skip
    assert kinds == {"ERROR": "error", "FATAL": "error", "WARNING": "warning", "LOG": "log",
                     "NOISE": "log"}  # fmt: skip
    assert pooler_log.pgbouncer_kind("not pgbouncer's") == "other"
