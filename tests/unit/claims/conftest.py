"""Fixtures of the claims tests: the scheduler ConfigOpts and a claims
store on it."""

import pytest

from scheduler import claims


@pytest.fixture
def conf(scheduler_config):
    return scheduler_config


@pytest.fixture
def store(conf):
    return claims.Claims(conf)
