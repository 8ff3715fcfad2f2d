"""Turning the server parser's FATAL/DETAIL/HINT into one-line errors naming the setting."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pgrig.errors import InvalidSetting
from pgrig.provision.settings import catalog, validator
from pgrig.provision.settings.catalog import Catalog


def _cases(fixtures_dir: Path) -> dict[tuple[int, str], str]:
    """'### <major> <name=value> rc=N' headers followed by the real stderr."""
    text = (fixtures_dir / "provision" / "server-errors.txt").read_text()
    out = {}
    for block in text.split("### ")[1:]:
        head, _, body = block.partition("\n")
        major, assignment, _rc = head.split(" ")
        out[(int(major), assignment)] = body
    return out


@pytest.fixture
def cat15(fixtures_dir: Path) -> Catalog:
    text = (fixtures_dir / "provision" / "describe-config-15.txt").read_text()
    return Catalog("15.18", catalog.parse_describe_config(text))


EXPECTED = {
    (15, "shared_buffers=lots"): "invalid value for shared_buffers: 'lots'",
    (15, "shared_buffers=1"): "shared_buffers=1 is outside the valid range 16 .. 1073741823 "
    "(in units of 8kB)",
    (15, "wal_level=foo"): "invalid value for wal_level: 'foo'; "
    "Available values: minimal, replica, logical.",
    (15, "io_method=worker"): "io_method does not exist in PostgreSQL 15 (added in 18)",
    (15, "fsync=maybe"): "invalid value for fsync: 'maybe' (use on/off, true/false, yes/no, 1/0)",
    (15, "block_size=16"): "block_size is read-only in PostgreSQL 15: it cannot be set",
    (15, "work_mem=5XB"): "invalid value for work_mem: '5XB'; Valid units for this parameter "
    'are "B", "kB", "MB", "GB", and "TB".',
    (15, "log_destination=foo"): "invalid value for log_destination: 'foo'; "
    'Unrecognized key word: "foo".',
    (15, "checkpoint_timeout=1"): "checkpoint_timeout=1 is outside the valid range 30 .. 86400 "
    "(in units of s)",
    (15, "shared_bufers=1GB"): "unknown setting 'shared_bufers' in PostgreSQL 15 "
    "(did you mean shared_buffers?)",
    (
        18,
        "io_method=bogus",
    ): "invalid value for io_method: 'bogus'; Available values: sync, worker.",
    (18, "io_workers=0"): "io_workers=0 is outside the valid range 1 .. 32",
    (18, "random_page_cost=-1"): "random_page_cost=-1 is outside the valid range 0 .. 1.79769e+308",
    (18, "enable_seqscan=2"): "invalid value for enable_seqscan: '2' (use on/off, true/false, "
    "yes/no, 1/0)",
}


def test_every_captured_error_becomes_one_line(fixtures_dir: Path, cat15: Catalog) -> None:
    cases = _cases(fixtures_dir)
    assert set(EXPECTED) <= set(cases)
    for (major, assignment), stderr in cases.items():
        name, value = assignment.split("=", 1)
        msg = validator.server_error_message(stderr, {name: value}, major, cat15)
        assert "\n" not in msg and name in msg, msg
        assert not re.search(r"\d{4}-\d\d-\d\d", msg)  # no log prefix
        if (major, assignment) in EXPECTED:
            assert msg == EXPECTED[(major, assignment)]


def test_origin_is_named(fixtures_dir: Path) -> None:
    stderr = _cases(fixtures_dir)[(15, "shared_buffers=lots")]
    msg = validator.server_error_message(
        stderr, {"shared_buffers": "lots"}, 15, None, {"shared_buffers": "profile 'oltp'"}
    )
    assert msg == "invalid value for shared_buffers: 'lots' (from profile 'oltp')"


def test_parse_server_error_without_fatal() -> None:
    name, primary, extra = validator.parse_server_error("could not exec\n")
    assert name is None and primary == "could not exec" and extra == []


def test_version_messages() -> None:
    assert validator.version_message("io_method", 15) == (
        "io_method does not exist in PostgreSQL 15 (added in 18)"
    )
    assert validator.version_message("io_method", 18) is None
    assert validator.version_message("old_snapshot_threshold", 17) == (
        "old_snapshot_threshold does not exist in PostgreSQL 17 (removed in 17)"
    )
    assert validator.version_message("summarize_wal", 16) is not None
    assert validator.version_message("checkpoint_segments", 15) == (
        "checkpoint_segments does not exist in PostgreSQL 15 (removed in 9)"
    )
    assert validator.version_message("shared_buffers", 15) is None


def test_check_names(cat15: Catalog) -> None:
    validator.check_names({"shared_buffers": "1GB", "my_ext.knob": "1"}, 15, cat15)
    with pytest.raises(InvalidSetting, match=r"^io_method does not exist in PostgreSQL 15"):
        validator.check_names({"io_method": "worker"}, 15, cat15)
    # not in a describe-config catalogue: left to the server parser (developer options)
    validator.check_names({"zero_damaged_pages": "on"}, 15, cat15)
    cat15.enriched = True  # a complete catalogue decides alone
    with pytest.raises(InvalidSetting, match=r"did you mean shared_buffers"):
        validator.check_names({"shared_bufers": "1GB"}, 15, cat15)


def test_normalize_and_reserved() -> None:
    assert validator.normalize({"DateStyle": "ISO", "work_mem": 64}) == {
        "datestyle": "ISO",
        "work_mem": "64",
    }
    with pytest.raises(InvalidSetting, match="invalid setting name"):
        validator.normalize({"work mem": "1"})
    with pytest.raises(InvalidSetting, match="line breaks"):
        validator.normalize({"work_mem": "1\nfsync=off"})
    with pytest.raises(InvalidSetting, match=r"127\.0\.0\.1 only"):
        validator.check_reserved(["LISTEN_ADDRESSES"])
    with pytest.raises(InvalidSetting, match="--port"):
        validator.check_reserved({"port": "1"})
