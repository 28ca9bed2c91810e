"""Configuration of the scheduler service and tools (oslo.config).

Each module registers one group; ``register_opts`` registers them all on a
``ConfigOpts`` object so that tests can use a private one. Modules build a
new ``OptGroup`` per registration: oslo.config copies a group shallowly,
so one shared group object would leak overrides between ConfigOpts.
"""

from oslo_config import cfg

from scheduler.conf import api
from scheduler.conf import database
from scheduler.conf import default
from scheduler.conf import filter_scheduler
from scheduler.conf import messaging
from scheduler.conf import metrics
from scheduler.conf import migration
from scheduler.conf import policies
from scheduler.conf import scheduler

CONF = cfg.CONF

_MODULES = (default, database, filter_scheduler, metrics, messaging,
            scheduler, policies, migration, api)


def register_opts(conf: cfg.ConfigOpts) -> None:
    for module in _MODULES:
        module.register_opts(conf)


register_opts(CONF)
