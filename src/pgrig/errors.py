"""pgrig's exception types and the two rules every caller shares about exceptions: what counts
as an interruption (`is_interruption`) and how an exception is told in one line (`first_line`).

PgrigError is the one type the CLI turns into a clean one-line error. An interruption is either
the signal itself (KeyboardInterrupt: Ctrl-C, or SIGTERM/SIGHUP raised as `Terminated`) or an
`Interrupted` that a piece of work (a run, a study, a tuning study, a series) raises once it has
put things in order after one; every `Interrupted` ends the command with 130 (or 128 + the
signal's number).
"""


class PgrigError(Exception):
    """A user-facing error: the message is shown as-is, on one line, with a non-zero exit."""

    exit_code = 2


class HostCommandFailed(PgrigError):
    """A command another host's pgrig ran for this one failed. That pgrig already said why (its
    output was streamed here), so the command here ends with its exit status, saying no more."""

    def __init__(self, host: str, argv: list[str], exit_code: int) -> None:
        super().__init__(f"host {host}: `pgrig {' '.join(argv[:2])}` ended with exit {exit_code}")
        self.exit_code = exit_code


class NotFound(PgrigError):
    """A named thing (environment, run, study, version, profile) does not exist."""


class InvalidSetting(PgrigError):
    """A configuration setting was rejected before anything was applied."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP reached pgrig: handled as Ctrl-C is (the run is archived "aborted")."""

    def __init__(self, signum: int) -> None:
        import signal

        super().__init__(signal.Signals(signum).name)
        self.signal_name = signal.Signals(signum).name


class Interrupted(Exception):
    """Work stopped by Ctrl-C or a signal, raised after it put things in order (the aborted
    run archived, the study marked "interrupted"); subclasses carry what the work got."""


def is_interruption(e: BaseException) -> bool:
    """Whether `e` stops work because the user or a signal asked (the signal itself, or an
    inner piece of work's Interrupted), as opposed to a failure."""
    return isinstance(e, KeyboardInterrupt | Interrupted)


def first_line(e: BaseException, *, named: bool = False, default: str | None = None) -> str:
    """An exception in one line: the first line of its message (drivers append SQL, hints,
    context), after its type's name when `named`; `default` (else the type's name) when the
    message is empty."""
    text = str(e).strip()
    if not text:
        return default if default is not None else type(e).__name__
    first = text.splitlines()[0]
    return f"{type(e).__name__}: {first}" if named else first
