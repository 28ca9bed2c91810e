"""Fixtures shared by the API tests."""

import pytest

from scheduler.api import app as api_app


@pytest.fixture
def app(scheduler_config):
    scheduler_config.set_override("auth_strategy", "noauth", group="api")
    return api_app.make_app(scheduler_config)
