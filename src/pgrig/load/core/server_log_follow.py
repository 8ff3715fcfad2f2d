"""A run's part of its environment's server log: read once, kept bounded, cut from the server's
file once read.

    log = RunServerLog.open(env, art_dir)   # before the load: where the run's part starts
    log.feed = collection.log_feed()         # the insights' reader of the lines
    log.follow()                             # read during the load only if it grows a lot
    ...the load...
    log.stop()                               # (also when the load fails)
    log.finish(files, rec)                   # the rest read; server.log kept; extra

Every line of the run's part goes, in order, to the insights' feed (plans and the digest, from
every record: insights/collector.py) and to the bounded excerpt the run keeps as its
`server.log` artifact (insights/log_excerpt.py). The file is read after the load, when reading
costs the load nothing; during it only when more than FOLLOW_BYTES wait (a workload that makes
the server log every transaction's error), so that what was read can be cut from the server's
file (provision/server/log_file.py) and neither the file nor pgrig's memory grows with the run.
The run records what the server wrote and what it keeps in extra["server_log"].

An environment on another host (`env create --on`) keeps its log there: RemoteServerLog marks
its end over SSH before the load and streams the run's part after it (hosts/remote.read_since),
through the same feed and excerpt; nothing is read during the load nor cut from that file.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Protocol

from pgrig import interrupts
from pgrig.archive.records import RunRecord
from pgrig.errors import first_line
from pgrig.hosts.registry import Host
from pgrig.insights.log_excerpt import LogExcerpt
from pgrig.load.core import run_files
from pgrig.provision.server import log_file
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import ServerLogDoc

FOLLOW_BYTES = 32 * 1024 * 1024  # read during the load only when this much waits
POLL_S = 2.0
ARTIFACT = "server.log"


class LineFeed(Protocol):
    def line(self, text: str) -> None: ...


class RunServerLog:
    def __init__(self, path: Path, start: int, art_dir: Path, feed: LineFeed | None) -> None:
        self.path = path
        self.pos = start  # the next byte to read, in the file as it is now
        self.excerpt = LogExcerpt(art_dir / ARTIFACT)
        self.feed = feed
        self.removed = 0  # bytes cut from the head of the server's file during the run
        self.removed_before = 0  # ... before the run, of what earlier runs left
        self.problems: list[str] = []
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None

    @classmethod
    def open(
        cls, env: Environment, art_dir: Path, feed: LineFeed | None = None
    ) -> RunServerLog | None:
        """The run's part starts at the file's end now (None: pgrig has no log file of this
        environment's server); what earlier runs read is cut first."""
        if env.kind == "remote":
            return RemoteServerLog.open_on_host(env, art_dir, feed)
        if not env.managed or not env.logfile.exists():
            return None
        try:
            size = env.logfile.stat().st_size
        except OSError:
            return None
        self = cls(env.logfile, size, art_dir, feed)
        cut = log_file.cut_head(env.logfile, size)
        self.removed_before = cut.removed
        self.pos -= cut.removed
        self._problem(cut.problem)
        return self

    def follow(self) -> None:
        """Read during the load when much waits (a thread, until finish())."""
        self.thread = threading.Thread(target=self._run, name="pgrig-server-log", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        """No more reading during the load (idempotent)."""
        self.stop_event.set()
        if self.thread is not None:
            interrupts.join(self.thread, timeout=60)
            self.thread = None

    def _run(self) -> None:
        while not self.stop_event.wait(POLL_S):
            try:
                waiting = self.path.stat().st_size - self.pos
            except OSError:
                continue
            if waiting > FOLLOW_BYTES:
                self._read_and_cut()

    def _read_and_cut(self) -> None:
        with self.lock:
            try:
                self._read()
            except (OSError, ValueError) as e:  # a line the excerpt cannot write, a lost file
                self._problem(f"reading {self.path}: {first_line(e, named=True)}")
                return
            cut = log_file.cut_head(self.path, self.pos)
            self.removed += cut.removed
            self.pos -= cut.removed
            self._problem(cut.problem)

    def _read(self) -> None:
        """Whole lines from pos to the end as it is now (a line the server is still writing
        waits; so do lines written meanwhile: a fast writer is not chased for ever)."""
        size = self.path.stat().st_size
        if size < self.pos:  # someone else cut or truncated it: read what is there
            self._problem(f"{self.path} shrank during the run: lines may be missing")
            self.pos = 0
        with open(self.path, "rb") as f:
            f.seek(self.pos)
            for raw in f:
                if not raw.endswith(b"\n"):
                    break
                self.pos += len(raw)
                text = raw.decode("utf-8", "replace").rstrip("\r\n")
                if self.feed is not None:
                    self.feed.line(text)
                self.excerpt.line(text)
                if self.pos >= size:
                    break

    def finish(self, files: run_files.RunFiles, rec: RunRecord) -> None:
        """Read the rest, keep the excerpt as the run's server.log, cut what was read from
        the server's file, and record it all in rec.extra["server_log"]."""
        self.stop()
        self._read_and_cut()
        try:
            doc = ServerLogDoc(**self.excerpt.close())
            files.rec.artifacts[ARTIFACT] = ARTIFACT
        except OSError as e:
            files.failed(self.excerpt.path, e)
            doc = ServerLogDoc(**self.excerpt.summary())
            doc["kept_bytes"] = 0
        doc["server_file_cut_bytes"] = self.removed_before + self.removed
        if self.problems:
            doc["problems"] = self.problems
        rec.extra["server_log"] = doc

    def _problem(self, text: str | None) -> None:
        if text and text not in self.problems and len(self.problems) < 5:
            self.problems.append(text)


class RemoteServerLog(RunServerLog):
    """The run's part of the log of a server on another host (see the module docstring)."""

    def __init__(
        self, host: Host, path: str, start: int, art_dir: Path, feed: LineFeed | None
    ) -> None:
        super().__init__(Path(path), start, art_dir, feed)
        self.host = host

    @classmethod
    def open_on_host(
        cls, env: Environment, art_dir: Path, feed: LineFeed | None = None
    ) -> RunServerLog | None:
        """Where the log on the server's host ends now; None (the run says it did not read
        the server log) when the host cannot be asked."""
        from pgrig.hosts import registry, remote

        try:
            host = registry.get(env.on or "")
            path = f"{remote.REMOTE_HOME}/envs/{env.name}/{env.logfile.name}"
            return cls(host, path, remote.file_size(host, path, "the server log"), art_dir, feed)
        except Exception:
            return None

    def follow(self) -> None:
        """Nothing is read during the load: the file is on its host."""

    def _read_and_cut(self) -> None:
        from pgrig.hosts import remote

        def line(text: str) -> None:
            if self.feed is not None:
                self.feed.line(text)
            self.excerpt.line(text)

        try:
            cut = remote.read_since(self.host, str(self.path), self.pos, line, "the server log")
        except Exception as e:  # the host went away after the run: what came is kept
            cut = first_line(e)
        if cut is not None:
            self._problem(f"the log on host {self.host.name} was not read to its end: {cut}")
