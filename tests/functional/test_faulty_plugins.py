"""A third-party filter and weigher that raise do not take the fleet down
(issue 18 item 7): the real ``scheduler-service`` over the local RabbitMQ,
with a plugin package built and installed as an operator would.

The package's filter raises KeyError on one host (in its column form
whenever that host is in the table, and in its per-host form on that
host), its weigher ZeroDivisionError on another. The service keeps
placing on the other hosts, counts the errors in
``scheduler_plugin_errors_total`` and logs one traceback per plugin and
exception type, however many requests hit them.
"""

import re
import textwrap
from pathlib import Path

import pytest
import sqlalchemy as sa

from scheduler import rpc
from scheduler.db import models
from scheduler.db import schema
from tests.functional.plugin_packages import install_package
from tests.functional.rpc_harness import SERVING
from tests.functional.rpc_harness import new_uuid
from tests.functional.rpc_harness import node
from tests.functional.rpc_harness import scheduler_api
from tests.functional.rpc_harness import scrape
from tests.functional.rpc_harness import wait_for_log
from tools.service_harness import BusNames
from tools.service_harness import free_port

GIB = 2**30
CALLS = 12

PYPROJECT = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "faulty-plugins"
version = "1.0.0"
requires-python = ">=3.11"

[project.entry-points."scheduler.filters"]
FaultyFilter = "faulty_plugins:FaultyFilter"

[project.entry-points."scheduler.weighers"]
FaultyWeigher = "faulty_plugins:FaultyWeigher"

[tool.setuptools]
py-modules = ["faulty_plugins"]
"""

MODULE = '''\
"""Plugins with the bugs third-party code has."""

import numpy as np

from scheduler.filters import BaseHostFilter
from scheduler.weights import BaseHostWeigher


class FaultyFilter(BaseHostFilter):
    """Reads a metric only some hosts report, without a default."""

    def applies(self, spec):
        if spec.flavor.name == "explode":
            raise RuntimeError("no such flavor family")
        return True

    def reject(self, host, spec):
        return None if host.metrics["gpu.count"] else None

    def passes(self, table, spec):
        return np.array([bool(self.reject(host, spec) is None)
                         for host in table.hosts])


class FaultyWeigher(BaseHostWeigher):
    """Free RAM per used GiB: divides by zero on an idle host."""

    def multiplier(self, spec):
        return 10.0

    def raw_weight(self, host, spec):
        return host.free_ram_mb / host.metrics["memory.used"].value
'''


@pytest.fixture(scope="module")
def faulty_env(tmp_path_factory) -> dict[str, str]:
    work = tmp_path_factory.mktemp("faulty-plugins")
    source = work / "package"
    source.mkdir()
    (source / "pyproject.toml").write_text(PYPROJECT)
    (source / "faulty_plugins.py").write_text(textwrap.dedent(MODULE))
    return install_package(source, work / "build")


def _fleet(url: str) -> None:
    """alpha lacks gpu.count (the filter raises), bravo has the most free
    RAM but no memory used (the weigher raises); charlie has more free
    RAM than delta, so it wins among the hosts left."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    schema.db_sync(engine)
    with engine.begin() as connection:
        connection.execute(models.ComputeNode.__table__.insert(), [
            node("alpha", 65536, {"memory.used": 2 * GIB}),
            node("bravo", 131072, {"gpu.count": 1, "memory.used": 0}),
            node("charlie", 32768, {"gpu.count": 1,
                                     "memory.used": 2 * GIB}),
            node("delta", 16384, {"gpu.count": 0,
                                   "memory.used": 2 * GIB}),
        ])
    engine.dispose()


def _faulty_sections(names: BusNames, broker_url: str, db_url: str,
                     metrics_port: int) -> dict:
    """A service running the faulty filter and weigher, one worker: the
    log holds each traceback once per process."""
    sections = names.sections(broker_url)
    sections["database"] = {"connection": db_url}
    sections["filter_scheduler"] = {
        "enabled_filters": "ComputeFilter,RamFilter,FaultyFilter",
        "weight_classes": "FaultyWeigher"}
    sections["scheduler"] = {"workers": 1, "metrics_port": metrics_port,
                             "metrics_host": "127.0.0.1"}
    return sections


def _check_logged_once(log: str) -> None:
    """One traceback per plugin and exception type, however many
    requests; the request that failed as a whole is one line, no
    traceback of its own."""
    assert log.count("Traceback (most recent call last)") == 3, log
    for plugin, error in (("FaultyFilter", "KeyError"),
                          ("FaultyFilter", "RuntimeError"),
                          ("FaultyWeigher", "ZeroDivisionError")):
        assert len(re.findall(rf"Plugin {plugin} raised {error} ", log)) \
            == 1, log
    assert len(re.findall(r"ERROR scheduler\.rpc\.endpoint .*plugin "
                          r"FaultyFilter failed in applies", log)) == 1


def test_the_service_places_on_the_other_hosts(
        faulty_env, broker_url, sqlite_url, write_config,
        start_console_script):
    _fleet(sqlite_url)
    port = free_port()
    names = BusNames()
    config = write_config(_faulty_sections(names, broker_url, sqlite_url,
                                           port))
    try:
        service = start_console_script("scheduler-service",
                                       config_file=config, env=faulty_env)
        wait_for_log(lambda: service.stderr, SERVING, process=service.popen)
        spec = {"flavor": {"name": "m1", "vcpus": 1, "memory_mb": 512,
                           "root_gb": 1}}
        with scheduler_api(config) as api:
            for _ in range(CALLS):
                chosen = api.select_destinations(
                    spec, [new_uuid()], return_alternates=True)[0]
                hosts = [entry["host"] for entry in chosen]
                assert hosts[0] == "charlie"
                # bravo, whose weight failed, is kept as an alternate;
                # alpha, where the filter failed, is not.
                assert sorted(hosts) == ["bravo", "charlie", "delta"]
            explained = {h["host"]: h for h in api.explain(spec)["hosts"]}
            assert explained["alpha"]["filtered_by"] == "FaultyFilter"
            assert explained["alpha"]["reason"] == \
                "FaultyFilter failed: KeyError"
            assert explained["bravo"]["weights"]["FaultyWeigher"] == {
                "raw": None, "normalized": 0.0, "multiplier": 10.0,
                "weighted": 0.0}
            # A plugin failing on the whole request fails that request
            # only, naming the plugin.
            with pytest.raises(rpc.SchedulerInternalError,
                               match="plugin FaultyFilter failed in "
                               "applies: RuntimeError"):
                api.select_destinations(
                    {"flavor": {**spec["flavor"], "name": "explode"}},
                    [new_uuid()])
            assert api.select_destinations(
                spec, [new_uuid()])[0][0]["host"] == "charlie"
        counted = scrape(port)
        # The column form and the per-host form each raise once per
        # decision (CALLS + 2 of them, explain included).
        assert counted["scheduler_plugin_errors_total",
                       (("plugin", "FaultyFilter"),)] >= CALLS + 2
        assert counted["scheduler_plugin_errors_total",
                       (("plugin", "FaultyWeigher"),)] >= CALLS + 2
        service.stop()
    finally:
        names.delete(broker_url)

    _check_logged_once(service.stderr)


def test_the_package_is_only_on_the_services_path():
    # The plugins are installed for the service under test, never into
    # the environment running the tests.
    with pytest.raises(ImportError):
        __import__("faulty_plugins")
    assert not list(Path(__file__).parent.glob("faulty_plugins*"))
