"""Start-up shared by the console scripts: config, logging, exit codes."""

import importlib.metadata
import math
import re
import sys
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence

from oslo_config import cfg
from oslo_log import log as logging

from scheduler import exception
from scheduler.common import suggest
from scheduler.conf import plugins as plugin_conf
from scheduler.policies import cluster as cluster_policy
from scheduler.policies.migration import policies as migration_policies

CONFIG_ERROR_EXIT = 2
DISTRIBUTION = "metrics-scheduler"


def version(prog: str) -> str:
    """``--version`` text: the program and the installed distribution."""
    try:
        number = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        # Run from a source tree that was never installed.
        number = "unknown"
    return f"{prog} ({DISTRIBUTION}) {number}"


def config_error_exit(prog: str, message: str) -> None:
    """Print one line naming what is wrong and exit with status 2."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    sys.exit(CONFIG_ERROR_EXIT)


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


def validate_options(conf: cfg.ConfigOpts) -> None:
    """Read every registered option once so bad values fail at start-up,
    then the cluster and migration policies built from them.

    oslo.config converts values lazily, on first access; without this a
    typo in a rarely used option would surface hours later.
    """
    for problem in option_problems(conf):
        raise problem
    # compute-monitor shares this start-up but not the scheduler's policies.
    if "balancer" in conf:
        cluster_policy.load_policies(conf)
    if "migration" in conf:
        migration_policies.load_migration_policies(conf)


def config_files_help(project: str) -> str:
    """Where oslo.config looks for the configuration without
    ``--config-file``, for ``--help``."""
    return (f"Without --config-file, the configuration is read from the "
            f"first of ~/.{project}/{project}.conf, ~/{project}.conf, "
            f"/etc/{project}/{project}.conf and /etc/{project}.conf that "
            f"exists (plus *.conf of /etc/{project}/{project}.conf.d/), "
            f"else the defaults; etc/{project}/{project}.conf.sample of the "
            "source tree lists every option with its help.")


def parse(prog: str, conf: cfg.ConfigOpts, argv: Sequence[str] | None,
          project: str, description: str | None = None) -> None:
    """Parse the command line and config files; the values themselves
    are not read yet (see ``validate``). A file that cannot be parsed
    ends the program with status 2 and one line. ``description`` heads
    ``--help``, which ends with where the configuration is read from."""
    logging.register_options(conf)
    # Before parsing: plugin options are validated like ours and are not
    # "unknown". A package whose options cannot be loaded is reported by
    # config check; its plugins, if enabled, fail to load with the reason.
    plugin_conf.register_plugin_opts(conf)
    # stdout carries command output (rows, tables, JSON); logs go apart.
    conf.set_default("use_stderr", True)
    logging.set_defaults(default_log_levels=logging.get_default_log_levels()
                         + ["alembic=WARN", "stevedore=WARN",
                            # "Loading backend: threading" at every start.
                            "oslo_service.backend=WARN"])
    try:
        conf(list(sys.argv[1:] if argv is None else argv), project=project,
             prog=prog, version=version(prog), description=description,
             epilog=config_files_help(project))
    except (cfg.Error, ValueError) as e:
        config_error_exit(prog, str(e).replace("\n", " "))
    except SystemExit as e:
        # oslo.config exits 1 for a bad value of a command-line option
        # set in a file (debug = maybe), after printing one line.
        if e.code == 1:
            sys.exit(CONFIG_ERROR_EXIT)
        raise


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
        config_error_exit(prog, str(e))
    except (cfg.Error, ValueError) as e:
        config_error_exit(prog, str(e).replace("\n", " "))


def prepare(prog: str, conf: cfg.ConfigOpts, argv: Sequence[str] | None,
            project: str,
            validators: Sequence[Callable[[cfg.ConfigOpts], None]] = (),
            description: str | None = None) -> None:
    """Parse the command line and config files, validate, set up logging.

    Any configuration problem ends the program with status 2 and a single
    line on stderr naming the option, the value and what was expected.
    """
    parse(prog, conf, argv, project, description)
    validate(prog, conf, validators)
    logging.setup(conf, project)
