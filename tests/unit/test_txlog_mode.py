"""--txlog: the mode auto chooses, the sampling rate, and the request rules."""

from __future__ import annotations

import pytest

from pgrig.errors import PgrigError
from pgrig.load.engines import txlog_mode
from pgrig.load.engines.command import build_pgbench_command
from pgrig.request import RunRequest, from_flags, load_values


def _spec(**kw: object) -> RunRequest:
    base: dict[str, object] = {"env_name": "e", "workload": "pgbench:select-only", "duration_s": 5}
    return RunRequest.model_validate({**base, **kw})


def _never() -> None:
    raise AssertionError("not asked")


def test_requested_modes_are_kept_without_looking() -> None:
    for mode in ("full", "off"):
        choice = txlog_mode.choose(_spec(txlog=mode), _never, _never)  # type: ignore[arg-type]
        assert choice.mode == mode and choice.basis == "requested"


def test_auto_is_full_below_ten_thousand_and_sampled_above() -> None:
    slow = txlog_mode.choose(_spec(), lambda: (7, 9_000.0), _never)  # type: ignore[arg-type]
    assert slow.mode == "full" and "run 7" in slow.basis
    fast = txlog_mode.choose(_spec(), lambda: (8, 60_000.0), _never)  # type: ignore[arg-type]
    assert fast.mode == "sampled" and fast.sampling_rate == 0.05  # 3,000 lines a second


def test_a_throttled_run_expects_its_rate_and_a_new_one_probes() -> None:
    throttled = txlog_mode.choose(_spec(rate=40_000), _never, _never)  # type: ignore[arg-type]
    assert throttled.mode == "sampled" and throttled.basis == "--rate 40000"
    probed = txlog_mode.choose(_spec(), lambda: None, lambda: 25_000.0)
    assert probed.mode == "sampled" and probed.basis.startswith("probe")
    failed_probe = txlog_mode.choose(_spec(), lambda: None, lambda: None)
    assert failed_probe.mode == "full"


@pytest.mark.parametrize(
    ("tps", "rate"), [(3_000, 1.0), (12_000, 0.25), (37_000, 0.081), (1e9, 0.0001)]
)
def test_sampling_rate_keeps_the_log_near_3000_lines(tps: float, rate: float) -> None:
    assert txlog_mode.sampling_rate_for(tps) == rate


def test_sampling_rate_is_on_the_command_line_only_with_a_log() -> None:
    from pgrig.workloads import specs

    spec = _spec(txlog="sampled", scripts=specs.parse_workloads(["pgbench:select-only"]))
    argv = build_pgbench_command("pgbench", spec, "/tmp/x", 6, sampling_rate=0.05,
                                 pgbench_version_major=18)  # fmt: skip
    assert "--sampling-rate=0.05" in argv and "-l" in argv
    argv = build_pgbench_command("pgbench", spec, "", 6, sampling_rate=0.05,
                                 pgbench_version_major=18)  # fmt: skip
    assert not any(a.startswith("--sampling-rate") for a in argv)


def test_txlog_is_a_load_parameter_with_rules() -> None:
    assert load_values(_spec(txlog="off"))["txlog"] == "off"
    with pytest.raises(PgrigError, match="--keep-txlog needs every transaction logged"):
        from_flags(RunRequest, env_name="e", workload="pgbench:tpcb", duration_s=5,
                   keep_txlog=True, txlog="sampled")  # fmt: skip
    with pytest.raises(PgrigError, match="--txlog off is not available with --workload tpcc"):
        from_flags(RunRequest, env_name="e", workload="tpcc", duration_s=5, txlog="off")
    with pytest.raises(PgrigError, match="--txlog must be one of auto, full, sampled, off"):
        from_flags(RunRequest, env_name="e", workload="pgbench:tpcb", duration_s=5, txlog="x")
