"""Policies changed through the REST API, taken up by running workers.

A ``LivePolicies`` is a probe of every host refresh
(``scheduler.hosts.cache.reading.RefreshProbe``), on the refresh's own
connection: the one-row generation counter is read in the refresh's scan
of the changed hosts (by a statement of its own on a full load, and until
a read found the table), and only when the counter moved are the stored
policies and settings read and the new PolicySet handed to
``on_change``. Nothing else is read per request, and a change is in use
from the request after the refresh that saw it.
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

    @property
    def query(self) -> sa.ScalarSelect | None:
        """The generation for the refresh's scan to carry, once a read of
        its own found the counter: a schema before revision 0004 has no
        table for it, which must not fail the scan."""
        return None if self.generation is None else policy_sql.GENERATION

    def observe(self, connection: sa.Connection) -> None:
        """Read the generation; reload when it moved. Errors are logged,
        never raised: the host refresh must go on with the policies in
        use."""
        try:
            generation = policy_sql.read_generation(connection)
        except sa_exc.DBAPIError as e:
            # A schema before revision 0004 (or downgraded below it): the
            # policies in use stay, and the refresh's scan no longer
            # carries the counter until a read finds it again.
            with self._lock:
                self.generation = None
            if not self._warned:
                LOG.warning("Cannot read stored scheduling policies, using "
                            "the configured ones only (run "
                            "'scheduler-manage db sync'): %s",
                            str(e).splitlines()[0])
                self._warned = True
            return
        self.observed(connection, generation)

    def observed(self, connection: sa.Connection, value: object) -> None:
        """Reload the policies when the generation ``value`` (None: no
        change stored yet) moved; errors as for ``observe``."""
        generation = int(value or 0)
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
            # The first read at start-up is no change worth an INFO line;
            # the counter found again after a warning is.
            log = (LOG.info if self.generation is not None or self._warned
                   else LOG.debug)
            self._warned = False
            self.generation = generation
            self.current = policies
            log("Scheduling policies at generation %d: %s", generation,
                     ", ".join(f"{cluster}={policies.policies[name].label}"
                               for cluster, name in
                               sorted(policies.cluster_policies.items()))
                     or "no cluster mapped")
            self._on_change(policies)
