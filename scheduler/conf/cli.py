"""The command line and configuration files of every program: parsing,
``--version``, ``--help``'s epilogue, and the one-line exit of a
configuration error (status 2). Below the programs, so that a process a
service starts (the notification sender) parses as a command does."""

import functools
import importlib.metadata
import os
import sys
from collections.abc import Callable
from collections.abc import Sequence

from oslo_config import cfg
from oslo_log import log as logging

from scheduler.conf import plugins as plugin_conf

CONFIG_ERROR_EXIT = 2
DISTRIBUTION = "metrics-scheduler"

#: oslo.config, as OpenStack services, ignores a name no option reads;
#: this makes a misspelt one stop the program instead of leaving the
#: default in force behind a WARNING.
strict_opt = cfg.BoolOpt(
    "strict", default=False,
    help="Exit with status 2 when a config file holds a group or option "
    "that no program of metrics-scheduler reads (a misspelling such as "
    "weight_clases), instead of logging a WARNING and running on the "
    "default. Set on the command line (--strict) or in a config file "
    "([DEFAULT] strict = true).")


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


def unreadable_file_message(error: OSError) -> str:
    """One line for a ``--config-file`` that cannot be read."""
    if isinstance(error, IsADirectoryError):
        expected = "expected a file (use --config-dir for a directory)"
    else:
        expected = "expected a readable file"
    reason = (error.strerror or str(error)).lower()
    return (f"--config-file {error.filename}: {reason}; "
            f"{expected}")


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
    conf.register_cli_opt(strict_opt)
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
    except OSError as e:
        # oslo.config opens each file without catching this: a directory
        # (IsADirectoryError) or an unreadable file.
        config_error_exit(prog, unreadable_file_message(e))
    except SystemExit as e:
        # oslo.config exits 1 for a bad value of a command-line option
        # set in a file (debug = maybe), after printing one line.
        if e.code == 1:
            sys.exit(CONFIG_ERROR_EXIT)
        raise


def quiet_when_output_closes(main: Callable[..., int]) -> Callable[..., int]:
    """``main`` ending with status 0 and no traceback when the reader of
    its output went away (``| head -1``), as other command-line tools."""
    @functools.wraps(main)
    def run(*args, **kwargs) -> int:
        try:
            status = main(*args, **kwargs)
            # Here rather than at exit, where the error is not ours to catch.
            sys.stdout.flush()
            return status
        except BrokenPipeError:
            # Nothing left to say. Point stdout at /dev/null so that the
            # interpreter's final flush cannot fail too.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
    return run
