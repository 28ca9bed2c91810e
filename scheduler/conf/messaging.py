"""Message bus options: the scheduler's topic and oslo.messaging's own.

``register_opts`` (run for every ``ConfigOpts`` through ``_MODULES``) only
registers this project's options, so that tools which never touch the bus
(``scheduler-manage``, the agent) do not pay for importing oslo.messaging.
Code that creates a transport calls ``register_messaging_opts`` first: it
registers oslo.messaging's options on the given ``ConfigOpts``, including
the ``oslo_messaging_tracing`` / ``oslo_messaging_metrics`` groups which
oslo.messaging registers only on the global ``cfg.CONF``.
"""

import warnings

from oslo_config import cfg
from oslo_service import backend as service_backend

#: A local RabbitMQ unless the operator says otherwise.
DEFAULT_TRANSPORT_URL = "rabbit://guest:guest@127.0.0.1:5672/"
DEFAULT_CONTROL_EXCHANGE = "scheduler"
NOTIFICATION_RETRY = 3

messaging_opts = [
    cfg.StrOpt(
        "scheduler_topic",
        default="scheduler",
        advanced=True,
        help="Topic the scheduler services consume and API nodes send "
        "scheduling requests to. RabbitMQ queue names are shared by all "
        "exchanges of a virtual host, so change it only to run independent "
        "scheduler deployments on one virtual host (for example tests, or "
        "next to a Nova scheduler that also consumes 'scheduler'); every "
        "scheduler and API node of a deployment must use the same value.",
    ),
]


def use_threading_backend() -> None:
    """Select oslo.service's threading backend before oslo.messaging loads.

    ``oslo_messaging.server`` imports ``oslo_service.service``, which picks
    a backend at import time and defaults to eventlet. Does nothing when a
    program embedding our client has already chosen a backend.
    """
    # futurist imports eventlet opportunistically when it is installed;
    # eventlet then warns on stderr of every service start although the
    # threading backend never uses it.
    warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
    if service_backend.get_backend_type() is None:
        service_backend.init_backend(service_backend.BackendType.THREADING)


def _register_missing(conf: cfg.ConfigOpts, group: str | None,
                      opts: list) -> None:
    # oslo.messaging registers its options lazily and repeatedly on the
    # same ConfigOpts; registering only the missing ones avoids a
    # DuplicateOptError when a library changed an option's default (e.g.
    # set_transport_defaults) between its registration and ours.
    try:
        namespace = conf if group is None else conf[group]
        known = set(namespace)
    except (cfg.NoSuchOptError, KeyError):
        known = set()
    missing = [opt for opt in opts if opt.dest not in known]
    if missing:
        conf.register_opts(missing, group=group)


def register_messaging_opts(conf: cfg.ConfigOpts) -> None:
    """Register every oslo.messaging option on ``conf``; idempotent.

    Also sets this project's defaults for ``transport_url``,
    ``control_exchange`` and ``[oslo_messaging_notifications] retry`` on
    ``conf`` (not on the shared option objects), so a private
    ``ConfigOpts`` in tests gets the same defaults as the service.
    ``[oslo_messaging_notifications] driver`` keeps oslo.messaging's
    default, no driver: notifications nobody consumes pile up in the
    broker (two per decision) until it runs out of memory, so sending
    them is the operator's decision.
    """
    use_threading_backend()
    # Imported here: see the module docstring.
    from oslo_messaging import opts as messaging_lib_opts
    from oslo_messaging._metrics import client as metrics_client
    from oslo_messaging._tracing import client as tracing_client

    register_opts(conf)
    for group, opts in messaging_lib_opts.list_opts():
        _register_missing(conf, group, opts)
    # Not part of oslo.messaging's list_opts(): registered by those
    # modules on cfg.CONF only, yet read through whatever ConfigOpts the
    # transport was built from.
    _register_missing(conf, "oslo_messaging_tracing",
                      tracing_client.oslo_messaging_tracing)
    _register_missing(conf, "oslo_messaging_metrics",
                      metrics_client.oslo_messaging_metrics)
    conf.set_default("transport_url", DEFAULT_TRANSPORT_URL)
    conf.set_default("control_exchange", DEFAULT_CONTROL_EXCHANGE)
    # oslo.messaging retries a notification forever by default, which
    # would hold the scheduling request that sends it for as long as a
    # separate notification broker is down; a lost notification is the
    # smaller harm.
    conf.set_default("retry", NOTIFICATION_RETRY,
                     group="oslo_messaging_notifications")


def set_sample_defaults() -> None:
    """``oslo.config.opts.defaults`` hook: the generated sample config
    shows this project's defaults, not oslo.messaging's."""
    use_threading_backend()
    from oslo_messaging import opts as messaging_lib_opts

    ours = {
        None: {"transport_url": DEFAULT_TRANSPORT_URL,
               "control_exchange": DEFAULT_CONTROL_EXCHANGE},
        "oslo_messaging_notifications": {"retry": NOTIFICATION_RETRY},
    }
    # list_opts() hands out deep copies; the generator copies the library's
    # own option objects after this hook runs, so those are what to change.
    for group, opts in messaging_lib_opts._opts:
        defaults = ours.get(group)
        if defaults:
            cfg.set_defaults(opts, **{name: value for name, value in
                                      defaults.items()
                                      if any(o.dest == name for o in opts)})


def register_opts(conf: cfg.ConfigOpts) -> None:
    _register_missing(conf, None, messaging_opts)


def list_opts() -> dict:
    # oslo.messaging's own options come from its "oslo.messaging"
    # namespace in etc/oslo-config-generator/scheduler.conf.
    return {"DEFAULT": messaging_opts}
