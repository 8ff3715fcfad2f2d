"""The load agent (load/remote/remote_agent.py) driven through its real protocol by the client
(load/remote/agent_client.py), as a local process: clocks, files, round trips, a stand-in "pgbench"
(a shell script writing pgbench-shaped log lines), stop, the silence watchdog, and that nothing
is left behind."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from pgrig.load.remote import agent_program
from pgrig.load.remote.agent_client import AgentClient, LocalTransport
from pgrig.load.remote.remote_agent import measure_rtt

FAKE_PGBENCH = """#!/bin/sh
# writes 3 log lines per thread file, a progress line, then sleeps $1 seconds
now=$(date +%s)
for t in "" .1; do
  for i in 1 2 3; do echo "0 $i 250 0 $now 000$i" >> "$2/txlog.4242$t"; done
done
echo "progress: 1.0 s, 3.0 tps, lat 0.250 ms stddev 0.0, 0 failed" >&2
echo "number of transactions actually processed: 6"
echo "work directory: $2"
exec sleep "$1"
"""


@pytest.fixture()
def fake_pgbench(tmp_path: Path) -> str:
    path = tmp_path / "pgbench"
    path.write_text(FAKE_PGBENCH)
    path.chmod(0o755)
    return str(path)


def test_program_is_standard_library_only_and_compact() -> None:
    src = agent_program.program()
    assert "import pgrig" not in src and "from pgrig" not in src
    argv = agent_program.agent_argv()
    assert argv[:3] == ["python3", "-u", "-c"]
    assert len(argv[3]) < 100_000  # one argv element (MAX_ARG_STRLEN is 128 KiB)


def test_agent_runs_logs_and_cleans_up(fake_pgbench: str) -> None:
    logs: list[tuple[str, bytes]] = []
    lines: list[str] = []
    client = AgentClient(
        LocalTransport(),
        on_log=lambda _h, chunks: logs.extend(chunks),
        on_stderr=lambda _h, line: lines.append(line),
    )
    try:
        client.wait_ready()
        offset = client.measure_clock(4)
        assert abs(offset.offset_us) <= offset.error_us + 2000  # same clock, here
        client.put_file("x.sql", "SELECT 1;")
        at = time.time_ns() // 1000 + 200_000
        client.start(at, [fake_pgbench, "0.2", "@WORK@"], {}, deadline_s=30, passfile="*:*:*:*:x")
        assert client.exited.wait(15)
        st = client.state
        assert st.exit_rc == 0 and st.lost is None and st.errors == []
        assert st.launched_us is not None and 0 <= st.launched_us - at < 100_000
        assert "actually processed: 6" in st.stdout
        assert any(line.startswith("progress:") for line in lines)
        assert sorted(src for src, _ in logs) == ["txlog.4242", "txlog.4242.1"]
        assert sum(d.count(b"\n") for _, d in logs) == 6
        # its own directory, as its pgbench saw it (other tests' agents come and go meanwhile)
        [work] = [ln.split(": ", 1)[1] for ln in st.stdout.splitlines() if ln.startswith("work ")]
        assert Path(work).name.startswith("pgrig-agent-") and Path(work).is_dir()
    finally:
        client.close()
    assert not Path(work).exists()  # its directory (scripts, the passfile, logs) is gone


def test_stop_ends_pgbench_and_a_missing_binary_is_said(fake_pgbench: str) -> None:
    client = AgentClient(LocalTransport())
    try:
        client.wait_ready()
        client.start(0, [fake_pgbench, "60", "@WORK@"], {}, deadline_s=120)
        deadline = time.monotonic() + 10
        while client.state.pid is None and time.monotonic() < deadline:
            time.sleep(0.05)
        pid = client.state.pid
        assert pid is not None
        client.stop(grace_s=1.0)
        assert client.exited.wait(10)
        assert client.state.exit_rc != 0
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        client.close()
    missing = AgentClient(LocalTransport())
    try:
        missing.wait_ready()
        missing.start(0, ["/nonexistent/pgbench"], {}, deadline_s=10)
        assert missing.exited.wait(10)
        assert missing.state.exit_rc == 127
        assert "no executable pgbench at /nonexistent/pgbench" in missing.state.errors[0]
    finally:
        missing.close()


def test_silence_ends_the_agent_and_its_pgbench(fake_pgbench: str) -> None:
    """A control machine that went silent (a cut link keeps the session open): the agent
    stops pgbench and exits by itself."""
    import subprocess

    proc = subprocess.Popen(
        agent_program.agent_argv(silence=1.5), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"op":"start","at_us":0,"argv":["%s","60","@WORK@"],"deadline_s":99}\n'
                     % fake_pgbench.encode())  # fmt: skip
    proc.stdin.flush()
    pid = None
    for raw in proc.stdout:
        if b'"launched"' in raw:
            pid = int(raw.split(b'"pid":')[1].split(b"}")[0])
            break
    assert pid is not None
    assert proc.wait(15) == 3  # the silence code
    deadline = time.monotonic() + 15  # the agent killed it as it exited: gone, reaped by init
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    proc.stdin.close()
    proc.stdout.close()


def test_measure_rtt_times_connects_and_tells_loopback() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    try:
        got = measure_rtt("127.0.0.1", server.getsockname()[1], 5)
        assert got["loopback"] is True and len(got["samples_us"]) == 5
        assert all(x > 0 for x in got["samples_us"])
    finally:
        server.close()
    refused = measure_rtt("127.0.0.1", 1, 3)
    assert "cannot connect" in refused["error"] and refused["samples_us"] == []


FAKE_SYSBENCH = """#!/bin/sh
# prints sysbench-shaped report lines on stdout, and where its Lua files are
echo "Threads started!"
echo "[ 1s ] thds: 2 tps: 10.00 qps: 40.00 (r/w/o: 0.00/0.00/0.00) lat (ms,95%): 1.00 err/s: 0.00"
cat "$LUA_DIR/main.lua" "$LUA_DIR/main_module.lua"
"""


def test_files_in_a_sub_directory_a_program_on_the_path_and_stdout_lines(tmp_path: Path) -> None:
    """What a sysbench script on a load host needs: its modules beside it in a directory of
    the agent's, sysbench found on the host's PATH, its stdout reports as they come."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "fakebench").write_text(FAKE_SYSBENCH)
    (bindir / "fakebench").chmod(0o755)
    lines: list[str] = []
    client = AgentClient(LocalTransport(), on_stdout=lambda _h, line: lines.append(line))
    try:
        client.wait_ready()
        client.put_file("lua/main.lua", "-- main\n")
        client.put_file("lua/main_module.lua", "-- module\n")
        for bad in ("../escape.lua", "a/b/c.lua", "/etc/x", "lua/.."):
            client.put_file(bad, "x")
        env = {"PATH": f"{bindir}:/usr/bin:/bin", "LUA_DIR": "@WORK@/lua"}
        client.start(0, ["fakebench", "x"], env, deadline_s=30, stdout_lines=True)
        assert client.exited.wait(15)
        st = client.state
        assert st.exit_rc == 0, st.errors
        assert lines[:2] == ["Threads started!", lines[1]] and lines[1].startswith("[ 1s ]")
        assert "-- main" in lines and "-- module" in lines
        assert st.stdout.splitlines() == lines  # the whole stdout comes with the exit too
        assert [e.split(":")[0] for e in st.errors] == ["not a file name"] * 4
    finally:
        client.close()
    missing = AgentClient(LocalTransport())
    try:
        missing.wait_ready()
        missing.start(0, ["no-such-bench"], {"PATH": str(tmp_path)}, deadline_s=10)
        assert missing.exited.wait(10)
        assert missing.state.exit_rc == 127
        assert "no executable no-such-bench on this host's PATH" in missing.state.errors[0]
    finally:
        missing.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
