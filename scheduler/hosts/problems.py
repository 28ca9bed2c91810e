"""What an empty fleet or a cluster without nodes means, in one line
for ``scheduler-manage`` (hosts list, explain, balance) and the API's
explain."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oslo_config import cfg

from scheduler.common import suggest
from scheduler.db import api as db_api

if TYPE_CHECKING:
    from scheduler.hosts.state import HostState


def no_host_registered(conf: cfg.ConfigOpts) -> str:
    """What an empty fleet means and how a node joins it."""
    return (f"no compute node is registered in "
            f"{db_api.safe_url(conf.database.connection)}: run "
            "compute-monitor on each compute node with this [database] "
            "connection (docs/operator-guide.md, step 5); its first report "
            "registers the node")


def unknown_cluster(cluster: str | None,
                    hosts: Sequence[HostState]) -> str | None:
    """Why ``cluster`` selects none of ``hosts`` (the whole fleet), with
    the closest cluster name; None when it selects some."""
    clusters = {host.cluster for host in hosts}
    if cluster is None or cluster in clusters:
        return None
    known = sorted(c for c in clusters if c is not None)
    return (f"no compute node is in cluster {cluster!r} (clusters: "
            f"{', '.join(known) or 'none set'})"
            f"{suggest.did_you_mean(cluster, known)}")
