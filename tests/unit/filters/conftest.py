"""Fixtures of the filter tests: ``conf``, a scheduler ConfigOpts whose
[metrics] max_age is MAX_AGE (the spec filters; modules that need
another define their own), and ``frozen_now``, the clock pinned to NOW
(modules use it with ``pytestmark``)."""

import collections.abc

import pytest
from oslo_config import cfg

import scheduler.conf
from scheduler.common import clock
from tests.unit.filters.fakes import MAX_AGE
from tests.unit.filters.fakes import NOW


@pytest.fixture
def conf() -> collections.abc.Iterator[cfg.ConfigOpts]:
    conf = cfg.ConfigOpts()
    scheduler.conf.register_opts(conf)
    conf([])
    conf.set_override("max_age", MAX_AGE, group="metrics")
    yield conf
    # The module-level OptGroup objects share their option table between
    # ConfigOpts instances, so an override would outlive this test.
    for name in ("max_age", "weight_setting"):
        conf.clear_override(name, group="metrics")


@pytest.fixture
def frozen_now(monkeypatch) -> None:
    # The filters read the clock per call; pin it so that "fresh" and
    # "stale" do not depend on how fast the test runs.
    monkeypatch.setattr(clock, "utcnow", lambda: NOW)

