"""No child program outlives pgrig: `preexec_fn=die_with_parent` asks the kernel to SIGKILL
the child when pgrig dies, kill -9 included (PR_SET_PDEATHSIG).

Used for every program pgrig waits for (pgbench and sysbench, `pgbench -i`, sysbench prepare,
psql, initdb and the other server programs run as the server user): a killed `pgrig db
generate` must not leave a `pgbench -i` loading on, nor a killed `env create` an initdb
writing into a directory the next command removes. A server pg_ctl starts is not affected: it
is pg_ctl's child, and the setting is not inherited across fork. Python's subprocess calls
preexec_fn after it changed the user (`user=`), so the setting survives the switch to the
server user.
"""

from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

_PRCTL = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child must not import


def die_with_parent() -> None:
    """In the child, before exec: SIGKILL when pgrig dies (survives taskset's exec)."""
    _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:  # pgrig already died between fork and prctl
        os._exit(1)
