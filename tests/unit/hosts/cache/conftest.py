"""Fixtures of the host cache's tests: a private ConfigOpts on a fresh
SQLite database with the schema, its engine, a clock moved by hand and a
HostManager reading through both."""

import orjson
import pytest
from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler.conf import filter_scheduler
from scheduler.db import api as db_api
from scheduler.db import schema
from scheduler.hosts.cache import report_columns
from scheduler.hosts.cache.manager import HostManager


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def clear_overrides(conf: cfg.ConfigOpts) -> None:
    # Private ConfigOpts objects share the module-level OptGroup, overrides
    # included (oslo.config copies the group shallowly): a test's
    # set_override would leak into the next test's conf.
    for opt in filter_scheduler.filter_scheduler_opts:
        conf.clear_override(opt.name, group="filter_scheduler")


@pytest.fixture
def conf(tmp_path):
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    conf([], project="scheduler")
    clear_overrides(conf)
    conf.set_override("connection", f"sqlite:///{tmp_path}/hm.sqlite",
                      group="database")
    conf.set_override("state_path", str(tmp_path))
    schema.db_sync(db_api.get_engine(conf))
    yield conf
    clear_overrides(conf)
    conf.clear_override("connection", group="database")
    db_api.dispose_engines()


@pytest.fixture
def engine(conf):
    return db_api.get_engine(conf)


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def manager(conf, clock):
    return HostManager(conf, clock=clock)


@pytest.fixture
def count_json(monkeypatch):
    """Counts the JSON documents parsed while the test runs (by orjson,
    or by msgspec for well-formed metrics)."""
    calls = []

    def counting(real):
        def parse(text, *args, **kwargs):
            calls.append(text)
            return real(text, *args, **kwargs)
        return parse

    monkeypatch.setattr(orjson, "loads", counting(orjson.loads))
    monkeypatch.setattr(report_columns, "read_entries",
                        counting(report_columns.read_entries))
    return calls
