"""MaxLoadFilter: remove hosts whose load average per vCPU is too high."""

import numpy as np
from oslo_config import cfg

from scheduler.plugins import BaseHostFilter
from scheduler.plugins import HostState
from scheduler.plugins import HostTable
from scheduler.plugins import Rejection
from scheduler.plugins import RequestSpec
from scheduler.plugins import fresh_metric
from scheduler.plugins import metrics_window
from scheduler_example_plugins import LOAD_1M
from scheduler_example_plugins import conf as plugin_conf


class MaxLoadFilter(BaseHostFilter):
    """Rejects hosts whose ``loadavg.1m`` divided by their vCPUs is above
    ``[example_plugins] max_load_per_vcpu``.

    A host without a fresh ``loadavg.1m`` (``[metrics] max_age``) passes:
    the filter removes only hosts known to be overloaded, so that nodes
    not running the ``loadavg`` monitor yet can still be scheduled on.
    """

    def __init__(self, conf: cfg.ConfigOpts):
        super().__init__(conf)
        plugin_conf.register_opts(conf)
        # Read here, when the scheduler loads its plugins at start-up, so
        # that a bad value stops start-up instead of failing requests.
        self.limit = conf.example_plugins.max_load_per_vcpu

    def passes(self, table: HostTable, spec: RequestSpec) -> np.ndarray:
        cutoff = metrics_window(spec, self.conf).cutoff
        load = fresh_metric(table, LOAD_1M, cutoff)
        # NaN (no fresh report) compares False: such hosts pass.
        return ~(load > self.limit * table.attribute("vcpus"))

    def why_rejected(self, host: HostState,
                     spec: RequestSpec) -> Rejection:
        # Asked only for the hosts passes() removed, when someone wants
        # to know why. The reason is the same for every host (the
        # NoValidHost histogram counts hosts by reason); the detail is
        # this host's.
        cutoff = metrics_window(spec, self.conf).cutoff
        load = host.metric_since(LOAD_1M, cutoff)
        return Rejection(f"{LOAD_1M} per vCPU above {self.limit:g}",
                         f"{LOAD_1M} {load:.2f} on {host.vcpus} vCPUs")
