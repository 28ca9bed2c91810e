"""Lists every scheduler option for oslo-config-generator."""

from scheduler.conf import _MODULES
from scheduler.conf import cli


def list_opts() -> list:
    # --strict is registered by cli.parse, as a command-line option.
    groups: dict = {"DEFAULT": [cli.strict_opt]}
    for module in _MODULES:
        for group, opts in module.list_opts().items():
            groups.setdefault(group, []).extend(opts)
    return list(groups.items())
