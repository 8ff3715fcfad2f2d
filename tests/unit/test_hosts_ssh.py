"""hosts.ssh against an asyncssh server on loopback that runs commands with a real `sh -c`.

What is checked: argv quoting (names with spaces, quotes or `$()` stay data), stdin for
secrets, host-key verification (unknown, changed, accepted on first use only when asked),
authentication refused, unreachable, streaming a process and signalling it, SFTP, the probe.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest

from pgrig.hosts import ssh
from pgrig.hosts.registry import Host


async def _handle(process: asyncssh.SSHServerProcess) -> None:
    proc = await asyncio.create_subprocess_exec(
        "sh",
        "-c",
        process.command or "true",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdin and proc.stdout and proc.stderr

    async def feed() -> None:
        async for chunk in process.stdin:
            proc.stdin.write(chunk.encode())  # type: ignore[union-attr]
        proc.stdin.close()  # type: ignore[union-attr]

    async def pump(src: asyncio.StreamReader, dst: asyncssh.SSHWriter) -> None:
        while data := await src.read(4096):
            dst.write(data.decode())

    feeder = asyncio.ensure_future(feed())
    await asyncio.gather(pump(proc.stdout, process.stdout), pump(proc.stderr, process.stderr))
    feeder.cancel()
    process.exit(await proc.wait())


class _Server:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self.client_key = asyncssh.generate_private_key("ssh-ed25519")
        (tmp / "id").write_bytes(self.client_key.export_private_key())
        (tmp / "id").chmod(0o600)
        (tmp / "authorized").write_bytes(self.client_key.export_public_key())
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(
            asyncssh.listen(
                "127.0.0.1",
                0,
                server_host_keys=[self.host_key],
                authorized_client_keys=str(tmp / "authorized"),
                process_factory=_handle,
                sftp_factory=True,
            )
        )
        self.port = self.server.sockets[0].getsockname()[1]
        import threading

        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def known_hosts(self, key: asyncssh.SSHKey | None = None) -> Path:
        f = self.tmp / f"known_hosts_{id(key)}"
        k = (key or self.host_key).export_public_key().decode().strip()
        f.write_text(f"[127.0.0.1]:{self.port} {k}\n")
        return f

    def host(self, **kw: object) -> Host:
        doc: dict[str, object] = {
            "name": "t1",
            "user": "root",
            "address": "127.0.0.1",
            "port": self.port,
            "identity": str(self.tmp / "id"),
            "known_hosts": str(self.known_hosts()),
        }
        doc.update(kw)
        return Host(**doc)  # type: ignore[arg-type]

    def close(self) -> None:
        # in the server's own loop: asyncio is not thread-safe (closed from this thread, a
        # session still ending in the loop's thread failed the teardown under load)
        async def stop() -> None:
            self.server.close()
            await self.server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Server]:
    s = _Server(tmp_path_factory.mktemp("sshd"))
    yield s
    s.close()


def test_argv_is_data_not_shell(server: _Server, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    words = ["a b", "it's", '"q"', f"$(touch {marker})", "`id`", "; rm -rf /", "*", "\\n"]
    r = ssh.run(server.host(), ["printf", "%s\\n", *words])
    assert r.rc == 0
    assert r.stdout.splitlines() == words
    assert not marker.exists()


def test_secrets_go_on_stdin(server: _Server) -> None:
    r = ssh.run(server.host(), ["sh", "-c", "read p; echo got:$p"], input="s3cret\n")
    assert r.stdout.strip() == "got:s3cret"
    assert "s3cret" not in " ".join(r.argv)


def test_rc_and_check(server: _Server) -> None:
    r = ssh.run(server.host(), ["sh", "-c", "echo oops >&2; exit 3"])
    assert (r.rc, r.stderr.strip()) == (3, "oops")
    with pytest.raises(ssh.HostCommandFailed, match=r"^host t1: sh failed: oops$"):
        r.check()
    full = ssh.Result("t1", ("cp",), 1, "", "cp: error writing 'x': No space left on device\n")
    with pytest.raises(ssh.DiskFull, match="disk full"):
        full.check("copy")


def test_unknown_host_key_is_refused(server: _Server, tmp_path: Path) -> None:
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    with pytest.raises(ssh.HostKeyUnknown, match="unknown host key"):
        ssh.run(server.host(known_hosts=str(empty)), ["true"])


def test_accept_new_records_the_key_once(server: _Server, tmp_path: Path) -> None:
    kh = tmp_path / "kh"
    host = server.host(known_hosts=str(kh))
    info = ssh.probe(host, accept_new_host_key=True)
    assert info.user
    assert f"[127.0.0.1]:{server.port} ssh-ed25519 " in kh.read_text()
    assert ssh.run(host, ["true"]).rc == 0  # now verified strictly


def test_changed_host_key_is_refused_even_with_accept_new(server: _Server) -> None:
    other = asyncssh.generate_private_key("ssh-ed25519")
    host = server.host(known_hosts=str(server.known_hosts(other)))
    with pytest.raises(ssh.HostKeyChanged, match="HOST KEY CHANGED"):
        ssh.probe(host, accept_new_host_key=True)


def test_wrong_key_is_authentication_refused(server: _Server, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong"
    wrong.write_bytes(asyncssh.generate_private_key("ssh-ed25519").export_private_key())
    wrong.chmod(0o600)
    with pytest.raises(ssh.AuthRefused, match="authentication refused"):
        ssh.run(server.host(identity=str(wrong)), ["true"])


def test_no_known_key_is_refused_before_connecting() -> None:
    host = Host("gone", "root", "127.0.0.1", 9, None, "/dev/null")
    with pytest.raises(ssh.HostKeyUnknown, match="--accept-new-host-key"):
        ssh.run(host, ["true"])


def test_a_closed_port_is_unreachable_first_not_an_unknown_key(tmp_path: Path) -> None:
    """Issue 43 (F11): no key known and nothing listening: the closed port is the cause said
    first (--accept-new-host-key cannot help it), its key the second."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound, not listening: connections to it are refused
        port = s.getsockname()[1]
        kh = tmp_path / "kh"
        kh.write_text("")
        host = Host("h1", "root", "127.0.0.1", port, None, str(kh))
        with pytest.raises(ssh.Unreachable) as e:
            ssh.run(host, ["true"])
    assert str(e.value) == (
        f"host h1 (root@127.0.0.1:{port}): unreachable (connection refused: no sshd on that "
        f"port); its host key is not known either (not in {kh}): once it answers, check its "
        "fingerprint and add it, or pass --accept-new-host-key"
    )


def test_a_listening_port_with_no_known_key_is_an_unknown_key(
    server: _Server, tmp_path: Path
) -> None:
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    with pytest.raises(ssh.HostKeyUnknown) as e:
        ssh.run(server.host(known_hosts=str(empty)), ["true"])
    assert not isinstance(e.value, ssh.Unreachable)
    assert ": unknown host key (not in " in str(e.value)


def test_unreachable_with_known_key(server: _Server) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        kh = server.tmp / "kh_unreachable"
        k = server.host_key.export_public_key().decode().strip()
        kh.write_text(f"[127.0.0.1]:{port} {k}\n")
        host = server.host(port=port, known_hosts=str(kh))
        with pytest.raises(ssh.Unreachable, match="unreachable"):
            ssh.run(host, ["true"])


def test_stream_and_signal(server: _Server) -> None:
    async def go() -> tuple[list[str], int]:
        async with ssh.open_session(server.host()) as s:
            p = await s.start(["sh", "-c", "echo one; echo two; exec sleep 30"])
            assert p.pid > 0
            got = []
            async for line in p.lines():
                got.append(line)
                if len(got) == 2:
                    await p.signal("TERM")
            res = await p.wait(10)
            return got, res.rc

    lines, rc = asyncio.run(go())
    assert lines == ["one", "two"]
    assert rc != 0


def test_a_stream_ending_inside_a_line(server: _Server) -> None:
    """A protocol's frames all end in a newline: a stream cut inside one (a killed session) is a
    lost connection, not a frame to parse; a log's unfinished last line is still a line."""

    async def go(whole: bool) -> list[str]:
        async with ssh.open_session(server.host()) as s:
            p = await s.start(["printf", '{"k":"os"}\\n{"k":"lo'])
            return [line async for line in p.lines(whole=whole)]

    assert asyncio.run(go(False)) == ['{"k":"os"}', '{"k":"lo']
    with pytest.raises(ssh.ConnectionLost, match="ended inside a line, 8 characters into it"):
        asyncio.run(go(True))


def test_sftp_put_and_probe(server: _Server, tmp_path: Path) -> None:
    src = tmp_path / "file with space"
    src.write_text("payload")
    dest = tmp_path / "copied"
    ssh.put(server.host(), src, str(dest), mode=0o600)
    assert dest.read_text() == "payload"
    assert dest.stat().st_mode & 0o777 == 0o600
    info = ssh.probe(server.host())
    assert info.python3 and info.python3_path


def test_require_usable_lines() -> None:
    host = Host("h", "bench", "10.0.0.1")
    base = dict(
        user="bench",
        uid=1000,
        sudo=False,
        python3="3.11.2",
        python3_path="/p",
        os_release="",
        machine="x86_64",
    )
    with pytest.raises(ssh.NotRoot, match="not root and has no passwordless sudo"):
        ssh.require_usable(host, ssh.HostInfo(**base))  # type: ignore[arg-type]
    with pytest.raises(ssh.NoPython, match="no python3"):
        ssh.require_usable(host, ssh.HostInfo(**{**base, "uid": 0, "python3": None}))  # type: ignore[arg-type]
    ssh.require_usable(host, ssh.HostInfo(**{**base, "sudo": True}))  # type: ignore[arg-type]
