"""Options of the [scheduler] group: the service, claims, serialised mode,
metrics.
"""

from oslo_config import cfg


def _group() -> cfg.OptGroup:
    return cfg.OptGroup(
        "scheduler",
        title="Scheduler service options",
        help="Worker processes of scheduler-service, how claims are retried, "
        "oVirt's serialised scheduling mode (cluster_lock) and the "
        "Prometheus exporter.",
    )


scheduler_opts = [
    cfg.IntOpt(
        "workers",
        min=1,
        sample_default="<number of CPUs>",
        help="Number of worker processes of scheduler-service. Each worker "
        "consumes the same queue and claims in the same database; several "
        "services on several machines may run side by side. Unset, as in "
        "Nova: one worker per CPU this process may run on, or one with an "
        "in-process transport_url (kombu+memory, fake), which several "
        "processes cannot share.",
    ),
    cfg.IntOpt(
        "max_claim_rounds",
        default=10,
        min=1,
        help="Decisions one instance may go through when every candidate "
        "of a decision (the chosen host and its alternates) was filled by "
        "concurrent schedulers before the claim. Each new round refreshes "
        "the host cache first. After the last round the request fails "
        "with NoValidHost.",
    ),
    cfg.BoolOpt(
        "cluster_lock",
        default=False,
        help="Serialise scheduling within a cluster (oVirt's mode): the "
        "decision and the claims of a request are made while holding a "
        "lock named after the request's cluster ('cluster:<name>', "
        "'cluster:-' for requests without a cluster) in the database "
        "itself (PostgreSQL advisory lock, MariaDB GET_LOCK, a lock file "
        "next to a SQLite database), so that it is exclusive across all "
        "workers and machines. Claims never overcommit a host without it; "
        "the lock makes concurrent decisions see each other's claims.",
    ),
    cfg.FloatOpt(
        "lock_acquire_timeout",
        default=30.0,
        # PostgreSQL reads a lock_timeout of 0 as "wait forever".
        min=0.01,
        help="Seconds a request waits for the cluster lock "
        "(cluster_lock = true) before it fails with a lock timeout error.",
    ),
    cfg.FloatOpt(
        "lock_hold_timeout",
        default=60.0,
        min=0.0,
        help="Seconds a scheduling pass may hold the cluster lock "
        "(cluster_lock = true). The pass checks the time before each "
        "decision and each claim: once past this limit it stops, releases "
        "the claims it made, releases the lock, logs a warning and fails "
        "the request with NoValidHost (LockHoldTimeout). A pass whose "
        "last step ends after the limit keeps its claims and logs a "
        "warning. A database statement in progress is not interrupted. "
        "0 disables the limit.",
    ),
    cfg.FloatOpt(
        "pending_retry_timeout",
        default=0.0,
        min=0.0,
        help="Seconds to keep retrying a request that fits nowhere while "
        "pending claims (claims newer than their node's last metrics "
        "report) exist in the request's cluster, since those claims may "
        "be released or the next report may show room. The request is "
        "retried about every half second, without holding the cluster "
        "lock in between, and fails with NoValidHost when the time is up. "
        "0 fails at once.",
    ),
    cfg.PortOpt(
        "metrics_port",
        default=0,
        help="TCP port of the Prometheus exporter (GET /metrics): "
        "decisions by outcome, decision latency, hosts removed per filter, "
        "host-cache refreshes, claim conflicts and retries, planned "
        "migrations. 0 serves no metrics. With workers > 1 the "
        "scheduler-service parent process serves the sums of all its "
        "workers, which write their values under "
        "$state_path/prometheus/<port>.",
    ),
    cfg.HostAddressOpt(
        "metrics_host",
        default="0.0.0.0",
        help="Address the Prometheus exporter listens on ([scheduler] "
        "metrics_port). All interfaces by default, as Prometheus usually "
        "scrapes from another machine; set an internal address (or "
        "127.0.0.1) to narrow it. The metrics hold host, cluster and "
        "filter names, no secrets.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_group(_group())
    conf.register_opts(scheduler_opts, group="scheduler")


def list_opts() -> dict:
    return {_group(): scheduler_opts}
