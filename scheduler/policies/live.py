"""Policies changed through the REST API, taken up by running workers.

``LivePolicies.observe`` runs with every host refresh, on the refresh's
own connection: it reads the one-row generation counter and, only when
the counter moved, reads the stored policies and settings and hands the
new PolicySet to ``on_change``. Nothing else is read per request, and a
change is in use from the request after the refresh that saw it.
"""

import logging
import threading
from collections.abc import Callable

import sqlalchemy as sa
from oslo_config import cfg
from sqlalchemy import exc as sa_exc

from scheduler.db import policy_sql
from scheduler.policies import cluster as cluster_policy
from scheduler.policies import store as policy_store

LOG = logging.getLogger(__name__)


class LivePolicies:
    """Keeps ``current`` up to date with the database; thread-safe."""

    def __init__(self, conf: cfg.ConfigOpts,
                 base: cluster_policy.PolicySet,
                 on_change: Callable[[cluster_policy.PolicySet], None]):
        self.conf = conf
        self.base = base
        self.current = base
        self.generation: int | None = None
        self._on_change = on_change
        self._lock = threading.Lock()
        self._warned = False

    def observe(self, connection: sa.Connection) -> None:
        """Read the generation; reload when it moved. Errors are logged,
        never raised: the host refresh must go on with the policies in
        use."""
        try:
            generation = policy_sql.read_generation(connection)
        except sa_exc.DBAPIError as e:
            # A schema before revision 0004: config policies only.
            if not self._warned:
                LOG.warning("Cannot read stored scheduling policies, using "
                            "the configured ones only (run "
                            "'scheduler-manage db sync'): %s",
                            str(e).splitlines()[0])
                self._warned = True
            return
        if generation == self.generation:
            return
        with self._lock:
            if generation == self.generation:
                return
            try:
                policies = policy_store.live_policy_set(
                    self.conf, self.base, connection)
            except (sa_exc.SQLAlchemyError, ValueError) as e:
                LOG.error("Reading the stored scheduling policies failed, "
                          "keeping those in use: %s", e)
                return
            # The first read at start-up is no change worth an INFO line.
            log = LOG.info if self.generation is not None else LOG.debug
            self.generation = generation
            self.current = policies
            log("Scheduling policies at generation %d: %s", generation,
                     ", ".join(f"{cluster}={policies.policies[name].label}"
                               for cluster, name in
                               sorted(policies.cluster_policies.items()))
                     or "no cluster mapped")
            self._on_change(policies)
