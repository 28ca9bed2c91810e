"""Helpers shared by the compute monitor tests: an agent and its metric
entries."""

from compute_monitor import agent as agent_mod
from compute_monitor import base

TS = "2026-11-21T10:00:00.000000Z"


class FakeMonitor(base.ResourceMonitorPluginBase):
    """Returns (or raises) whatever the test hands it."""

    def __init__(self, conf, result=None, error=None, block=None):
        super().__init__(conf)
        self.result = result if result is not None else []
        self.error = error
        self.block = block

    def get_metric_names(self):
        return {e["name"] for e in self.result if isinstance(e, dict)
                and "name" in e}

    def get_metrics(self):
        if self.block is not None:
            self.block.wait()
        if self.error:
            raise self.error
        return self.result


def metric(name, value, source="fake"):
    return {"name": name, "value": value, "timestamp": TS, "source": source}


def make_agent(conf, **monitors):
    return agent_mod.MonitorAgent(conf, [
        (name, FakeMonitor(conf, **kwargs))
        for name, kwargs in monitors.items()])

