"""Example plugins of metrics-scheduler, all about the load average.

``loadavg`` (a compute monitor) reports it, ``MaxLoadFilter`` removes
hosts loaded beyond ``[example_plugins] max_load_per_vcpu``,
``LoadAverageWeigher`` prefers the least loaded hosts and ``max_load``
(a balancer) moves instances off hosts loaded beyond HighUtilization.
"""

#: The metric the scheduler-side plugins read, as the monitor reports it.
LOAD_1M = "loadavg.1m"
