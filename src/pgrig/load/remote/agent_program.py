"""The command that starts the load agent (load/remote/remote_agent.py) on a host with only python3.

The agent's source, the OS sampler's (metrics/os_metrics.py) and punch_hole's (file_holes.py),
all standard library only, travel inside the command, compressed: nothing is installed on the
host, and the agent is always this pgrig's own version. The command is an argv; whoever runs it
over SSH quotes it (shlex.join), so nothing in it is ever read by a shell as code.
"""

from __future__ import annotations

import base64
import functools
import inspect
import zlib

from pgrig import file_holes
from pgrig.load.remote import remote_agent
from pgrig.metrics import os_metrics

_LOADER = """\
import sys, types
def _load(name, src):
    m = types.ModuleType(name)
    sys.modules[name] = m
    exec(compile(src, name + ".py", "exec"), m.__dict__)
    return m
_load("os_metrics", {metrics!r})
_load("file_holes", {holes!r})
sys.exit(_load("pgrig_agent", {agent!r}).main(sys.argv))
"""

DEFAULT_SILENCE_S = 15.0  # the agent stops pgbench after this long without a word from us


def silence_s() -> float:
    """How long an agent waits for a word from us before it ends pgbench
    (PGRIG_AGENT_SILENCE_S: shorter in tests that cut hosts off)."""
    import os

    try:
        return max(2.0, float(os.environ.get("PGRIG_AGENT_SILENCE_S", DEFAULT_SILENCE_S)))
    except ValueError:
        return DEFAULT_SILENCE_S


@functools.cache
def program() -> str:
    """The agent's whole program (loader, sampler, agent) as Python source."""
    return _LOADER.format(
        metrics=inspect.getsource(os_metrics),
        holes=inspect.getsource(file_holes),
        agent=inspect.getsource(remote_agent),
    )


@functools.cache
def _packed() -> str:
    return base64.b64encode(zlib.compress(program().encode(), 9)).decode("ascii")


def agent_argv(python: str = "python3", silence: float | None = None) -> list[str]:
    """The argv that runs the agent (-u: frames leave at once)."""
    silence_s_ = silence if silence is not None else silence_s()
    boot = f"import base64,zlib;exec(zlib.decompress(base64.b64decode('{_packed()}')))"
    return [python, "-u", "-c", boot, f"{silence_s_:g}"]
