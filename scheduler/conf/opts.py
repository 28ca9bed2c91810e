"""Lists every scheduler option for oslo-config-generator."""

from scheduler.conf import _MODULES


def list_opts() -> list:
    groups: dict = {}
    for module in _MODULES:
        for group, opts in module.list_opts().items():
            groups.setdefault(group, []).extend(opts)
    return list(groups.items())
