"""The one exception type the CLI turns into a clean one-line error."""


class PgrigError(Exception):
    """A user-facing error: the message is shown as-is, on one line, with a non-zero exit."""

    exit_code = 2


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
