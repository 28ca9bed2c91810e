"""metrics-scheduler: a utilisation-aware VM scheduler in Nova's style.

Modules that moved when the packages were laid out by concept keep
their old names for one release, warning on use: plugins written
against them go on loading while their authors move to
``scheduler.plugins``.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: old name -> where the module lives now.
MOVED_MODULES = {
    "scheduler.host_state": "scheduler.hosts.state",
    "scheduler.host_table": "scheduler.hosts.table",
    "scheduler.request_spec": "scheduler.request.spec",
    "scheduler.api.wsgi": "scheduler.cmd.wsgi",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old name as the module it moved to (the same module
    object, so classes compare equal), with a DeprecationWarning."""

    def find_spec(self, name, path, target=None):
        if name not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        new = MOVED_MODULES[spec.name]
        warnings.warn(f"{spec.name} moved to {new} (plugins: import from "
                      "scheduler.plugins); the old name goes in the next "
                      "release", DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module) -> None:
        """Already executed under its new name."""


sys.meta_path.insert(0, _MovedModules())
