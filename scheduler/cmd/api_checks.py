"""Start-up checks of ``scheduler-api``'s library options: the Keystone
auth plugin and the oslo.policy rules file.

The libraries check these lazily: keystonemiddleware looks its auth
plugin up when the application is built (a traceback, exit 1), and
oslo.policy reads policy.yaml at the first request, logs a traceback for
a rule it cannot parse and then denies everything that rule guards. Each
check here raises a ConfigError instead, which ends the program with
status 2 and one line, as for the scheduler's own options.
"""

import contextlib
import importlib.metadata
import logging
import os
from collections.abc import Iterator

from keystoneauth1 import exceptions as ksa_exceptions
from keystoneauth1 import loading
from oslo_config import cfg
from oslo_policy import policy

from scheduler import exception
from scheduler.api import rules
from scheduler.common import suggest
from scheduler.conf import api as api_conf

AUTHTOKEN_GROUP = "keystone_authtoken"
PLUGIN_NAMESPACE = "keystoneauth1.plugin"
#: Loggers whose lines say that a rule could not be parsed (ERROR) or
#: references no rule (WARNING): captured, the check words them itself.
_POLICY_LOGGERS = ("oslo_policy._parser", "oslo_policy.policy")


def auth_group(conf: cfg.ConfigOpts) -> str:
    """The group keystonemiddleware reads auth_type from: auth_section
    when set (its own rule), else [keystone_authtoken]."""
    return conf[AUTHTOKEN_GROUP].auth_section or AUTHTOKEN_GROUP


def _auth_type(conf: cfg.ConfigOpts, group: str) -> str | None:
    if group not in conf:
        conf.register_group(cfg.OptGroup(group))
    # Idempotent: keystonemiddleware registers the same options there.
    conf.register_opts(loading.get_auth_common_conf_options(), group=group)
    return conf[group].auth_type


def validate_keystone_auth(conf: cfg.ConfigOpts) -> tuple[str, str] | None:
    """With auth_strategy keystone, auth_type must name an installed
    keystoneauth1 plugin (unset: keystonemiddleware's legacy options).
    The option's group and the plugin's name, None without one."""
    if conf.api.auth_strategy != api_conf.KEYSTONE:
        return None
    group = auth_group(conf)
    name = _auth_type(conf, group)
    if not name:
        return None
    # The entry points, not get_available_plugin_names(): that imports
    # every plugin and logs those whose extra packages are missing.
    available = importlib.metadata.entry_points(group=PLUGIN_NAMESPACE).names
    if name not in available:
        raise exception.ConfigError(
            group, "auth_type", name,
            "expected the name of an installed keystoneauth1 plugin: "
            f"{', '.join(sorted(available))}"
            + suggest.did_you_mean(name, available))
    return group, name


def load_keystone_auth(conf: cfg.ConfigOpts) -> None:
    """``validate_keystone_auth``, then the plugin built from its options
    as keystonemiddleware will (no request is sent): a required option
    left out is named rather than a traceback."""
    found = validate_keystone_auth(conf)
    if found is None:
        return
    group, name = found
    try:
        loader = loading.get_plugin_loader(name)
    except Exception as e:  # a plugin's import may raise anything
        raise exception.ConfigError(
            group, "auth_type", name,
            f"the plugin failed to load: {type(e).__name__}: {e}") from None
    # The same options keystonemiddleware registers: they are known to
    # the unknown-option warnings and read (so checked) below.
    conf.register_opts(loading.get_auth_plugin_conf_options(loader),
                       group=group)
    try:
        loader.load_from_options_getter(lambda opt: conf[group][opt.dest])
    except ksa_exceptions.MissingRequiredOptions as e:
        raise exception.ConfigError(
            group, e.options[0].dest, None,
            f"required by auth_type {name}") from None
    except (ValueError, cfg.Error) as e:
        raise exception.ConfigError(group, "auth_type", name,
                                    f"the plugin's options: {e}") from None


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def _captured(level: int) -> Iterator[list[logging.LogRecord]]:
    """oslo.policy's log records of ``level`` and above, kept from the
    log: a parse failure is logged with a traceback."""
    handler = _Records()
    handler.setLevel(level)
    loggers = [logging.getLogger(name) for name in _POLICY_LOGGERS]
    saved = [logger.propagate for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.propagate = False
    try:
        yield handler.records
    finally:
        for logger, propagate in zip(loggers, saved, strict=True):
            logger.removeHandler(handler)
            logger.propagate = propagate


def _explicitly_set(conf: cfg.ConfigOpts, group: str, name: str) -> bool:
    location = conf.get_location(name, group).location
    return location not in (cfg.Locations.opt_default,
                            cfg.Locations.set_default)


def _check_policy_file_exists(conf: cfg.ConfigOpts) -> None:
    # oslo.policy ignores a missing file (the rules in code apply), which
    # is right for the default name but hides a typo in a path set on
    # purpose: the operator's overrides would silently not apply.
    path = conf.oslo_policy.policy_file
    if _explicitly_set(conf, "oslo_policy", "policy_file") and not (
            conf.find_file(path)):
        where = ("" if os.path.isabs(path) else
                 " (a relative path is looked for beside the config files)")
        raise exception.ConfigError(
            "oslo_policy", "policy_file", path,
            f"no such file{where}; remove the option to use the rules "
            "in code")


def _rule_problem(name: str, check_str: object) -> str | None:
    """Why oslo.policy cannot parse the rule, or None."""
    with _captured(logging.ERROR) as records:
        try:
            policy.Rules.from_dict({name: check_str})
        except Exception as e:  # a list or number where text was due
            return f"{type(e).__name__}: {e}"
    if records:
        return records[0].getMessage()
    return None


def _check_rules_file(path: str) -> None:
    try:
        with open(path, encoding="utf-8") as f:
            parsed = policy.parse_file_contents(f.read())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise exception.ConfigError(
            "oslo_policy", "policy_file", path,
            f"cannot be loaded: {str(e).splitlines()[0]}") from None
    if not isinstance(parsed, dict):
        raise exception.ConfigError(
            "oslo_policy", "policy_file", path,
            "expected a YAML mapping of rule names to rules")
    for name, check_str in parsed.items():
        problem = _rule_problem(name, check_str)
        if problem is not None:
            raise exception.ConfigError(
                "oslo_policy", "policy_file", path,
                f"rule {name!r}: {check_str!r} cannot be parsed "
                f"({problem}); oslo.policy would deny every request it "
                "guards")


def validate_policy_file(conf: cfg.ConfigOpts) -> None:
    """The rules file loads, each of its rules parses and references
    defined rules; ConfigError naming the file and rule otherwise."""
    _check_policy_file_exists(conf)
    path = conf.find_file(conf.oslo_policy.policy_file)
    if path:
        _check_rules_file(path)
    enforcer = policy.Enforcer(conf)
    enforcer.register_defaults(rules.list_rules())
    # [oslo_policy] policy_dirs too: the file's rules parse (above), so
    # a failure here is one of theirs.
    with _captured(logging.ERROR) as records:
        try:
            enforcer.load_rules()
        except (OSError, TypeError, ValueError) as e:
            records.append(logging.makeLogRecord({"msg": str(e)}))
    if records:
        raise exception.ConfigError(
            "oslo_policy", "policy_dirs", conf.oslo_policy.policy_dirs,
            f"cannot be loaded: {records[0].getMessage().splitlines()[0]}")
    # check_rules names the rules only in its log lines.
    with _captured(logging.WARNING) as records:
        well_defined = enforcer.check_rules()
    if not well_defined:
        bad = [name for record in records
               if isinstance(record.args, dict)
               for name in record.args.get("names", ())]
        raise exception.ConfigError(
            "oslo_policy", "policy_file", path,
            f"rule(s) {', '.join(bad) or '?'} reference an undefined rule "
            "or are part of a cycle; oslo.policy would deny every request "
            "they guard")
