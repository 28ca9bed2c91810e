"""Exceptions shared by the scheduler, the agent and the CLI."""


class SchedulerError(Exception):
    """Base class of the project's own errors."""


class ConfigError(SchedulerError):
    """A configuration value is unusable; the program exits with code 2."""

    def __init__(self, group: str, option: str, value, problem: str):
        self.group = group
        self.option = option
        self.value = value
        super().__init__(
            f"invalid value {value!r} for [{group}] {option}: {problem}")


class InvalidRequest(SchedulerError):
    """The request spec is malformed; the message names the field."""


class NoValidHost(SchedulerError):
    """No host passed the filters; the message is the histogram of why."""

    #: Claims not yet reflected in metrics existed in the request's
    #: cluster: it may fit once they are (``[scheduler]
    #: pending_retry_timeout`` waits for them).
    pending: bool = False
