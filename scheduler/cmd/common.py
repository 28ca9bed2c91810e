"""Start-up shared by the console scripts: config, logging, exit codes."""

import math
import re
import signal
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence

from oslo_config import cfg
from oslo_log import log as logging

from scheduler import exception
from scheduler.cmd import unknown_options
from scheduler.common import suggest
from scheduler.conf import cli
from scheduler.conf import policies as policy_conf
from scheduler.policies.migration import policies as migration_policies


def _raw_value(conf: cfg.ConfigOpts, group: str, name: str):
    """The value as written in the config files, for error messages."""
    section = "DEFAULT" if group is None else group
    for path in reversed(conf.config_file or []):
        sections: dict = {}
        try:
            cfg.ConfigParser(path, sections).parse()
        except (OSError, cfg.ParseError):
            continue
        values = sections.get(section, {}).get(name)
        if values:
            return values[-1]
    return None


def _finite(value: object) -> bool:
    """False when ``value`` is or holds a float NaN or infinity."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(_finite(item) for item in value)
    if isinstance(value, dict):
        return all(_finite(item) for item in value.values())
    return True


#: oslo.config's message for a value outside an option's choices.
_CHOICES = re.compile(r"Valid values are \[(.*)\], but found '(.*)'$")


def _choice_hint(detail: str) -> str:
    """"Did you mean" for a misspelt choice (``weight_normalization =
    minmx``)."""
    match = _CHOICES.search(detail)
    if match is None:
        return ""
    return suggest.did_you_mean(match[2], match[1].split(", "))


def _check(namespace, group: str | None, name: str, conf: cfg.ConfigOpts):
    try:
        value = namespace[name]
    except (ValueError, cfg.ConfigFileValueError) as e:
        detail = str(e).split(" is not valid: ")[-1]
        raise exception.ConfigError(group or "DEFAULT", name,
                                    _raw_value(conf, group, name),
                                    detail + _choice_hint(detail)) from e
    # oslo.config's FloatOpt takes nan, inf and 1e999 (inf), and its
    # min/max bounds let NaN through: a weight or ratio of NaN removes
    # or ties every host, one of inf sends everything to one host.
    if not _finite(value):
        raise exception.ConfigError(
            group or "DEFAULT", name, _raw_value(conf, group, name),
            "expected a finite number (not nan or inf; 1e999 overflows "
            "to inf)")
    return value


def option_problems(conf: cfg.ConfigOpts
                    ) -> Iterator[exception.ConfigError]:
    """Read every registered option once; one ConfigError per option
    whose value oslo.config rejects (type, range, choices)."""
    for key in list(conf):
        try:
            value = _check(conf, None, key, conf)
        except exception.ConfigError as e:
            yield e
            continue
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            for name in list(value):
                try:
                    _check(value, key, name, conf)
                except exception.ConfigError as e:
                    yield e


def _names_cluster_policies(conf: cfg.ConfigOpts) -> bool:
    """Whether the config files write a [policy:NAME] group or attach a
    policy (``cluster_policies``, ``default_policy``): the built-ins are
    validated only when used, so without either there is nothing to
    load."""
    return bool(policy_conf.register_policy_groups(conf)
                or conf.scheduler.cluster_policies
                or conf.scheduler.default_policy is not None)


def validate_options(conf: cfg.ConfigOpts) -> None:
    """Read every registered option once so bad values fail at start-up,
    then the cluster and migration policies built from them.

    oslo.config converts values lazily, on first access; without this a
    typo in a rarely used option would surface hours later.
    """
    for problem in option_problems(conf):
        raise problem
    # compute-monitor shares this start-up but not the scheduler's policies.
    if "balancer" in conf and _names_cluster_policies(conf):
        # Imported only then: the policies bring the engine, the filters,
        # the weighers and the balancers (a third of a second of CPU
        # that every scheduler-manage command would pay).
        from scheduler.policies import cluster as cluster_policy
        cluster_policy.load_policies(conf)
    if "migration" in conf:
        migration_policies.load_migration_policies(conf)


def validate(prog: str, conf: cfg.ConfigOpts,
             validators: Sequence[Callable[[cfg.ConfigOpts], None]] = ()
             ) -> None:
    """Every option, the policies, then ``validators``; the first problem
    ends the program with status 2 and one line naming the option, the
    value and what was expected."""
    try:
        validate_options(conf)
        for validator in validators:
            validator(conf)
    except exception.ConfigError as e:
        cli.config_error_exit(prog, str(e))
    except (cfg.Error, ValueError) as e:
        cli.config_error_exit(prog, str(e).replace("\n", " "))


def prepare(prog: str, conf: cfg.ConfigOpts, argv: Sequence[str] | None,
            project: str,
            validators: Sequence[Callable[[cfg.ConfigOpts], None]] = (),
            description: str | None = None) -> None:
    """Parse the command line and config files, validate, set up logging.

    Any configuration problem ends the program with status 2 and a single
    line on stderr naming the option, the value and what was expected.
    """
    cli.parse(prog, conf, argv, project, description)
    validate(prog, conf, validators)
    start_logging(prog, conf, project)


def start_logging(prog: str, conf: cfg.ConfigOpts, project: str) -> None:
    """Set up logging, then report the names of the config files that
    no option reads: one WARNING each, or with ``--strict`` exit 2."""
    logging.setup(conf, project)
    unknown_options.report_unknown_options(prog, conf)


def stop_on_signals(stop: Callable[[], None],
                    log: logging.KeywordArgumentAdapter,
                    doing: str = "stopping") -> None:
    """SIGTERM and SIGINT log ``Caught SIG..., <doing>`` and call
    ``stop`` (an agent's loop then ends on its own)."""
    def on_signal(signum: int, _frame: object) -> None:
        log.info("Caught %s, %s", signal.Signals(signum).name, doing)
        stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
