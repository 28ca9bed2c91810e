"""The scheduler's RPC API on oslo.messaging (docs/architecture.md).

``scheduler.rpc.rpcapi.SchedulerAPI`` is the client API nodes import;
``scheduler.rpc.endpoint`` holds the endpoint the ``scheduler-service``
workers of ``scheduler.rpc.server`` serve. Importing this package selects
oslo.service's threading backend before any of them imports
oslo.messaging (docs/architecture.md).
"""

import importlib.metadata

from oslo_config import cfg

from scheduler import exception
from scheduler.conf import messaging as messaging_conf

messaging_conf.use_threading_backend()

#: Version of the RPC API; bump the minor version for compatible additions.
#: 1.1 added ``balance``.
RPC_API_VERSION = "1.1"

#: Event types of the notifications around select_destinations.
SELECT_START = "scheduler.select_destinations.start"
SELECT_END = "scheduler.select_destinations.end"
#: Event type of the notification of each migration a balancer planned.
MIGRATION_PLANNED = "scheduler.balance.migration_planned"

#: Transport schemes whose messages never leave the process (several
#: worker processes, or a notification sender process, cannot share them).
IN_PROCESS_TRANSPORTS = ("kombu+memory", "fake")

#: Modules whose exceptions a client rebuilds as the same local classes
#: instead of oslo_messaging.RemoteError.
ALLOWED_REMOTE_EXMODS = ["scheduler.exception",
                         "scheduler.request.extra_specs", __name__]


class SchedulerInternalError(exception.SchedulerError):
    """The service failed on something other than the request itself.

    Raised by the server for any unexpected exception, so that callers get
    one documented class with a readable message (host, method, request id)
    rather than a bare ValueError or KeyError from deep inside the service;
    the service logs the traceback under the same request id.
    """


def safe_transport_url(url: str) -> str:
    """``url`` with the password of every host replaced by ``***``, for
    logs and error messages."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    location, slash, path = rest.partition("/")
    hosts = []
    for host in location.split(","):
        credentials, at, address = host.rpartition("@")
        if at and ":" in credentials:
            credentials = credentials.split(":", 1)[0] + ":***"
        hosts.append(f"{credentials}{at}{address}")
    return f"{scheme}{sep}{','.join(hosts)}{slash}{path}"


def check_transport_url(conf: cfg.ConfigOpts, group: str,
                        value: str | None, required: bool = True) -> None:
    """Raise ConfigError unless ``value`` is a transport URL whose driver
    is installed. Checks the form only: the broker may well be down."""
    # Here rather than at the top: oslo.messaging must be imported after
    # use_threading_backend() (docs/architecture.md), and this module is what
    # runs it.
    import oslo_messaging

    example = ("expected a URL such as rabbit://user:password@host:5672/ "
               "(or kombu+memory://// for a single process)")
    if not value:
        if required:
            raise exception.ConfigError(group, "transport_url", value,
                                        f"it is empty; {example}")
        return
    shown = safe_transport_url(value)
    try:
        url = oslo_messaging.TransportURL.parse(conf, value)
    except (oslo_messaging.InvalidTransportURL, ValueError) as e:
        raise exception.ConfigError(group, "transport_url", shown,
                                    f"{e}; {example}") from e
    driver = url.transport.split("+", 1)[0]
    drivers = sorted(entry.name for entry in importlib.metadata.entry_points(
        group="oslo.messaging.drivers"))
    if driver not in drivers:
        raise exception.ConfigError(
            group, "transport_url", shown,
            f"no oslo.messaging driver {driver!r} (installed: "
            f"{', '.join(drivers)}); {example}")
