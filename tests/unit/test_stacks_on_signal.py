"""`kill -USR1 PID` makes pgrig print every thread's stack and go on (cli/app.py)."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import os, signal, threading, time
from pgrig.cli import app
app._stacks_on_sigusr1()
threading.Thread(target=time.sleep, args=(5,), name="sleeper", daemon=True).start()
os.kill(os.getpid(), signal.SIGUSR1)
time.sleep(0.2)
print("went on")
"""


def test_sigusr1_prints_every_threads_stack_and_the_program_goes_on() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "went on"
    assert done.stderr.count("most recent call first") == 2  # the main thread and the sleeper
    assert "Current thread" in done.stderr and 'File "<string>", line 6 in <module>' in done.stderr
    assert "in _bootstrap" in done.stderr  # the other thread's stack too


def test_every_command_registers_it() -> None:
    import inspect

    from pgrig.cli import app

    assert "_stacks_on_sigusr1()" in inspect.getsource(app.main)
