"""``scheduler-service``: serves the scheduler's RPC API
(docs/architecture.md).

One worker process per CPU by default, as Nova's scheduler; ``[scheduler]
workers`` sets the number. Several workers run under oslo.service's
process launcher (threading backend, no eventlet), all consuming the same
queue. The database is the only state the workers share: each one opens
its own connections after the fork.

Exit status: 0 after SIGTERM or SIGINT, 2 for a configuration error (one
line on stderr naming the option and value), 1 when the service could not
start for another reason.

oslo.messaging and oslo.service are only used through ``scheduler.rpc``,
which must select oslo.service's threading backend before they are
imported (docs/architecture.md).
"""

import os
import signal
import sys
import threading
from collections.abc import Sequence

from oslo_config import cfg
from oslo_log import log as logging

from scheduler import conf as scheduler_conf
from scheduler import exception
from scheduler import manager as manager_mod
from scheduler import rpc
from scheduler.cmd import common
from scheduler.cmd import weight_setting_check
from scheduler.common import observability
from scheduler.conf import cli
from scheduler.conf import messaging as messaging_conf
from scheduler.db import api as db_api
from scheduler.rpc import server

CONF = scheduler_conf.CONF
PROG = "scheduler-service"
DESCRIPTION = (
    "Serve the scheduler's RPC API (select_destinations, explain, release, "
    "balance) on the message bus: for each request, filter and weigh the "
    "compute nodes the monitors keep in the database and claim the chosen "
    "host's resources; balance clusters periodically. Main options: "
    "[DEFAULT] transport_url, [database] connection, [scheduler] workers, "
    "[filter_scheduler] enabled_filters and weight_classes, [metrics] "
    "weight_setting. Check a configuration with 'scheduler-manage "
    "--config-file FILE config check'. Stops on SIGTERM or SIGINT (exit "
    "0); a configuration error exits 2.")
LOG = logging.getLogger(__name__)

# kombu transports that lose messages between processes under
# oslo.messaging (docs/operator-guide.md).
_LOSSY_TRANSPORTS = ("kombu+sqlalchemy", "kombu+sqla", "kombu+filesystem")


def cpu_count() -> int:
    """CPUs this process may run on (its affinity mask, which taskset and
    container cpusets narrow), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _in_process_transport(conf: cfg.ConfigOpts) -> bool:
    try:
        url = conf.transport_url
    except cfg.NoSuchOptError:
        return False
    return (url or "").partition(":")[0] in rpc.IN_PROCESS_TRANSPORTS


def configured_workers(conf: cfg.ConfigOpts) -> int:
    """``[scheduler] workers``; unset, one per CPU as in Nova, or 1 on an
    in-process transport (which several processes cannot share) and where
    that option does not exist."""
    try:
        workers = conf.scheduler.workers
    except cfg.NoSuchOptError:
        return 1
    if workers is not None:
        return int(workers)
    return 1 if _in_process_transport(conf) else cpu_count()


def validate_transport(conf: cfg.ConfigOpts) -> None:
    rpc.check_transport_url(conf, "DEFAULT", conf.transport_url)
    rpc.check_transport_url(conf, "oslo_messaging_notifications",
                            conf.oslo_messaging_notifications.transport_url,
                            required=False)
    workers = configured_workers(conf)
    scheme = conf.transport_url.partition(":")[0]
    if workers > 1 and scheme in rpc.IN_PROCESS_TRANSPORTS:
        raise exception.ConfigError(
            "scheduler", "workers", workers,
            f"transport_url {conf.transport_url} is private to one process; "
            "several workers need a broker such as RabbitMQ")


def notifications_summary(conf: cfg.ConfigOpts) -> str:
    """``off``, or the drivers and topics notifications go to: whether
    something must consume them is the operator's to see."""
    group = conf.oslo_messaging_notifications
    drivers = [driver for driver in group.driver if driver != "noop"]
    if not drivers:
        return "off"
    return f"{','.join(drivers)} on topic(s) {','.join(group.topics)}"


def _validate_database(conf: cfg.ConfigOpts) -> None:
    db_api.validate_connection_url(conf.database.connection)


def _run_single(worker: server.SchedulerWorker) -> int:
    stop = threading.Event()
    failed = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        LOG.info("Caught %s, stopping", signal.Signals(signum).name)
        stop.set()

    def run() -> None:
        try:
            worker.start()
        except Exception:
            # Not an unreachable broker (start() retries that itself):
            # something that waiting will not fix.
            LOG.exception("%s could not start", PROG)
            failed.set()
            stop.set()

    def on_sighup(_signum: int, _frame: object) -> None:
        # Its default action would end the service.
        LOG.warning("Caught SIGHUP; configuration changes need a restart "
                    "(or [scheduler] workers > 1, whose workers restart "
                    "on SIGHUP)")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_sighup)
    # The main thread only waits for signals: start() blocks for as long
    # as the broker is unreachable.
    threading.Thread(target=run, name="start", daemon=True).start()
    while not stop.wait(1.0):
        pass
    worker.stop()
    LOG.info("%s stopped", PROG)
    return 1 if failed.is_set() else 0


def main(argv: Sequence[str] | None = None) -> int:
    # Registered before parsing so that prepare() validates them with the
    # others: a malformed [oslo_messaging_rabbit] value exits 2 as well.
    messaging_conf.register_messaging_opts(CONF)
    common.prepare(PROG, CONF, argv, "scheduler",
                   validators=[_validate_database, validate_transport,
                               weight_setting_check.validate_windows],
                   description=DESCRIPTION)
    workers = configured_workers(CONF)
    try:
        # Before the manager: its metrics must be created in the mode
        # (one process or several) the exporter serves.
        observability.serve(CONF, workers)
        # Built in the parent even with several workers, so that a bad
        # filter or weigher name exits 2 once instead of failing in every
        # worker forked (and restarted) by the launcher.
        manager = manager_mod.SchedulerManager(CONF)
    except exception.ConfigError as e:
        cli.config_error_exit(PROG, str(e))
    weight_setting_check.warn_unreported(CONF)
    scheme = CONF.transport_url.partition(":")[0]
    if scheme in _LOSSY_TRANSPORTS:
        LOG.warning("transport_url %s loses messages between processes "
                    "under oslo.messaging; use RabbitMQ", scheme)
    per_cpu = (" (one per CPU)" if CONF.scheduler.workers is None
               and workers > 1 else "")
    LOG.info("%s starting: %d worker(s)%s, topic %s, broker %s, RPC API %s, "
             "notifications %s", PROG, workers, per_cpu, CONF.scheduler_topic,
             rpc.safe_transport_url(CONF.transport_url), rpc.RPC_API_VERSION,
             notifications_summary(CONF))
    # The notification sender processes start with the same arguments.
    command_line = list(sys.argv[1:] if argv is None else argv)
    if workers == 1:
        return _run_single(server.SchedulerWorker(
            CONF, manager, command_line=command_line))
    del manager
    status = server.run_workers(CONF, workers, manager_mod.SchedulerManager,
                                command_line)
    LOG.info("%s stopped", PROG)
    return status


if __name__ == "__main__":
    sys.exit(main())
