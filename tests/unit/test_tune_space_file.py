"""`pgrig tune --space FILE` (tune/space_file.py): a space file is refused like any invalid
input, naming its key path."""

from __future__ import annotations

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
