"""Settings layers and the generated pgrig.conf."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgrig.errors import InvalidSetting
from pgrig.provision.settings import config
from pgrig.provision.settings.config import Layers
from pgrig.provision.state.environment import Environment


def test_parse_assignments() -> None:
    got = config.parse_assignments(
        ["shared_buffers=1GB", "Work_Mem = '64MB'", "log_line_prefix='%m ''x'' '", "a.b="]
    )
    assert got == {
        "shared_buffers": "1GB",
        "work_mem": "64MB",
        "log_line_prefix": "%m 'x' ",
        "a.b": "",
    }
    for bad in ("shared_buffers", "=1"):
        with pytest.raises(InvalidSetting, match="expected NAME=VALUE"):
            config.parse_assignments([bad])


def _layers() -> Layers:
    return Layers(
        base={"port": "5433", "listen_addresses": "127.0.0.1"},
        profile={"shared_buffers": "1GB", "work_mem": "8MB", "jit": "off"},
        environment={"work_mem": "16MB", "random_page_cost": "1.1"},
        run={"work_mem": "64MB", "fsync": "off"},
        profile_name="oltp",
    )


def test_precedence_and_origins() -> None:
    ls = _layers()
    merged = ls.merged()
    assert merged["work_mem"] == ("64MB", "run")
    assert merged["shared_buffers"] == ("1GB", "profile")
    assert merged["random_page_cost"] == ("1.1", "environment")
    assert ls.origins()["shared_buffers"] == "profile 'oltp'"
    assert ls.origins()["fsync"] == "run settings"


def test_render_comments_and_roundtrip() -> None:
    text = config.render(_layers())
    assert "work_mem = '64MB'  # run; overrides profile '8MB', environment '16MB'" in text
    assert "shared_buffers = '1GB'  # profile" in text
    assert "# --- profile 'oltp'" in text
    assert text.count("work_mem =") == 1
    assert config.parse_conf(text) == _layers().effective()


def test_quote() -> None:
    assert config.quote("it's") == "'it''s'"
    assert config.quote("C:\\x") == "'C:\\\\x'"
    assert config.parse_conf("a = " + config.quote("it's C:\\x") + "\n") == {"a": "it's C:\\x"}


def test_changed_names() -> None:
    assert config.changed_names({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}) == ["b", "c"]
    assert config.changed_names({"a": "1"}, {}) == ["a"]


def test_ensure_include_once_and_write_conf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGRIG_HOME", str(tmp_path))
    monkeypatch.setattr(config.osuser, "give_to_server", lambda p, mode=None: None)
    env = Environment(name="e", port=5999, settings={"work_mem": "4MB"})
    env.datadir.mkdir(parents=True)
    original = "# initdb wrote this\nmax_connections = 100\n"
    (env.datadir / "postgresql.conf").write_text(original)
    config.ensure_include(env.datadir)
    config.ensure_include(env.datadir)
    conf = (env.datadir / "postgresql.conf").read_text()
    assert conf == original + "include_if_exists = 'pgrig.conf'\n"
    config.write_conf(env)
    got = config.parse_conf((env.datadir / "pgrig.conf").read_text())
    assert got == {
        "listen_addresses": "127.0.0.1",
        "port": "5999",
        "unix_socket_directories": str(env.socket_dir),
        "work_mem": "4MB",
    }
    assert not list(env.datadir.glob(".*tmp"))
