"""Profiles: PGTune/pgconfig outputs against hand-computed values, version-aware skipping."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgrig.errors import NotFound, PgrigError
from pgrig.provision.settings import profiles
from pgrig.provision.settings.profiles import (
    damaged_profiles,
    explain_profile,
    format_kb,
    list_profiles,
    parse_size,
    resolve_profile,
)

GB = 1024**3
MB = 1024**2


def settings(name: str, major: int = 18, **kw: object) -> dict[str, str]:
    return resolve_profile(name, major, **kw)[0]  # type: ignore[arg-type]


# --- PGTune, hand-computed (RAM in kB: 16GB = 16777216 kB) ------------------------------------
def test_pgtune_oltp_16gb_4cpu_ssd() -> None:
    s = settings("pgtune-oltp", 18, ram_bytes=16 * GB, cpus=4, storage="ssd")
    assert s == {
        "max_connections": "300",
        "shared_buffers": "4GB",  # 16777216 / 4 = 4194304 kB
        "effective_cache_size": "12GB",
        "maintenance_work_mem": "1GB",  # RAM/16
        "checkpoint_completion_target": "0.9",
        "wal_buffers": "16MB",  # 3% of 4GB = 125829 kB, capped
        "default_statistics_target": "100",
        "random_page_cost": "1.1",
        "effective_io_concurrency": "200",
        # (16777216 - 4194304) / ((300 + 4) * 3) = 12582912 / 912 = 13797.05
        "work_mem": "13797kB",
        "huge_pages": "try",
        "jit": "off",
        "wal_compression": "lz4",
        "min_wal_size": "2GB",
        "max_wal_size": "8GB",
        "max_worker_processes": "4",
        "max_parallel_workers_per_gather": "2",
        "max_parallel_workers": "4",
        "max_parallel_maintenance_workers": "2",
    }


def test_pgtune_web_16gb_4cpu() -> None:
    s = settings("pgtune-web", 18, ram_bytes=16 * GB, cpus=4)
    assert s["max_connections"] == "200"
    assert s["work_mem"] == "20560kB"  # 12582912 / ((200 + 4) * 3) = 20560.3
    assert (s["min_wal_size"], s["max_wal_size"]) == ("1GB", "4GB")
    assert s["jit"] == "off"


def test_pgtune_desktop_16gb_4cpu() -> None:
    s = settings("pgtune-desktop", 18, ram_bytes=16 * GB, cpus=4)
    assert s["max_connections"] == "20"
    assert s["shared_buffers"] == "1GB"  # RAM/16
    assert s["effective_cache_size"] == "4GB"  # RAM/4
    assert s["huge_pages"] == "off"  # shared_buffers < 2GB
    # (16777216 - 1048576) / ((20 + 4) * 3) / 6 = 15728640 / 72 / 6 = 36408.9
    assert s["work_mem"] == "36408kB"
    assert (s["min_wal_size"], s["max_wal_size"]) == ("100MB", "2GB")
    assert "jit" not in s


def test_pgtune_dw_16gb_4cpu() -> None:
    s = settings("pgtune-dw", 18, ram_bytes=16 * GB, cpus=4)
    assert s["max_connections"] == "40"
    assert s["maintenance_work_mem"] == "2GB"  # RAM/8
    assert s["default_statistics_target"] == "500"
    assert s["random_page_cost"] == "4"  # dw
    # 12582912 / ((40 + 4) * 3) / 2 = 95325.1 / 2 = 47662.5
    assert s["work_mem"] == "47662kB"
    assert (s["min_wal_size"], s["max_wal_size"]) == ("4GB", "16GB")
    assert "jit" not in s


def test_pgtune_dw_gather_not_capped() -> None:
    assert (
        settings("pgtune-dw", ram_bytes=64 * GB, cpus=16)["max_parallel_workers_per_gather"] == "8"
    )
    s = settings("pgtune-oltp", ram_bytes=64 * GB, cpus=16)
    assert s["max_parallel_workers_per_gather"] == "4"
    assert s["max_parallel_maintenance_workers"] == "4"
    assert s["max_worker_processes"] == "16"


def test_pgtune_mixed_and_hdd() -> None:
    s = settings("pgtune-mixed", ram_bytes=16 * GB, cpus=4, storage="hdd")
    assert s["random_page_cost"] == "4"
    assert s["effective_io_concurrency"] == "2"
    # 12582912 / ((100 + 4) * 3) / 2 = 20164.9
    assert s["work_mem"] == "20164kB"
    assert (
        settings("pgtune-oltp", ram_bytes=16 * GB, cpus=4, storage="nvme")[
            "effective_io_concurrency"
        ]
        == "1000"
    )


def test_pgtune_two_cpus_has_no_parallel_settings() -> None:
    s, notes = resolve_profile("pgtune-oltp", 18, ram_bytes=16 * GB, cpus=2)
    assert not any(k.startswith(("max_parallel", "max_worker")) for k in s)
    # work_mem uses the default 8 worker processes: 12582912 / ((300 + 8) * 3) = 13617.9
    assert s["work_mem"] == "13617kB"
    assert any("4+ CPUs" in n for n in notes)


def test_pgtune_wal_buffers_rounding() -> None:
    # shared_buffers 512000 kB (RAM 2048000 kB): 3% = 15360 kB = 15MB, in (14MB, 16MB) -> 16MB
    s = explain_profile("pgtune-web", 18, ram_bytes=2048000 * 1024, cpus=2)
    assert s.settings["shared_buffers"] == "500MB"  # 512000 kB
    assert s.settings["wal_buffers"] == "16MB"
    assert "rounded up" in s.rules["wal_buffers"]
    # 1GB RAM: shared_buffers 256MB, 3% = 7864 kB: kept as is
    assert settings("pgtune-web", ram_bytes=1 * GB, cpus=2)["wal_buffers"] == "7864kB"
    # tiny RAM (desktop 16MB): shared_buffers 1024 kB, 3% = 30 kB -> minimum 32 kB
    assert settings("pgtune-desktop", ram_bytes=16 * MB, cpus=1)["wal_buffers"] == "32kB"


def test_pgtune_work_mem_floor() -> None:
    # 2GB, 2 CPUs: (2097152 - 524288) / ((300 + 8) * 3) = 1702 kB < 4MB -> 4MB
    r = explain_profile("pgtune-oltp", 18, ram_bytes=2 * GB, cpus=2)
    assert r.settings["work_mem"] == "4MB"
    assert "floor" in r.rules["work_mem"]


def test_pgtune_maintenance_cap_and_ram_warning() -> None:
    r = explain_profile("pgtune-dw", 18, ram_bytes=128 * GB, cpus=8)
    assert r.settings["maintenance_work_mem"] == "8GB"  # 16GB capped
    assert any("100GB" in n for n in r.notes)


def test_pgtune_given_max_connections() -> None:
    s = settings("pgtune-oltp", ram_bytes=16 * GB, cpus=4, max_connections=100)
    assert s["max_connections"] == "100"
    assert s["work_mem"] == "40329kB"  # 12582912 / ((100 + 4) * 3) = 40329.8


def test_pgtune_version_aware_extras() -> None:
    assert settings("pgtune-oltp", 14, ram_bytes=16 * GB, cpus=4)["wal_compression"] == "on"
    assert settings("pgtune-oltp", 15, ram_bytes=16 * GB, cpus=4)["wal_compression"] == "lz4"
    s17 = settings("pgtune-oltp", 17, ram_bytes=16 * GB, cpus=4, io_uring=True)
    assert "io_method" not in s17  # 18 only
    s18, notes = resolve_profile("pgtune-oltp", 18, ram_bytes=16 * GB, cpus=4)
    assert "io_method" not in s18  # io_uring support not confirmed
    assert any("io_uring" in n and "skipped" in n for n in notes)
    s18u = settings("pgtune-oltp", 18, ram_bytes=16 * GB, cpus=4, io_uring=True)
    assert s18u["io_method"] == "io_uring"


# --- pgconfig ----------------------------------------------------------------------------
def test_pgconfig_oltp_matches_seed_000() -> None:
    # Seed 000: 32GB host, pgconfig.org OLTP -> 8GB / 24GB / 2GB and work_mem 115MB.
    s = settings("pgconfig-oltp", 18, ram_bytes=32 * GB, cpus=8)
    assert s["shared_buffers"] == "8GB"
    assert s["effective_cache_size"] == "24GB"
    assert s["maintenance_work_mem"] == "2GB"  # 1.6GB shown rounded
    assert s["work_mem"] == "115MB"  # 32GB x 0.35 / 100 = 114.7MB
    assert (s["min_wal_size"], s["max_wal_size"]) == ("2GB", "3GB")
    assert s["io_workers"] == "3"  # ceil(8 x 0.3)
    assert "io_workers" not in settings("pgconfig-oltp", 17, ram_bytes=32 * GB, cpus=8)


def test_pgconfig_io_workers_clamps() -> None:
    assert profiles.pgconfig("oltp", 18, 8 * GB, 10).settings[-1][1] == "3"  # ceil(3.0), not 4
    assert profiles.pgconfig("oltp", 18, 8 * GB, 1).settings[-1][1] == "1"  # 2, then <= CPUs
    assert profiles.pgconfig("dw", 18, 8 * GB, 128, "hdd").settings[-1][1] == "32"  # server max


# --- fixed profiles and versions ---------------------------------------------------------
def test_default_is_empty() -> None:
    s, notes = resolve_profile("default", 15)
    assert s == {}
    assert any("defaults" in n for n in notes)


def test_unsafe_has_loud_warning() -> None:
    s, notes = resolve_profile("unsafe-throughput", 15)
    assert s["fsync"] == "off" and s["full_page_writes"] == "off"
    assert s["checkpoint_warning"] == "0" and len(s) == 8
    assert "THROW-AWAY" in notes[0]


def test_slowest_on_18_has_all_32() -> None:
    s, _ = resolve_profile("slowest", 18)
    assert len(s) == 32
    assert s["io_workers"] == "1" and s["random_page_cost"] == "1e300"


def test_slowest_on_15_reports_skips_and_minimum() -> None:
    r = explain_profile("slowest", 15)
    assert set(r.skipped) == {
        "autovacuum_vacuum_max_threshold",
        "summarize_wal",
        "io_method",
        "io_workers",
    }
    assert len(r.settings) == 28
    assert r.settings["maintenance_work_mem"] == "1MB"  # 128kB is below 15's minimum
    assert any("summarize_wal" in n and "added in 17" in n for n in r.notes)
    r17 = explain_profile("slowest", 17)
    assert "summarize_wal" in r17.settings and r17.settings["maintenance_work_mem"] == "128kB"


def test_slowest_on_14_skips_jsonlog() -> None:
    r = explain_profile("slowest", 14)
    assert "log_destination" in r.skipped
    assert "track_wal_io_timing" in r.settings  # 14+


def test_setting_available() -> None:
    assert profiles.setting_available("track_wal_io_timing", 14)
    assert not profiles.setting_available("track_wal_io_timing", 13)
    assert not profiles.setting_available("old_snapshot_threshold", 17)
    assert profiles.setting_available("shared_buffers", 10)


def test_unknown_profile_lists_known_names() -> None:
    with pytest.raises(NotFound, match="pgtune-oltp"):
        resolve_profile("no-such-profile", 18)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"storage": "tape"}, "storage"),
        ({"cpus": 0}, "CPU"),
        ({"ram_bytes": 0}, "RAM"),
        ({"max_connections": 0}, "max_connections"),
    ],
)
def test_bad_inputs(kw: dict[str, object], match: str) -> None:
    with pytest.raises(PgrigError, match=match):
        resolve_profile("pgtune-oltp", 18, **kw)  # type: ignore[arg-type]


def test_bad_major() -> None:
    with pytest.raises(PgrigError, match="major"):
        resolve_profile("default", 5)


def test_host_defaults_used() -> None:
    r = explain_profile("pgtune-oltp", 18)
    assert r.inputs["ram_bytes"] == profiles.host_ram_bytes()
    assert r.inputs["cpus"] == profiles.host_cpus()


def test_list_profiles_shipped() -> None:
    names = {p.name for p in list_profiles()}
    assert {
        "default",
        "pgtune-oltp",
        "pgtune-web",
        "pgtune-dw",
        "pgtune-desktop",
        "pgtune-mixed",
        "pgconfig-oltp",
        "unsafe-throughput",
        "slowest",
    } <= names


# --- user profiles ---------------------------------------------------------------------------
def _user_profile(home: Path, name: str, text: str) -> None:
    d = home / "profiles"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.toml").write_text(text)


def test_user_profile_fixed_and_override(pgrig_home: Path) -> None:
    _user_profile(
        pgrig_home,
        "mine",
        'description = "x"\n[settings]\nwork_mem = "64MB"\njit = false\nio_workers = 4\n'
        '[rules]\nwork_mem = "sorts fit"\n',
    )
    _user_profile(
        pgrig_home,
        "tuned",
        'kind = "pgtune"\nworkload = "oltp"\n[settings]\nrandom_page_cost = 1.5\n',
    )
    info = {p.name: p for p in list_profiles()}
    assert info["mine"].source == "user"
    r = explain_profile("mine", 15)
    assert r.settings == {"work_mem": "64MB", "jit": "off"}
    assert r.rules["work_mem"] == "sorts fit"
    assert r.skipped == {"io_workers": "4"}
    t = explain_profile("tuned", 18, ram_bytes=16 * GB, cpus=4)
    assert t.settings["random_page_cost"] == "1.5"
    assert "overrides" in t.rules["random_page_cost"]
    assert t.settings["shared_buffers"] == "4GB"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("kind = 'magic'\n", "kind"),
        ("kind = 'pgtune'\n", "workload"),
        ("colour = 'red'\n", "unknown key"),
        ("[settings]\n'Bad Name' = 1\n", "valid setting"),
        ("[settings]\nx = [1]\n", "string, number or boolean"),
        ("this is not toml", "cannot read"),
        ("[settings]\na = 1\n[rules]\nb = 'why'\n", "rules"),
    ],
)
def test_bad_user_profile(pgrig_home: Path, text: str, match: str) -> None:
    _user_profile(pgrig_home, "broken", text)
    with pytest.raises(PgrigError, match=match):
        resolve_profile("broken", 15)
    # reported where it is used or listed; the other profiles keep working (issue 25)
    assert re.search(match, damaged_profiles()["broken"])
    assert "default" in {i.name for i in list_profiles()}


def test_user_profile_overrides_shipped(pgrig_home: Path) -> None:
    _user_profile(pgrig_home, "default", "[settings]\nwork_mem = '8MB'\n")
    s, notes = resolve_profile("default", 18)
    assert s == {"work_mem": "8MB"}
    assert any("overrides the shipped" in n for n in notes)


# --- helpers -----------------------------------------------------------------------------
def test_parse_size_and_format() -> None:
    assert parse_size("16GB") == 16 * GB
    assert parse_size("512mb") == 512 * MB
    assert parse_size("1.5GiB") == int(1.5 * GB)
    for bad in ("16", "GB", "-1GB", "16 apples"):
        with pytest.raises(PgrigError):
            parse_size(bad)
    assert format_kb(4194304) == "4GB"
    assert format_kb(16384) == "16MB"
    assert format_kb(13797) == "13797kB"


def test_io_uring_detection(tmp_path: Path) -> None:
    (tmp_path / "postgres").write_bytes(b"\x7fELF...liburing.so.2\x00...")
    assert profiles.io_uring_supported(tmp_path, 18)
    assert not profiles.io_uring_supported(tmp_path, 17)
    (tmp_path / "postgres").write_bytes(b"\x7fELF...libc.so.6\x00")
    assert not profiles.io_uring_supported(tmp_path, 18)
    assert not profiles.io_uring_supported(tmp_path / "missing", 18)


# --- CLI ---------------------------------------------------------------------------------
def _cli() -> object:
    from pgrig.cli.profile import app

    return app


def test_cli_show_json() -> None:
    res = CliRunner().invoke(
        _cli(), ["show", "pgtune-oltp", "--ram", "16GB", "--cpus", "4", "--pg", "18", "--json"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["settings"]["work_mem"] == "13797kB"
    assert data["rules"]["shared_buffers"] == "RAM/4"


def test_cli_show_table_and_list() -> None:
    res = CliRunner().invoke(_cli(), ["show", "slowest", "--pg", "15"])
    assert res.exit_code == 0, res.output
    assert "summarize_wal" in res.stdout and "WARNING" in res.stdout
    res = CliRunner().invoke(_cli(), ["list", "--json"])
    assert res.exit_code == 0
    assert "pgtune-dw" in {p["name"] for p in json.loads(res.stdout)}


def test_cli_bad_size_is_an_error() -> None:
    res = CliRunner().invoke(_cli(), ["show", "pgtune-oltp", "--ram", "16"])
    assert isinstance(res.exception, PgrigError)


@pytest.mark.parametrize("name", ["default", "pgtune-oltp"])
def test_saving_a_profile_under_a_shipped_name_is_refused(pgrig_home: Path, name: str) -> None:
    from pgrig.provision.settings import profiles

    for force in (False, True):
        with pytest.raises(PgrigError, match=f"profile {name} is shipped with pgrig"):
            profiles.save_profile(name, {"work_mem": "64MB"}, "tuned", [], force=force)
    assert not (pgrig_home / "profiles" / f"{name}.toml").exists()
    assert profiles.resolve_profile("default", 15)[0] == {}


def test_a_damaged_user_profile_is_reported_and_the_others_work(pgrig_home: Path) -> None:
    from typer.testing import CliRunner

    from pgrig.cli.profile import app
    from pgrig.provision.settings import profiles

    (pgrig_home / "profiles").mkdir()
    (pgrig_home / "profiles" / "broken.toml").write_text("kind = fixed\n")
    (pgrig_home / "profiles" / "mine.toml").write_text('[settings]\nwork_mem = "8MB"\n')
    assert profiles.resolve_profile("mine", 15)[0] == {"work_mem": "8MB"}
    assert profiles.resolve_profile("pgtune-oltp", 15, ram_bytes=2**33, cpus=2)[0]
    listed = CliRunner().invoke(app, ["list", "--json"])
    assert listed.exit_code == 0, listed.output
    import json

    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert "broken.toml: cannot read" in rows["broken"]["damaged"] and "mine" in rows
    with pytest.raises(PgrigError, match=r"broken\.toml: cannot read"):
        profiles.resolve_profile("broken", 15)
