"""The ``[example_plugins]`` options.

``list_opts``, the package's ``oslo.config.opts`` entry point, is how the
programs (and ``config check``) learn them before reading the
configuration, and how ``oslo-config-generator`` documents them. Each
plugin also registers them on the configuration it is constructed with,
which keeps it usable on a ``ConfigOpts`` of its caller's (tests).
"""

from oslo_config import cfg

GROUP = "example_plugins"

OPTS = [
    cfg.FloatOpt("max_load_per_vcpu", default=1.5, min=0.0,
                 help="MaxLoadFilter removes hosts whose 1-minute load "
                      "average divided by their vCPUs is above this."),
    cfg.FloatOpt("load_weight_multiplier", default=-1.0,
                 help="Multiplier of LoadAverageWeigher, which weighs the "
                      "1-minute load average per vCPU: negative prefers "
                      "idle hosts, positive busy ones."),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register the options (again is harmless: same option objects)."""
    conf.register_opts(OPTS, group=GROUP)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]
