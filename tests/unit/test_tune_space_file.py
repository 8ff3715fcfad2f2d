"""`pgrig tune --space FILE` (tune/space_file.py): a space file is refused like any invalid
input, naming its key path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pgrig.errors import PgrigError
from pgrig.tune import space


def _file(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "space.toml"
    f.write_text(text)
    return f


def _refuse(bad: set[str]) -> space.Validator:
    def check(settings: dict[str, str]) -> None:
        for name, value in settings.items():
            if value in bad:
                raise PgrigError(f"invalid value for parameter {name!r}: {value!r}")

    return check


def test_an_invalid_choice_of_a_space_file_is_refused_with_its_key_path(tmp_path: Path) -> None:
    s = space.load_space(_file(tmp_path, '[knobs.wal_compression]\nchoices = ["off", "bogus"]\n'))
    with pytest.raises(PgrigError) as e:
        space.check_space(s, _refuse({"bogus"}))
    assert str(e.value).startswith(f"--space {tmp_path / 'space.toml'}: ")
    assert "knobs.wal_compression.choices[1]: invalid value" in str(e.value)


def test_an_invalid_range_end_of_a_space_file_names_its_key(tmp_path: Path) -> None:
    text = '[knobs.work_mem]\nlow = 1\nhigh = 64\nunit = "MB"\n'
    text += "[knobs.commit_delay]\nlow = 0\nhigh = 9\n"
    s = space.load_space(_file(tmp_path, text))
    with pytest.raises(PgrigError, match=r"knobs\.work_mem\.high: invalid value"):
        space.check_space(s, _refuse({"64MB"}))


def test_a_space_left_empty_is_refused() -> None:
    pgrig_own = space.Space([space.Knob("wal_compression", choices=("zstd", "lz4"))])
    with pytest.raises(PgrigError, match="no knob is left to search"):
        space.check_space(pgrig_own, _refuse({"zstd", "lz4"}))
    # the default space (pgrig's own) still drops what this build lacks, with a note
    kept = space.check_space(
        space.Space(
            [space.Knob("wal_compression", choices=("off", "lz4", "zstd")), space.Knob("x", 1, 2)]
        ),
        _refuse({"zstd"}),
    )
    assert kept.knob("wal_compression").choices == ("off", "lz4")
    assert any("zstd left out" in n for n in kept.notes)


def test_allow_unsafe_with_a_file_without_durability_knobs_says_so(tmp_path: Path) -> None:
    s = space.load_space(
        _file(tmp_path, "[knobs.work_mem]\nlow = 1\nhigh = 4\n"), allow_unsafe=True
    )
    assert s.notes and "nothing unsafe is searched" in s.notes[-1]
    assert not s.unsafe_names


def test_a_refused_range_end_is_quoted_as_the_file_wrote_it(tmp_path: Path) -> None:
    """high = "3TB" with low = "0.5MB" counts the range in kB: the server's refusal named
    '3221225472kB', a value the file never wrote."""
    text = '[knobs.work_mem]\nlow = "0.5MB"\nhigh = "3TB"\n'
    s = space.load_space(_file(tmp_path, text))
    assert s.knob("work_mem").ends() == ["512kB", "3221225472kB"]
    with pytest.raises(PgrigError) as e:
        space.check_space(s, _refuse({"3221225472kB", "3TB"}))
    assert str(e.value).endswith(
        "knobs.work_mem.high: invalid value for parameter 'work_mem': '3TB'"
    )
    # a refusal only of the converted text (the written one passes) names the converted one
    with pytest.raises(PgrigError, match="'3221225472kB'"):
        space.check_space(s, _refuse({"3221225472kB"}))


def test_a_reversed_range_is_quoted_as_the_file_wrote_it(tmp_path: Path) -> None:
    """issue 43, class 7: low = "64MB", high = "4MB" was refused as "low (64) must be below
    high (4)", numbers in the MB the range counts in, which the file never wrote."""
    text = '[knobs.work_mem]\nlow = "64MB"\nhigh = "4MB"\n'
    with pytest.raises(PgrigError) as e:
        space.load_space(_file(tmp_path, text))
    assert str(e.value).endswith("knobs.work_mem: low ('64MB') must be below high ('4MB')")


def test_a_space_path_that_is_no_file_is_refused_as_what_it_is(tmp_path: Path) -> None:
    """`--space DIR` said "no such file" of a directory that is there."""
    with pytest.raises(PgrigError) as e:
        space.space_file_path(str(tmp_path))
    assert str(e.value).startswith(f"--space {tmp_path}: is a directory, not a space file")
    with pytest.raises(PgrigError) as e:
        space.space_file_path(str(tmp_path / "none.toml"))
    assert str(e.value).startswith(f"--space {tmp_path / 'none.toml'}: no such file (or use")
    f = _file(tmp_path, "[knobs.work_mem]\nlow = 1\nhigh = 4\n")
    assert space.space_file_path(str(f)) == f
    # what cannot be read is said as the system says it, without errno noise
    f.chmod(0)
    try:
        if not os.access(f, os.R_OK):  # root reads anything
            with pytest.raises(PgrigError, match=r": cannot read: Permission denied$"):
                space.load_space(f)
    finally:
        f.chmod(0o644)


# --- knobs the server takes one by one but not as a space (issue 43) ---------------------------
def _fits(tmp_path: Path, text: str, clients: int = 1, **configured: str) -> None:
    space.check_connections(space.load_space(_file(tmp_path, text)), clients, configured)


def test_max_connections_must_start_the_server_and_take_the_clients(tmp_path: Path) -> None:
    """max_connections low = 1 passed postgres -C, yet PostgreSQL does not start unless it
    exceeds superuser_reserved_connections + reserved_connections (3 by default)."""
    with pytest.raises(PgrigError) as e:
        _fits(tmp_path, "[knobs.max_connections]\nlow = 1\nhigh = 100\n")
    assert str(e.value) == (
        f"--space {tmp_path / 'space.toml'}: knobs.max_connections.low: max_connections=1 "
        "leaves no room for the run's 1 client: PostgreSQL keeps superuser_reserved_connections "
        "+ reserved_connections (3) out of it and does not start unless max_connections "
        "exceeds them: give max_connections 4 or more"
    )
    _fits(tmp_path, "[knobs.max_connections]\nlow = 4\nhigh = 100\n")
    # PostgreSQL 15 has no reserved_connections (16 brought it): not named there (case 21)
    with pytest.raises(PgrigError) as e:
        space.check_connections(
            space.load_space(_file(tmp_path, "[knobs.max_connections]\nlow = 3\nhigh = 10\n")),
            1, {"reserved_connections": "9"}, 15,
        )  # fmt: skip
    assert str(e.value).endswith(
        "PostgreSQL keeps superuser_reserved_connections (3) out of it and does not start "
        "unless max_connections exceeds it: give max_connections 4 or more"
    )
    # the run's clients, and what the environment reserves, count too
    with pytest.raises(PgrigError, match="give max_connections 14 or more"):
        _fits(tmp_path, "[knobs.max_connections]\nlow = 4\nhigh = 100\n", clients=8, **{
            "superuser_reserved_connections": "5", "reserved_connections": "1"
        })  # fmt: skip
    with pytest.raises(PgrigError, match=r"knobs\.max_connections\.choices: max_connections=3 "):
        _fits(tmp_path, '[knobs.max_connections]\nchoices = ["3", "100"]\n')
    # a reserved knob's high against the environment's max_connections
    with pytest.raises(PgrigError) as e:
        _fits(tmp_path, "[knobs.superuser_reserved_connections]\nlow = 1\nhigh = 99\n", 2)
    assert "knobs.superuser_reserved_connections: max_connections=100 leaves no room" in str(
        e.value
    )
    assert str(e.value).endswith("keep the reserved connections at most 98 in all")
    _fits(tmp_path, '[knobs.work_mem]\nlow = 1\nhigh = 4\nunit = "MB"\n', 500)  # not concerned


def test_a_text_setting_is_no_knob_to_search(tmp_path: Path) -> None:
    """shared_preload_libraries in a space file was taken as two choices to try."""
    s = space.load_space(
        _file(tmp_path, '[knobs.shared_preload_libraries]\nchoices = ["pg_stat_statements", ""]\n')
    )
    types = {"shared_preload_libraries": "STRING", "work_mem": "INTEGER"}
    with pytest.raises(PgrigError) as e:
        space.refuse_text_settings(s, types.get)
    assert str(e.value).startswith(
        f"--space {tmp_path / 'space.toml'}: knobs.shared_preload_libraries: "
        "shared_preload_libraries is a list of libraries loaded at server start"
    )
    assert "not a number, boolean or enum to search" in str(e.value)
    s = space.load_space(_file(tmp_path, "[knobs.work_mem]\nlow = 1\nhigh = 4\n"))
    space.refuse_text_settings(s, types.get)
