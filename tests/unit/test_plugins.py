"""``scheduler.plugins`` is the one import a plugin needs, and the
modules plugins imported before the layout by concept still import, as
the same objects, warning that they moved."""

import importlib
import sys
import warnings

import pytest

import scheduler
from scheduler import plugins
from scheduler.filters import BaseHostFilter
from scheduler.hosts.state import HostState
from scheduler.request.spec import RequestSpec


def test_the_plugin_api_is_one_import():
    assert plugins.BaseHostFilter is BaseHostFilter
    assert plugins.HostState is HostState
    assert plugins.RequestSpec is RequestSpec
    assert sorted(plugins.__all__) == sorted(
        name for name in vars(plugins) if not name.startswith("_"))


@pytest.mark.parametrize("old, new", sorted(
    (old, new) for old, new in scheduler.MOVED_MODULES.items()
    if old != "scheduler.api.wsgi"))  # builds the app from a config file
def test_a_moved_module_imports_under_its_old_name_with_a_warning(old, new):
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    [warning] = [w for w in caught if w.category is DeprecationWarning]
    assert f"{old} moved to {new}" in str(warning.message)
