"""LoadAverageWeigher: prefer the hosts with the lowest load average."""

from oslo_config import cfg

from scheduler.plugins import BaseHostWeigher
from scheduler.plugins import HostState
from scheduler.plugins import RequestSpec
from scheduler.plugins import metrics_window
from scheduler_example_plugins import LOAD_1M
from scheduler_example_plugins import conf as plugin_conf


class LoadAverageWeigher(BaseHostWeigher):
    """Weighs ``loadavg.1m`` per vCPU, scaled by ``[example_plugins]
    load_weight_multiplier`` (negative by default: the least loaded host
    wins).

    A host without a fresh ``loadavg.1m`` is kept and ranked with
    ``[metrics] weight_of_unavailable``.
    """

    def __init__(self, conf: cfg.ConfigOpts):
        super().__init__(conf)
        plugin_conf.register_opts(conf)
        self._multiplier = conf.example_plugins.load_weight_multiplier

    def multiplier(self, spec: RequestSpec) -> float:
        return self._multiplier

    def raw_weight(self, host: HostState, spec: RequestSpec) -> float | None:
        cutoff = metrics_window(spec, self.conf).cutoff
        load = host.metric_since(LOAD_1M, cutoff)
        if load is None or host.vcpus <= 0:
            return None
        return load / host.vcpus
