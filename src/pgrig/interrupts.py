"""How a signal stops pgrig, and the spans it must not cut.

SIGTERM and SIGHUP stop pgrig the way Ctrl-C does: `Terminated` (a KeyboardInterrupt) is raised
in the main thread, once; a second signal during the cleanup is ignored so the cleanup finishes.
`deferred()` marks a span whose result must be kept whole, like a run's row inserted and its id
known: a signal that comes inside it is raised when the span ends. Without that, a SIGTERM
landing after the archive committed the row but before the caller held its id left the run
"running" with nobody to end it (later "lost", for a reason that was not the real one).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from pgrig.errors import Terminated

_signalled: list[int] = []  # the signal that stopped pgrig (SIGTERM, SIGHUP), if one did
_pending: list[int] = []  # a signal that came inside a deferred span, raised at its end
_depth = 0  # deferred spans open in the main thread
_standing_down: list[bool] = []  # the exit hook is registered
_swallowed: list[int] = []  # a signal whose exception Python dropped, sent again
_previous_unraisable_hook: list[Callable[[Any], object]] = []
_in_hook: list[int] = [0]  # the main thread is inside _on_unraisable (a signal there is lost)


def install() -> None:
    """SIGTERM and SIGHUP raise Terminated (once), SIGINT KeyboardInterrupt; each waits for the
    end of a deferred span. It is said at once on stderr (the cleanup may take seconds)."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_termination)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_interrupt)
    if not _standing_down:
        _standing_down.append(True)
        atexit.register(_stand_down)
        _previous_unraisable_hook.append(sys.unraisablehook)
        sys.unraisablehook = _on_unraisable


def _on_unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """A handler's exception raised where Python cannot let it propagate (a fork hook that
    subprocess runs, a __del__) is printed and dropped: the interruption would be lost (CI saw
    a Ctrl-C land in logging's fork hook, and the tuning study went on to exit 0). The signal is
    sent again a moment later, from a thread: sent from here, its handler would run here and be
    dropped again; later, it raises where the main thread is back in ordinary code (dropped
    again, it comes back again)."""
    exc = unraisable.exc_value
    if isinstance(exc, KeyboardInterrupt):
        signum = signal.Signals[exc.signal_name] if isinstance(exc, Terminated) else signal.SIGINT
        _swallowed.append(signum)
        _in_hook[0] += 1
        try:
            with contextlib.suppress(RuntimeError):  # no new thread: the interpreter is exiting
                threading.Thread(target=_send_again, args=(signum,), daemon=True).start()
        finally:
            _in_hook[0] -= 1
        return
    _previous_unraisable_hook[0](unraisable)


def _send_again(signum: int) -> None:
    """Once the hook has returned: sent while the main thread still ran the hook's own code
    (Thread.start waits for the thread in Python), the handler's exception was dropped there
    again, by Python's report of a failing hook, with nothing to send it once more."""
    waited = 0.0
    while _in_hook[0] and waited < HOOK_WAIT_S:
        time.sleep(0.001)
        waited += 0.001
    time.sleep(RESEND_AFTER_S)
    os.kill(os.getpid(), signum)


def _stand_down() -> None:
    """At exit, once the work is done: a signal now is ignored. Python's finalization puts
    the default action back for the signals it handled, so a SIGTERM landing in the last
    milliseconds killed pgrig (-15) after it had finished and said so."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        with contextlib.suppress(ValueError, OSError):  # not the main thread, a closed runtime
            signal.signal(sig, signal.SIG_IGN)


def signalled() -> int | None:
    """The signal (SIGTERM, SIGHUP) that stopped pgrig, if one did."""
    return _signalled[0] if _signalled else None


def exit_code() -> int:
    """What pgrig exits with after an interruption: 128 + the signal's number (143 for
    SIGTERM), as a shell reports it; 130 for Ctrl-C."""
    return 128 + _signalled[0] if _signalled else 130


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A span a signal does not cut: one that comes inside is raised as the span ends (also
    when the span itself failed: the interruption is what the caller must handle then). Only
    the main thread receives signals; elsewhere this does nothing."""
    global _depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _depth += 1
    try:
        yield
    except BaseException as failure:
        _depth -= 1
        if _depth == 0 and _pending:
            raise _take_pending() from failure
        raise
    _depth -= 1
    if _depth == 0 and _pending:
        raise _take_pending()


@contextlib.contextmanager
def cleaning_up() -> Iterator[None]:
    """The cleanup after an interruption (settings put back, a server restarted): a second
    signal inside it waits for its end and is then dropped, said on stderr. A second Ctrl-C
    during a tune's restore cut it between the server's stop and start: the environment was
    left stopped, without a word. kill -9 still abandons the cleanup."""
    global _depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _pending:
            _pending.clear()
            os.write(2, b"pgrig: interrupted again while cleaning up: the cleanup finished first\n")


def _take_pending() -> KeyboardInterrupt:
    signum = _pending.pop(0)
    _pending.clear()
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def _on_termination(signum: int, _frame: FrameType | None) -> None:
    if _swallowed:
        _swallowed.clear()  # the first one's exception was dropped (_on_unraisable): again
    elif _signalled:
        return  # a second signal: the cleanup of the first goes on
    else:
        _signalled.append(signum)
        name = signal.Signals(signum).name
        # os.write: safe whatever the main thread was printing when the signal came
        os.write(2, f"pgrig: {name} received: stopping, then cleaning up\n".encode())
    if _depth:
        _pending.append(signum)
        return
    raise Terminated(signum)


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    _swallowed.clear()
    if _depth:
        _pending.append(signum)
        return
    signal.default_int_handler(signum, frame)


def join(thread: threading.Thread, timeout: float | None = None) -> None:
    """thread.join(timeout), also for a thread whose start() a signal cut: start() waits for
    the new thread to say it runs, and a signal raised in that wait leaves a thread that runs
    but that join() refuses ("cannot join thread before it is started") for a moment; one
    that never started is let go after a second. Without this a SIGTERM at a sampler's start
    turned a clean abort into a traceback and a run archived "failed"."""
    deadline = time.monotonic() + NEVER_STARTED_S
    while True:
        try:
            thread.join(timeout)
            return
        except RuntimeError:
            if time.monotonic() > deadline:
                return  # it never started: nothing to wait for
            time.sleep(0.01)


NEVER_STARTED_S = 1.0
RESEND_AFTER_S = 0.005  # a dropped signal's second sending: after the hook has returned
HOOK_WAIT_S = 5.0  # how long the second sending waits for the hook to return, at most
