"""A run whose load comes from several hosts (`pgrig run ENV --load-from A --load-from B`).

The same scaffold as load/core/measure_here.py (load/core/run_scaffold.py: server log,
insights, samplers, waits, pinning, lease, harness meter, results, the last write), with pgbench
on the load hosts through their agents (load/remote/multi_load.py) instead of one local
process, and the logs of every host merged into one stream (analysis/txlog_merge.py). Load
split: load/remote/split.py.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from pgrig.analysis import quantile_bounds
from pgrig.analysis.txlog import TxlogStream
from pgrig.analysis.window import WindowPlan
from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError
from pgrig.load.core import harness_meter, left_backends, run_steps
from pgrig.load.core.live import LiveView
from pgrig.load.core.run_context import RunContext
from pgrig.load.core.run_scaffold import RunScaffold
from pgrig.load.core.run_steps import StopIf
from pgrig.load.engines import command as pgbench_command
from pgrig.load.engines import results, sysbench_output
from pgrig.load.engines.driver import LoadDriver
from pgrig.load.engines.pgbench_driver import HDR_RESOLUTION
from pgrig.load.engines.sysbench_driver import SysbenchDriver
from pgrig.load.remote import load_hosts
from pgrig.load.remote.multi_load import (
    SATURATED_PCT,
    SKEW_WARNING_MS,
    HostLoad,
    MultiHostLoad,
    open_transports,
    saturated_hosts,
)
from pgrig.load.remote.split import HostShare, split_load
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import HarnessLoadHost, LoadDoc
from pgrig.record.run import RunSeries
from pgrig.request import RunRequest
from pgrig.workloads import sysbench_lua

LUA_DIR = "lua"  # a sysbench script's directory in the agent's: LUA_PATH's first entry
DEADLINE_GRACE_S = 120.0  # an agent ends pgbench this long after -T whatever happens
UNTIMED_DEADLINE_S = 24 * 3600.0  # -t runs: a day


def check(spec: RunRequest) -> None:
    """What --load-from cannot take, refused before anything starts."""
    if not spec.load_from:
        return
    if spec.is_tpch:  # the dispatch would hand it to the hosts' pgbench, recorded as TPC-H
        raise PgrigError(
            f"--load-from: {spec.workload} runs its query streams from this machine (the "
            "stream process is pgrig's): not with --load-from"
        )
    split_load(spec.load_from, spec.clients, spec.threads, spec.rate)
    if spec.client_cpus:
        raise PgrigError("--client-cpus pins pgbench on this machine: not with --load-from")
    if spec.duration_s is None and spec.warmup_s > 0:
        raise PgrigError(
            "--warmup with --transactions runs a separate warm-up: not with --load-from "
            "(give --duration)"
        )
    if spec.keep_txlog:
        raise PgrigError("--keep-txlog keeps a local log: not with --load-from yet")
    if spec.txlog in ("sampled", "off"):
        raise PgrigError(
            f"--txlog {spec.txlog}: --load-from merges every load host's log of every "
            "transaction (the merged TPS and percentiles come from it): give --txlog full or auto"
        )


def check_targets(spec: RunRequest, env: Environment, dbname: str) -> None:
    """Every load host is known and reaches where pgbench connects: refused before the run is
    archived (a run row that failed on its own flags would say nothing measured)."""
    if not spec.load_from:
        return
    from pgrig.hosts import registry

    pghost = run_steps.client_env(env, spec, dbname).get("PGHOST")
    for share in split_load(spec.load_from, spec.clients, spec.threads, spec.rate):
        if not load_hosts.is_local(share.host):
            registry.get(share.host)  # NotFound names the hosts there are
        load_hosts.check_reachable_target(share.host, pghost)


def measure(ctx: RunContext, pgbench: str, driver: LoadDriver | None = None) -> RunRecord:
    """`pgbench` on the load hosts (--load-from), their logs merged, inside the run's scaffold
    (load/core/run_scaffold.py: every sampler around it, as a local run has); with `driver`
    (the run's sysbench driver: its options from the dataset, its warnings), the hosts'
    sysbench, their outputs merged."""
    rec = ctx.rec
    plan = WindowPlan.for_run(ctx.spec.warmup_s, ctx.spec.duration_s)
    total_s = plan.pgbench_seconds
    shares = split_load(ctx.spec.load_from, ctx.spec.clients, ctx.spec.threads, ctx.spec.rate)
    sysbench_run = isinstance(driver, SysbenchDriver)
    program = "sysbench" if sysbench_run else "pgbench"
    client_env = {
        **run_steps.client_env(ctx.env, ctx.spec, ctx.dbname),
        # the client's sessions, by name: those left on the server are ended at the end
        "PGAPPNAME": left_backends.session_name(program),
    }
    passfile = _remote_passfile(ctx.env)
    if isinstance(driver, SysbenchDriver):
        loads = [_host_sysbench(share, driver, client_env, passfile) for share in shares]
    else:
        loads = [
            _host_load(share, ctx.spec, pgbench, client_env, total_s, passfile) for share in shares
        ]
    rec.command = "\n".join(
        f"{x.host}: {pgbench_command.shell_quote(x.argv)}" for x in loads
    )  # fmt: skip
    rec.extra["load"] = {"split": [s.as_dict() for s in shares], "rule": "load/remote/split.py"}

    load = MultiHostLoad([])  # filled below: a transport that fails still leaves a close()
    stopped: str | None = None
    stream = None if sysbench_run else TxlogStream(
        origin_us=0,  # set by launch()
        plan=plan,
        has_lag=ctx.spec.rate is not None,
        has_retries=ctx.spec.max_tries != 1,
        script_names=[s.name for s in ctx.spec.scripts],
        expected_sources=sum(s.threads for s in shares),
    )  # fmt: skip
    with RunScaffold(ctx, [s.host for s in shares]) as run:
        run.callback(lambda: load.close())  # after the harness meter's end (its pids)
        try:
            load = MultiHostLoad(
                open_transports([s.host for s in shares], load_hosts.transport), program=program
            )
            load.connect()
            host = client_env.get("PGHOST", "127.0.0.1")
            rec.extra["network"] = {
                "paths": load.network(host, int(client_env.get("PGPORT", "5432")))
            }
            run.load_span(
                lambda: _local_pgbench(load), dict
            )  # the load's series: merged at the end
            view = LiveView(ctx.console, total_s, plan.lead_in_s, ctx.env.name)
            deadline = (total_s + DEADLINE_GRACE_S) if total_s is not None else UNTIMED_DEADLINE_S
            origin_us = load.launch(loads, stream, deadline)
            rec.extra["pgbench_launched_at"] = origin_us / 1e6
            if driver is not None:
                driver.start(origin_us, run.art_dir)
            stopped = _follow(load, stream, view if ctx.live else None, run, ctx.stop_if)
        except KeyboardInterrupt as stop:
            run.interrupt(stop)
            load.interrupt()
        except PgrigError as e:  # a host that cannot be reached or started: the run failed
            rec.extra["load_error"] = str(e)

    files = run.after_load(client_env["PGAPPNAME"], program)
    rc = load.return_code() if "load_error" not in rec.extra else -1
    facts = load.facts()
    rec.extra["load"].update(facts)
    stdout, stderr = _agent_output(load)
    files.write(f"{load.program}.stdout", stdout)
    files.write(f"{load.program}.stderr", stderr)

    completed = rc == 0 and not run.interrupted and not stopped
    series_raw = run.series_raw
    series_raw.update(load.os_series())
    if isinstance(driver, SysbenchDriver):
        _fill_sysbench(rec, driver, load, series_raw)
    elif stream is not None:
        _fill_results(rec, ctx.spec, completed, stream, load, stderr, series_raw)
    _warnings(rec, facts, series_raw, [s.host for s in shares])
    _set_status(rec, rc, run.interrupted, stopped, load)
    harness_meter.add_load_hosts(rec, _agents_cpu(load))
    return run.conclude(completed, program)


def _follow(
    load: MultiHostLoad,
    stream: TxlogStream | None,
    view: LiveView | None,
    run: RunScaffold,
    stop_if: StopIf | None,
) -> str | None:
    """Watch the hosts' pgbench until they end (shown live when `view`); what stop_if
    answered when it stopped the run early, else None."""
    with view if view is not None else contextlib.nullcontext():
        while load.running_after(1.0):
            _track_local(load, run)
            p95 = stream.live()[1] if stream is not None else None
            if view is not None:
                view.update(tps=load.live_tps(), p95_ms=p95)
            stopped = stop_if(p95) if stop_if is not None else None
            if stopped:
                load.interrupt()
                return stopped
    return None


def _agent_output(load: MultiHostLoad) -> tuple[str, str]:
    """pgbench's stdout of every host (a header line each) and its stderr (lines prefixed
    with the host)."""
    stdout = "\n".join(
        f"--- {name}\n{a.state.stdout}" for name, a in load.agents.items() if a.state.stdout
    )
    stderr = "\n".join(
        f"{name}: {line}" for name, a in load.agents.items() for line in a.state.stderr_lines
    )
    return stdout, stderr


def _fill_results(
    rec: RunRecord,
    spec: RunRequest,
    completed: bool,
    stream: TxlogStream,
    load: MultiHostLoad,
    stderr: str,
    series_raw: RunSeries,
) -> None:
    """The run's figures from the merged logs; what stopped them is results_error."""
    rec.extra["txlog"] = {"lines": stream.lines, "late_lines": stream.late_lines}
    if load.feed_error:
        rec.extra["results_error"] = load.feed_error
    try:
        txlog = stream.finish(completed) if not load.feed_error else None
        # pgbench's own summary is per host: the merged figures come from the logs only
        results.fill_results(rec, spec, completed, txlog, "", stderr, [], series_raw)
        if txlog is not None:
            hosts = len(load.agents)
            rec.extra["latency_basis"] = quantile_bounds.basis(
                f"pgbench per-transaction logs of {hosts} load host{'s' if hosts != 1 else ''}, "
                "merged (every transaction)",
                samples=int(txlog.histogram.sum()),
                population=txlog.transactions,
                bounds=quantile_bounds.hdr_bounds(txlog.histogram),
                resolution=HDR_RESOLUTION,
            )
    except Exception as e:
        rec.extra["results_error"] = f"{type(e).__name__}: {e}"


def _fill_sysbench(
    rec: RunRecord,
    driver: SysbenchDriver,
    load: MultiHostLoad,
    series_raw: RunSeries,
) -> None:
    """The run's figures from every host's sysbench output, merged
    (load/engines/sysbench_output.merge); each host's own transactions (lead-in included, as
    for pgbench) in its row of the hosts table."""
    parts = {name: sysbench_output.parse(a.state.stdout) for name, a in load.agents.items()}
    hosts = rec.extra["load"].get("hosts") or {}
    for name, out in parts.items():
        counts = [b.transactions for b in (out.checkpoint, out.final) if b is not None]
        if name in hosts and counts:
            hosts[name]["generator"] = {"transactions": sum(c or 0 for c in counts)}
    started = min(load.threads_started.values()) if load.threads_started else None
    try:
        driver.fill_output(rec, sysbench_output.merge(parts), series_raw, started)
    except Exception as e:  # a broken output must not lose the run: keep what we have
        rec.extra["results_error"] = f"{type(e).__name__}: {e}"
    disagreement = driver.cross_check(rec, "", "")
    if disagreement:
        rec.add_warning("engine_disagrees", disagreement)


def _set_status(
    rec: RunRecord, rc: int, interrupted: str, stopped: str | None, load: MultiHostLoad
) -> None:
    """aborted (interrupted, or stopped early), failed (a host's pgbench, the db host cut off
    named first by the scaffold; or nothing measured) or ok."""
    if interrupted:
        rec.status, rec.error = "aborted", interrupted
    elif stopped:
        rec.status, rec.error = "aborted", f"stopped early: {stopped}"
    elif rc != 0:
        rec.status = "failed"
        why = rec.extra.get("load_error") or load.failure() or f"pgbench exited with code {rc}"
        rec.error = str(why)[:2000]
    elif (nothing := run_steps.measured_nothing(rec)) is not None:
        rec.status, rec.error = "failed", nothing
    else:
        rec.status = "ok"


def _local_pgbench(load: MultiHostLoad) -> list[int]:
    """This machine's pgbench (a local agent's): the benchmark, not pgrig's harness."""
    agent = load.agents.get(load_hosts.LOCAL)
    return [agent.state.pid] if agent is not None and agent.state.pid is not None else []


def _agents_cpu(load: MultiHostLoad) -> dict[str, HarnessLoadHost]:
    """Each other host's agent's own CPU over the load (a local agent is in this machine's
    figure already)."""
    return {
        name: {"cpu_s": agent.state.cpu_s, "cpus": agent.state.ncpu}
        for name, agent in load.agents.items()
        if name != load_hosts.LOCAL
    }


def _track_local(load: MultiHostLoad, run: RunScaffold) -> None:
    """This machine's own sampler counts a local agent and its pgbench as the benchmark's
    client, not as a neighbour (metrics/cpu_share.py)."""
    agent = load.agents.get(load_hosts.LOCAL)
    if agent is None or agent.state.pid is None or load.tracked_local:
        return
    load.tracked_local = True
    run.track_client("pgbench", agent.state.pid)
    transport_pid = getattr(getattr(agent.transport, "proc", None), "pid", None)
    if transport_pid is not None:
        run.track_client("agent", transport_pid)


def _host_load(
    share: HostShare,
    spec: RunRequest,
    pgbench: str,
    client_env: dict[str, str],
    total_s: int | None,
    server_passfile: str | None = None,
) -> HostLoad:
    """One host's pgbench: its share of clients, threads and rate; script files sent along."""
    files: dict[str, str] = {}
    scripts = []
    for i, s in enumerate(spec.scripts):
        if s.path is not None:
            name = f"s{i}-{Path(s.path).name}"
            files[name] = Path(s.path).read_text()
            s = s.model_copy(update={"path": f"@WORK@/{name}"})
        scripts.append(s)
    host_spec = spec.model_copy(
        update={
            "clients": share.clients,
            "threads": share.threads,
            "rate": share.rate,
            "scripts": scripts,
        }
    )
    argv = pgbench_command.build_pgbench_command(
        load_hosts.pgbench_path(share.host, pgbench),
        host_spec,
        log_prefix="@WORK@/txlog",
        total_seconds=total_s,
        progress=True,
        pgbench_version_major=pgbench_command.pgbench_major(pgbench),
        target_host=client_env.get("PGHOST"),
    )
    env = dict(client_env)
    passfile = server_passfile
    if "PGPASSFILE" in env:  # the pooler's: its text goes over the session, into a 0600 file
        passfile = Path(env.pop("PGPASSFILE")).read_text()
    return HostLoad(
        host=share.host,
        argv=argv,
        env=env,
        files=files,
        passfile=passfile,
        clients=share.clients,
        threads=share.threads,
        rate=share.rate,
    )


def _host_sysbench(
    share: HostShare,
    driver: SysbenchDriver,
    client_env: dict[str, str],
    server_passfile: str | None,
) -> HostLoad:
    """One host's sysbench: the script and the Lua files beside it (its modules) shipped into
    the agent's directory, put first on the Lua path there; that host's own sysbench (found on
    its PATH); its share of the clients and the rate; the options of this machine's probe."""
    shipped = sysbench_lua.shipped_files(driver.script)
    files = {f"{LUA_DIR}/{p.name}": p.read_text() for p in shipped}
    script = Path("@WORK@") / LUA_DIR / shipped[0].name
    env = {**client_env, "LUA_PATH": sysbench_lua.lua_path(script)}
    passfile = server_passfile
    if "PGPASSFILE" in env:  # the pooler's: its text goes over the session, into a 0600 file
        passfile = Path(env.pop("PGPASSFILE")).read_text()
    binary = driver.sysbench if load_hosts.is_local(share.host) else "sysbench"
    return HostLoad(
        host=share.host,
        argv=driver.command_for(binary, str(script), share.clients, share.rate),
        env=env,
        files=files,
        passfile=passfile,
        clients=share.clients,
        threads=share.threads,
        rate=share.rate,
        stdout_lines=True,
    )


def _remote_passfile(env: Environment) -> str | None:
    """The password file of an environment on another host (`env create --on`): its text goes
    to each agent over its session, into a 0600 file that the agent removes."""
    path = getattr(env, "passfile", None)
    if env.kind != "remote" or path is None or not Path(path).exists():
        return None
    return Path(path).read_text()


def _warnings(rec: RunRecord, facts: LoadDoc, series_raw: RunSeries, hosts: list[str]) -> None:
    skew = facts.get("start_skew_ms")
    if skew is not None and skew > SKEW_WARNING_MS:
        rec.add_warning(
            "start_skew",
            f"the load hosts started {skew:.0f} ms apart (more than {SKEW_WARNING_MS:.0f} ms): "
            "the first seconds were not driven by every host",
        )
    window = rec.extra.get("window") or {}
    if window.get("start_us") and window.get("end_us"):
        busy = saturated_hosts(series_raw, hosts, window["start_us"] / 1e6, window["end_us"] / 1e6)
        if busy:
            rec.extra["load"]["saturated"] = busy
            which = ", ".join(f"{host} ({pct:.0f}% busy)" for host, pct in busy.items())
            rec.add_warning(
                "load_host_saturated",
                f"load host{'s' if len(busy) > 1 else ''} {which} during the measured window, "
                f"above {SATURATED_PCT:.0f}%: it measured the client, not the server",
            )
