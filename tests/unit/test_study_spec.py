"""Study files: the whole file is validated up front and every error names its key path."""

from __future__ import annotations

from pathlib import Path

import pytest
from study_fakes import iterations_toml, study_toml

from pgrig.study import spec as study_spec
from pgrig.study.spec import StudySpecError, parse, setting_value

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "studies"

BASE = study_toml("t1", repeats=2, duration="5s")

ITER = BASE + iterations_toml(
    {"name": "a", "settings": {"shared_buffers": "128MB"}},
    {"name": "b", "settings": {"shared_buffers": "1GB"}},
)


def error_of(text: str, **kw) -> str:
    with pytest.raises(StudySpecError) as e:
        parse(text, **kw)
    return str(e.value)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_examples_are_valid(path: Path) -> None:
    study = study_spec.load(path)
    assert study.name == path.stem
    assert study.source == path.read_text()


def test_iterations_parse() -> None:
    s = parse(ITER)
    assert s.kind == "iterations"
    assert s.name == "t1" and s.repeats == 2
    assert [i.name for i in s.iterations] == ["a", "b"]
    assert s.iterations[1].settings == {"shared_buffers": "1GB"}
    assert s.run.duration_s == 5.0 and s.run.clients == 4
    env = s.environments[s.default_env]
    assert env.version == "15" and env.key == "pg15" and env.name == "t1-pg15"


def test_name_override_and_default_name() -> None:
    assert parse(ITER, name="other").name == "other"
    text = ITER.replace('name = "t1"\n', "")
    assert parse(text, default_name="from-file").name == "from-file"
    assert "--name" in error_of(ITER, name="bad name!")


@pytest.mark.parametrize(
    ("needle", "replacement", "expected"),
    [
        (
            'name = "b"',
            'name = "b"\nsetings = {}',
            "iterations[1].setings: unknown key (did you mean 'settings'?)",
        ),
        (
            'shared_buffers = "1GB"',
            "shared_buffers = [1]",
            "iterations[1].settings.shared_buffers: expected a string, number or boolean",
        ),
        ('duration = "5s"', 'duration = "5 parsecs"', "run.duration: expected a duration"),
        ("clients = 4", "clients = 0", "run.clients: must be >= 1 (got 0)"),
        ("clients = 4", "clients = 1", "run.threads: cannot exceed clients (2 > 1)"),
        ("repeats = 2", 'repeats = "2"', "study.repeats: expected an integer"),
        (
            'version = "15"',
            'version = "fifteen"',
            # the one syntax and words of a version (--pg's: request/vocabulary.pg_version)
            "environment.version: invalid PostgreSQL version 'fifteen': use a major (18) or "
            "exact (18.6.0)",
        ),
        (
            'scenario = "pgbench"',
            'scenario = "tpcd"',
            "dataset.scenario: must be one of pgbench, tpcc, chbench, tickets, custom, sysbench, "
            "tpch (got 'tpcd')",
        ),
        ("scale = 1", "", "dataset.scale: is required for scenario pgbench"),
        ('workload = "pgbench:select-only"', 'workload = "nothere.sql"', "run.workload: file"),
        (
            'name = "a"',
            'name = "a"\nactions = ["reboot"]',
            "iterations[0].actions[0]: unknown action 'reboot'",
        ),
        ('name = "b"', 'name = "a"', "iterations[1].name: 'a' is used by an earlier iteration"),
        (
            'name = "b"',
            'name = "b"\nenvironment = "pg18"',
            "iterations[1].environment: 'pg18' is not defined",
        ),
        (
            "[study]",
            "[study]\nthreshold = 2",
            "study.threshold: must be a fraction such as 0.02 (2%), between 0 and 1 (got 2)",
        ),
        (
            "[study]",
            '[study]\norder = "random"',
            "study.order: must be one of sequential, interleaved (got 'random')",
        ),
        (
            'duration = "5s"',
            'duration = "5s"\ntransactions = 10',
            "run.transactions: cannot be combined with duration: give one of them",
        ),
        (
            'duration = "5s"',
            'duration = "5s"\nlatency_limit = 10',
            "run.latency_limit: needs rate",
        ),
        (
            'name = "b"',
            'name = "b"\nreset = ["shared_buffers"]',
            "iterations[1].reset: 'shared_buffers' is also set",
        ),
        (
            'shared_buffers = "1GB"',
            '"Bad Name!" = "1GB"',
            "iterations[1].settings.\"Bad Name!\": 'Bad Name!' is not a valid setting name",
        ),
        # the run request's rules, as study files see them
        (
            'duration = "5s"',
            'duration = "500ms"',
            "run.duration: must be at least 1 s (got 0.5 s)",
        ),
        ('duration = "5s"', 'duration = "5s"\nwarmup = -1', "run.warmup: must be >= 0 (got -1)"),
        (
            'duration = "5s"',
            "transactions = 10\nmax_tries = 0",
            "run.max_tries: 0 (unlimited retries) needs duration or latency_limit",
        ),
        (
            'duration = "5s"',
            'duration = "5s"\ntpcc_mix = "45,43,4,4,4"',
            "run.tpcc_mix: applies only to workload tpcc (got 'pgbench:select-only')",
        ),
        (
            'duration = "5s"',
            'duration = "5s"\nall_warehouses = true',
            "run.all_warehouses: applies only to workload tpcc",
        ),
        (
            'duration = "5s"',
            'duration = "5s"\ndefines = { aid = 3 }',
            "run.defines.aid: no script of workload 'pgbench:select-only' reads :aid",
        ),
        (
            'duration = "5s"',
            'duration = "5s"\nextra_pgbench_args = ["-c", "8"]',
            "run.extra_pgbench_args: must not contain '-c': pgrig sets that option",
        ),
        (
            'name = "b"',
            'name = "b"\nrun = { duration = "0.2s" }',
            "iterations[1].run.duration: must be at least 1 s (got 0.2 s)",
        ),
        (
            'name = "b"',
            'name = "b"\nrun = { workload = "tpcc", defines = { x = 1 } }',
            "iterations[1].run.defines: does not apply to workload tpcc",
        ),
        ("scale = 1", "scale = 0", "dataset.scale: must be >= 1 (got 0)"),
        (
            "scale = 1",
            'scale = 1\ndatabase = "template1"',
            "dataset.database: must not be template1: it is a template database",
        ),
        (
            "scale = 1",
            "scale = 1\noptions = { rowz = 5 }",
            "dataset.options.rowz: unknown key (did you mean 'rows'?)",
        ),
        (
            "scale = 1",
            "scale = 1\noptions = { rows = 5 }",
            "dataset.options.rows: applies only to scenario tickets (got 'pgbench')",
        ),
        (
            "scale = 1",
            "warehouses = 2",
            "dataset.warehouses: applies only to scenario tpcc or chbench (got 'pgbench')",
        ),
        (
            'scenario = "pgbench"\nscale = 1',
            'scenario = "tpcc"\nscale = 0',
            "dataset.scale: must be >= 1 (got 0)",
        ),
        (
            'scenario = "pgbench"\nscale = 1',
            'scenario = "tpcc"\nscale = 1\noptions = { partitions = 2 }',
            "dataset.options.partitions: applies only to scenario pgbench (got 'tpcc')",
        ),
    ],
)
def test_errors_name_the_key_path(needle: str, replacement: str, expected: str) -> None:
    assert needle in ITER
    assert expected in error_of(ITER.replace(needle, replacement, 1))


def test_iterations_and_sweep_are_exclusive() -> None:
    assert "exactly one of them" in error_of(ITER + "\n[sweep]\nclients = [1, 2]\n")
    assert "exactly one of them" in error_of(BASE)


def test_not_toml() -> None:
    assert error_of("[study\nname=").startswith("not valid TOML")


def test_missing_sections() -> None:
    text = ITER.replace('[environment]\nversion = "15"\n', "")
    assert error_of(text).startswith("environment: missing")
    text = ITER.replace('[run]\nworkload = "pgbench:select-only"\n', "[run]\n")
    assert error_of(text).startswith("run.workload: is required")


def test_setting_values_become_postgres_text() -> None:
    assert setting_value(True, "x") == "on"
    assert setting_value(False, "x") == "off"
    assert setting_value(1.1, "x") == "1.1"
    assert setting_value(1e300, "x") == "1e+300"
    assert setting_value(16, "x") == "16"
    with pytest.raises(StudySpecError, match="one line"):
        setting_value("a\nb", "x")


def test_latency_limit_units() -> None:
    text = ITER.replace('duration = "5s"', 'duration = "5s"\nrate = 100\nlatency_limit = 10')
    assert parse(text).run.latency_limit_ms == 10
    text = ITER.replace('duration = "5s"', 'duration = "5s"\nrate = 100\nlatency_limit = "1s"')
    assert parse(text).run.latency_limit_ms == 1000


def test_relative_scripts_resolve_from_the_study_file(tmp_path: Path) -> None:
    (tmp_path / "read.sql").write_text("SELECT 1;\n")
    f = tmp_path / "s.toml"
    f.write_text(ITER.replace('"pgbench:select-only"', '"read.sql@3"'))
    s = study_spec.load(f)
    assert s.run.workload == f"{tmp_path / 'read.sql'}@3"
    # reports re-parse archived text without the files being there
    s2 = parse(f.read_text(), base_dir=tmp_path / "gone", check_files=False)
    assert s2.run.workload.endswith("read.sql@3")


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(StudySpecError, match="does not exist"):
        study_spec.load(tmp_path / "nope.toml")


def test_several_environments() -> None:
    text = ITER.replace(
        '[environment]\nversion = "15"\n',
        '[environments.old]\nversion = "15"\n[environments.new]\nversion = "18"\nprofile = "x"\n',
    ).replace('name = "b"', 'name = "b"\nenvironment = "new"')
    s = parse(text)
    assert list(s.environments) == ["old", "new"]
    assert s.environments["new"].name == "t1-new" and s.environments["new"].profile == "x"
    assert s.environments["new"].path == "environments.new"
    assert s.iterations[1].environment == "new"
    both = text.replace("[dataset]", '[environment]\nversion = "15"\n[dataset]')
    assert "not both" in error_of(both)


def test_existing_environment_by_name() -> None:
    text = ITER.replace('version = "15"', 'name = "lab"\ncreate = false')
    env = next(iter(parse(text).environments.values()))
    assert env.name == "lab" and env.version is None and not env.create
    assert "environment.name: is required when create = false" in error_of(
        ITER.replace('version = "15"', 'version = "15"\ncreate = false')
    )


SWEEP = (
    BASE.replace('version = "15"', 'version = "15"\npooler = { pool_size = 4 }')
    + """
[sweep]
via = ["direct", "pgbouncer"]
clients = [1, 2, 4]
"""
)


def test_sweep_parse() -> None:
    s = parse(SWEEP)
    assert s.kind == "sweep" and s.sweep is not None
    assert [d.name for d in s.sweep.dimensions] == ["via", "clients"]
    assert s.sweep.x == "clients" and s.sweep.series == ("via",)
    assert s.sweep.compare is None and s.sweep.compare_axis() == "via"  # the default


def test_sweep_compare_axis() -> None:
    s = parse(SWEEP + 'workload = ["pgbench:select-only", "pgbench:tpcb-like"]\ncompare = "via"\n')
    assert s.sweep is not None and s.sweep.compare == "via" and s.sweep.compare_axis() == "via"
    # without compare: via before workload; clients (the x axis) only when nothing else is swept
    assert (
        parse(
            SWEEP.replace("via = ", 'workload = ["pgbench:select-only"]\nvia = ')
        ).sweep.compare_axis()
        == "via"
    )
    two = (
        BASE
        + '\n[sweep]\nworkload = ["pgbench:select-only", "pgbench:tpcb-like"]\nclients = [1, 2]\n'
    )
    assert parse(two).sweep.compare_axis() == "workload"
    assert parse(BASE + "\n[sweep]\nclients = [1, 2]\n").sweep.compare_axis() is None
    one = parse(BASE + '\n[sweep]\nclients = [1, 2]\ncompare = "clients"\n')
    assert one.sweep.compare_axis() == "clients"
    knobs = BASE + '\n[sweep]\nclients = [1, 2]\nsettings.work_mem = ["4MB", "64MB"]\n'
    assert parse(knobs).sweep.compare_axis() == "settings.work_mem"


def test_sweep_settings_and_versions() -> None:
    text = (
        BASE
        + """
[sweep]
clients = [2, 4]
version = [15, 18]
settings.work_mem = ["4MB", "64MB"]
"""
    )
    s = parse(text)
    names = [d.name for d in s.sweep.dimensions]
    assert names[0] == "version"  # servers switch least often
    assert "settings.work_mem" in names
    assert set(s.environments) == {"pg15", "pg18"}
    assert s.environments["pg18"].version == "18" and s.environments["pg18"].name == "t1-pg18"


@pytest.mark.parametrize(
    ("sweep", "expected"),
    [
        ("clients = []", "sweep.clients: expected a non-empty list"),
        ("clients = [1, 1]", "sweep.clients: values must be distinct"),
        ("clients = [1, 0]", "sweep.clients[1]: must be >= 1 (got 0)"),
        ("clients = [2]\nthreads = [4]", "sweep.threads: cannot exceed clients (4 > 2)"),
        (
            'via = ["direct", "carrier-pigeon"]',
            "sweep.via[1]: must be one of direct, pooler, pgbouncer (got 'carrier-pigeon')",
        ),
        ('clients = [2]\nx = "rate"', "sweep.x: 'rate' is not a swept dimension"),
        (
            'clients = [2]\nvia = ["direct"]\ncompare = "vias"',
            "sweep.compare: 'vias' is not a swept dimension (did you mean 'via'?); "
            "swept: clients, via",
        ),
        ("clients = [2]\ncompare = 3", "sweep.compare: expected a string (got 3)"),
        ('environment = ["nope"]', "sweep.environment[0]: 'nope' is not defined"),
        ("colour = [1]", "sweep.colour: unknown key"),
        (
            'settings.work_mem = [true, 3]\nversion = [15, 18]\nenvironment = ["pg15"]',
            "sweep.version: sweep over version or environment, not both",
        ),
    ],
)
def test_sweep_errors(sweep: str, expected: str) -> None:
    assert expected in error_of(BASE + "\n[sweep]\n" + sweep + "\n")


def test_threads_follow_swept_clients() -> None:
    s = parse(BASE + "\n[sweep]\nclients = [1, 8]\n")  # base threads 2 > clients 1: capped
    assert s.sweep is not None


def test_pgbouncer_needs_a_pooler() -> None:
    text = BASE + '\n[sweep]\nvia = ["direct", "pooler"]\n'
    assert error_of(text).startswith("environment.pooler: runs go through pgbouncer")
    bad = SWEEP.replace("pool_size = 4", "pool_size = 0")
    assert error_of(bad).startswith("environment.pooler.pool_size: must be >= 1 (got 0)")
    assert parse(SWEEP).sweep.dimensions[0].values == ("direct", "pgbouncer")


def test_connection_and_cpu_pinning() -> None:
    extra = 'duration = "5s"\nconnect = "socket"\nserver_cpus = "0"'
    run = parse(ITER.replace('duration = "5s"', extra)).run
    assert run.connect == "socket" and run.server_cpus == "0" and run.client_cpus is None
    assert "run.client_cpus: 'all' is not a CPU number or range" in error_of(
        ITER.replace('duration = "5s"', 'duration = "5s"\nclient_cpus = "all"')
    )
    s = parse(BASE + '\n[sweep]\nserver_cpus = ["0", "0-1"]\nclients = [2]\n')
    assert [d.name for d in s.sweep.dimensions] == ["server_cpus", "clients"]


def test_run_request_keys_in_study_files(tmp_path: Path) -> None:
    text = ITER.replace('duration = "5s"', 'duration = "5s"\nmax_tries = 0\nkeep_txlog = true')
    run = parse(text).run
    assert run.max_tries == 0 and run.keep_txlog
    tpcc = ITER.replace('"pgbench:select-only"', '"tpcc"').replace(
        'duration = "5s"',
        'duration = "5s"\ntpcc_mix = { payment = 1 }\ntpcc_stock_level = "hammerdb"',
    )
    assert parse(tpcc).run.tpcc_mix == {
        "new_order": 0,
        "payment": 1,
        "order_status": 0,
        "delivery": 0,
        "stock_level": 0,
    }
    script = tmp_path / "read.sql"
    script.write_text("\\set aid random(1, :naccounts)\nSELECT :aid;\n")
    f = tmp_path / "s.toml"
    f.write_text(
        ITER.replace('"pgbench:select-only"', '"read.sql"').replace(
            'duration = "5s"', 'duration = "5s"\ndefines = { naccounts = 100000 }'
        )
    )
    assert study_spec.load(f).run.defines == {"naccounts": "100000"}


def test_dataset_of_each_scenario() -> None:
    tpcc = parse(ITER.replace('scenario = "pgbench"\nscale = 1', 'scenario = "tpcc"\nscale = 2'))
    assert tpcc.dataset.warehouses == 2 and tpcc.dataset.jobs == 2 and tpcc.dataset.scale is None
    tickets = parse(
        ITER.replace(
            'scenario = "pgbench"\nscale = 1',
            'scenario = "tickets"\noptions = { rows = 1000, jobs = 1 }',
        )
    )
    assert (tickets.dataset.rows, tickets.dataset.jobs) == (1000, 1)
    assert parse(ITER).dataset.scale == 1 and parse(ITER).dataset.reset == "study"


def test_a_sweep_checks_every_combination_of_its_run() -> None:
    text = BASE.replace('duration = "5s"', 'duration = "5s"\nrate = 100\nlatency_limit = 5')
    assert parse(text + "\n[sweep]\nrate = [50, 100]\n").sweep is not None
    bad = BASE.replace("threads = 2", "threads = 8")
    assert error_of(bad + '\n[sweep]\nvia = ["direct"]\n').startswith(
        "run.threads: cannot exceed clients (8 > 4)"
    )


def test_workloads_resolve_before_anything_runs() -> None:
    bad = ITER.replace('"pgbench:select-only"', '"pgbench:select-everything"')
    assert error_of(bad).startswith("run.workload: unknown pgbench builtin 'select-everything'")
    swept = BASE + '\n[sweep]\nworkload = ["pgbench:select-only", "pgbench:nope"]\n'
    assert error_of(swept).startswith("sweep.workload: unknown pgbench builtin 'nope'")
    it = ITER.replace('name = "b"', 'name = "b"\nrun = { workload = "pgbench:nope" }')
    assert error_of(it).startswith("iterations[1].run.workload: unknown pgbench builtin")


@pytest.mark.parametrize(
    ("needle", "replacement", "expected"),
    [
        # the tables are declared (study/tables.py): nested tables keep the full key path
        (
            'version = "15"',
            'version = "15"\npooler = { size = 3 }',
            "environment.pooler.size: unknown key (did you mean 'pool_size'?); allowed here: "
            "kind, mode, pool_size",
        ),
        (
            'version = "15"',
            'version = "15"\npooler = { mode = "bogus" }',
            "environment.pooler.mode: must be one of session, transaction, statement (got 'bogus')",
        ),
        (
            '[environment]\nversion = "15"\n',
            '[environments.old]\nversion = "15"\n[environments.new]\nreplicas = 1\n',
            "environments.new.version: is required (or give name = an existing pgrig environment)",
        ),
        ("[study]", "[study]\ntags = { team = [1] }", "study.tags.team: expected a string"),
        (
            "[study]",
            "[study]\nmisrate = 0",
            "study.misrate: must be a probability such as 0.05, between 0 and 1 (got 0)",
        ),
        ("repeats = 2", "repeats = 101", "study.repeats: 101 is more than 100"),
        ('name = "b"', 'name = "b"\nreset = "work_mem"', "iterations[1].reset: expected a list"),
        ('name = "b"', 'name = "b"\nnote = 3', "iterations[1].note: expected a string (got 3)"),
        ("[run]", "[runs]\n[run]", "runs: unknown key (did you mean 'run'?)"),
    ],
)
def test_declared_tables_name_the_key_path(needle: str, replacement: str, expected: str) -> None:
    assert needle in ITER
    assert expected in error_of(ITER.replace(needle, replacement, 1))


def test_a_sysbench_scripts_dataset_and_workload(tmp_path: Path) -> None:
    """[dataset] script and defines: the script's own prepare with its options (as `db
    generate --script --define`); the script and the workload's script resolve relative to
    the study file."""
    (tmp_path / "lua").mkdir()
    (tmp_path / "lua" / "ledger.lua").write_text("-- a script\n")
    text = (
        ITER.replace(
            'scenario = "pgbench"\nscale = 1',
            'scenario = "sysbench"\nscript = "lua/ledger.lua"\n'
            "defines = { scale = 2, tables = 1, fast = true }\noptions = { jobs = 2 }",
        )
        .replace('"pgbench:select-only"', '"sysbench:lua/ledger.lua"')
        .replace("threads = 2", "")
    )
    f = tmp_path / "s.toml"
    f.write_text(text)
    spec = study_spec.load(f)
    assert spec.dataset.script == str(tmp_path / "lua" / "ledger.lua")
    assert spec.dataset.defines == {"scale": "2", "tables": "1", "fast": "true"}
    assert spec.dataset.jobs == 2
    assert spec.run.workload == f"sysbench:{tmp_path / 'lua' / 'ledger.lua'}"
    f.write_text(text.replace('script = "lua/ledger.lua"\n', ""))
    with pytest.raises(study_spec.StudySpecError, match=r"dataset\.defines: applies only with"):
        study_spec.load(f)
    f.write_text(text.replace('"lua/ledger.lua"\n', '"lua/nope.lua"\n', 1))
    with pytest.raises(study_spec.StudySpecError, match=r"dataset\.script: file .* does not exist"):
        study_spec.load(f)
    f.write_text(text.replace("defines = { scale = 2, tables = 1, fast = true }", "defines = 3"))
    with pytest.raises(study_spec.StudySpecError, match=r"dataset\.defines: expected a table"):
        study_spec.load(f)


def test_overlapping_cpu_sides_in_a_study_file_name_the_key(tmp_path: Path) -> None:
    from pgrig.study.spec import StudySpecError, load

    f = tmp_path / "s.toml"
    f.write_text(
        '[study]\nname = "s"\n[environment]\nversion = "15"\n'
        '[dataset]\nscenario = "pgbench"\nscale = 1\n'
        '[run]\nworkload = "pgbench:tpcb"\nduration = 5\nserver_cpus = "0-1"\nclient_cpus = "1"\n'
        "[sweep]\nclients = [1, 2]\n"
    )
    with pytest.raises(StudySpecError, match=r"run\.client_cpus: shares CPU 1 with server_cpus"):
        load(f)
