"""The claims store: claims made, found, kept and released in the
database (the protocol is in ``scheduler.claims``)."""

import dataclasses
import datetime
import uuid
from collections.abc import Iterable

from oslo_config import cfg
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from scheduler.claims import retry
from scheduler.claims.types import Claim
from scheduler.claims.types import ClaimConflict
from scheduler.claims.types import Usage
from scheduler.db import api as db_api
from scheduler.db import claim_sql
from scheduler.db import models
from scheduler.db.claim_sql import write_transaction
from scheduler.db.tables import chunks

# The logger of the module this came from: log lines and logging
# configuration stay as they were.
LOG = logging.getLogger("scheduler.claims")


def _ratio(own: float | None, default: float) -> float:
    return default if own is None else own


def _check_room(node_id: int, node: claim_sql.NodeUsage | claim_sql.SwapRow,
                usage: Usage, cpu_ratio: float,
                ram_ratio: float, disk_ratio: float) -> None:
    """Raise ClaimConflict unless ``usage`` fits on ``node`` (a row with
    capacity and ``*_used`` columns) with these allocation ratios."""
    checks = (
        ("vCPUs", usage.vcpus, node.vcpus_used, node.vcpus, cpu_ratio),
        ("MB of RAM", usage.memory_mb, node.memory_mb_used, node.memory_mb,
         ram_ratio),
        ("GB of disk", usage.disk_gb, node.disk_gb_used, node.local_gb,
         disk_ratio),
    )
    for unit, wanted, taken, capacity, ratio in checks:
        if wanted > 0 and taken + wanted > capacity * ratio:
            raise ClaimConflict(node_id, node.host,
                                f"needs {wanted} {unit}, {taken} of "
                                f"{capacity} x {ratio:g} claimed")


def _new_claim(node_id: int, node: claim_sql.NodeUsage | claim_sql.SwapRow,
               instance_uuid: str,
               usage: Usage, group: str | None, allocation_id: str,
               generation: int, changed_at: datetime.datetime) -> Claim:
    return Claim(allocation_id=allocation_id, instance_uuid=instance_uuid,
                 node_id=node_id, node_uuid=node.uuid, host=node.host,
                 nodename=node.hypervisor_hostname, vcpus=usage.vcpus,
                 memory_mb=usage.memory_mb, disk_gb=usage.disk_gb,
                 generation=generation, changed_at=changed_at, group=group)


class Claims:
    """Claims in the database of ``[database] connection``.

    Thread-safe: every call uses a connection of its own from the pool.
    The capacity check uses ``[filter_scheduler] *_allocation_ratio`` for
    nodes without a ratio of their own.
    """

    def __init__(self, conf: cfg.ConfigOpts):
        self.conf = conf

    @property
    def engine(self) -> Engine:
        # Looked up per call: db_api.dispose_engines() (tests, forked
        # workers) replaces the engine.
        return db_api.get_engine(self.conf, pre_ping=False)

    def claim(self, node_id: int, instance_uuid: str, usage: Usage,
              group: str | None = None,
              allocation_id: str | None = None) -> Claim:
        """Claim ``usage`` on node ``node_id`` for ``instance_uuid``.

        Raises ClaimConflict when the node lacks room (capacity x
        allocation ratio, per resource; a resource not asked for is not
        checked, as in the filters) or no longer exists. When the insert
        finds the instance already holding a claim (on any node: the
        unique ``instance_uuid``), that claim is returned with
        ``existing`` set and nothing is claimed; callers look up existing
        claims with ``find()`` first, as the capacity check comes before
        the insert. ``allocation_id`` defaults to a new uuid.
        """
        # One id for every attempt: a claim found under it was made by
        # this call (an attempt whose reply the lost connection swallowed).
        allocation_id = allocation_id or str(uuid.uuid4())
        retries = retry.Retries(duplicates=True)

        def log_retry(error: BaseException) -> None:
            if not isinstance(error, sa_exc.IntegrityError):
                LOG.debug("Claim for %s on node %s failed (%s); retrying",
                          instance_uuid, node_id, db_api.one_line(error))

        return retry.run(
            lambda: self._claim_or_held(node_id, instance_uuid, usage, group,
                                        allocation_id, retries),
            retries, log_retry)

    def _claim_or_held(self, node_id: int, instance_uuid: str, usage: Usage,
                       group: str | None, allocation_id: str,
                       retries: retry.Retries) -> Claim:
        """One attempt of ``claim``: the claim made, else the one the
        instance holds after a duplicate key. The duplicate key propagates
        when the instance holds none."""
        if retries.reconnected:
            # The dropped connection may have swallowed the reply to a
            # committed claim, which may have taken the node's last room:
            # found first, it is the answer rather than a full node.
            held = self._held(instance_uuid, allocation_id, retries)
            if held is not None and not held.existing:
                return held
        try:
            return self._claim(node_id, instance_uuid, usage, group,
                               allocation_id)
        except sa_exc.IntegrityError:
            # The unique instance_uuid: a concurrent request for the
            # same instance claimed first. Its claim is the answer.
            held = self._held(instance_uuid, allocation_id, retries)
            if held is not None:
                return held
            # Released in the meantime (or another constraint): the
            # next attempt tells which.
            raise

    def _held(self, instance_uuid: str, allocation_id: str,
              retries: retry.Retries) -> Claim | None:
        """The claim ``instance_uuid`` holds, as made by this call (not
        ``existing``) when it bears the call's ``allocation_id``; a
        failure of the lookup ends the call."""
        try:
            held = self.find([instance_uuid]).get(instance_uuid)
        except BaseException as e:
            retries.final = e  # not retried: it ends the call
            raise
        if held is not None and held.allocation_id == allocation_id:
            return dataclasses.replace(held, existing=False)
        return held

    def _claim(self, node_id: int, instance_uuid: str, usage: Usage,
               group: str | None, allocation_id: str) -> Claim:
        engine = self.engine
        if engine.dialect.name == "postgresql":
            claim = self._swap_claim(engine, node_id, instance_uuid, usage,
                                     group, allocation_id)
            if claim is not None:
                return claim
        return self._locked_claim(engine, node_id, instance_uuid, usage,
                                  group, allocation_id)

    def _swap_claim(self, engine: Engine, node_id: int, instance_uuid: str,
                    usage: Usage, group: str | None, allocation_id: str
                    ) -> Claim | None:
        """The claim in one statement (``claim_sql.CAS_CLAIM``); None when the
        node's generation moved under it."""
        opts = self.conf.filter_scheduler
        now = models.utcnow()
        # In autocommit, as the engine's PostgreSQL connections are.
        with engine.connect() as connection:
            rows = claim_sql.CAS_CLAIM.rows(connection, {
                    "node_id": node_id, "now": now,
                    "cpu_ratio": opts.cpu_allocation_ratio,
                    "ram_ratio": opts.ram_allocation_ratio,
                    "disk_ratio": opts.disk_allocation_ratio,
                    "vcpus": usage.vcpus, "memory_mb": usage.memory_mb,
                    "disk_gb": usage.disk_gb, "uuid": allocation_id,
                    "instance_uuid": instance_uuid,
                    "instance_group": group})
        if not rows:
            raise ClaimConflict(node_id, "?", "the node no longer exists")
        node = rows[0]
        if not node.claimed:
            # Full as read, else the generation moved: decide under the
            # row lock.
            _check_room(node_id, node, usage, node.cpu_ratio,
                        node.ram_ratio, node.disk_ratio)
            return None
        # The swap bumped the generation it read.
        return _new_claim(node_id, node, instance_uuid, usage, group,
                          allocation_id, node.generation + 1, now)

    def _locked_claim(self, engine: Engine, node_id: int,
                      instance_uuid: str, usage: Usage, group: str | None,
                      allocation_id: str) -> Claim:
        opts = self.conf.filter_scheduler
        now = models.utcnow()
        with write_transaction(engine) as connection:
            # The bump comes first: it takes the node's row lock, waiting
            # for any other claim on the node to commit, and the rollback
            # undoes it when the node turns out full.
            if claim_sql.BUMP.run(connection, {"node_id": node_id,
                                               "now": now}) == 0:
                raise ClaimConflict(node_id, "?", "the node no longer "
                                    "exists")
            # A statement of its own, after the lock: under READ
            # COMMITTED its snapshot holds every claim committed on the
            # node.
            node, = claim_sql.NODE_USAGE.rows(connection,
                                              {"node_id": node_id})
            _check_room(node_id, node, usage,
                        _ratio(node.cpu_allocation_ratio,
                               opts.cpu_allocation_ratio),
                        _ratio(node.ram_allocation_ratio,
                               opts.ram_allocation_ratio),
                        _ratio(node.disk_allocation_ratio,
                               opts.disk_allocation_ratio))
            claim_sql.INSERT.run(connection, {
                "uuid": allocation_id, "instance_uuid": instance_uuid,
                "compute_node_id": node_id, "vcpus": usage.vcpus,
                "memory_mb": usage.memory_mb, "disk_gb": usage.disk_gb,
                "instance_group": group, "created_at": now})
        # Read after the bump, in its transaction: the bumped generation.
        return _new_claim(node_id, node, instance_uuid, usage, group,
                          allocation_id, node.generation, now)

    def find(self, instance_uuids: Iterable[str]) -> dict[str, Claim]:
        """The claims held by these instances, by instance uuid (instances
        without one are absent). Each has ``existing`` set."""
        wanted = list(dict.fromkeys(instance_uuids))
        found: dict[str, Claim] = {}
        if not wanted:
            return found
        with self.engine.connect() as connection:
            for chunk in chunks(wanted):
                rows = connection.execute(claim_sql.CLAIMS_OF,
                                          {"uuids": chunk}).all()
                for row in rows:
                    found[row[1]] = Claim(*row, existing=True)
        return found

    def release(self, instance_uuid: str) -> bool:
        """Delete the instance's claim; False when it held none."""
        return self._release(claim_sql.RELEASE_INSTANCE,
                             {"instance_uuid": instance_uuid})

    def release_allocation(self, allocation_id: str,
                           made_before: datetime.datetime | None = None
                           ) -> bool:
        """Delete one allocation by its own uuid; False when it is gone.

        Used to undo the claims of a failed request: by allocation, so
        that a claim some other request made for the same instance in the
        meantime is never touched. With ``made_before``, an allocation
        stamped later (a retry of the request took it over, ``keep``) is
        spared too, whichever process the retry reached.
        """
        if made_before is None:
            return self._release(claim_sql.RELEASE_ALLOCATION,
                                 {"allocation_id": allocation_id})
        return self._release(claim_sql.RELEASE_ALLOCATION_MADE_BEFORE,
                             {"allocation_id": allocation_id,
                              "made_before": made_before})

    def keep(self, claim: Claim) -> bool:
        """Take over an existing claim that a failed request may have left
        for release (by this process or any other): stamped anew, so
        that a release deferred before now spares it. False when it is
        gone (released meanwhile): the caller must claim again."""
        now = models.utcnow()
        with write_transaction(self.engine) as connection:
            # The node first, the order of every writer; its change key
            # moves so that host caches read the new stamp.
            claim_sql.BUMP.run(connection, {"node_id": claim.node_id,
                                            "now": now})
            kept = claim_sql.KEEP.run(connection, {
                "allocation_id": claim.allocation_id, "now": now})
            if kept != 1:
                connection.rollback()
                return False
        return True

    def _release(self, release: claim_sql.Release,
                 params: dict[str, object]) -> bool:
        return retry.run(lambda: self._release_once(release, params),
                         retry.Retries())

    def _release_once(self, release: claim_sql.Release,
                      params: dict[str, object]) -> bool:
        with write_transaction(self.engine) as connection:
            nodes = release.node.rows(connection, params)
            if not nodes:
                return False
            node_id = nodes[0][0]
            # Node row first, then the allocation: the order claims lock
            # in, so that a release and a claim never deadlock.
            claim_sql.BUMP.run(connection, {"node_id": node_id,
                                            "now": models.utcnow()})
            deleted = release.delete.run(connection, params)
            if deleted != 1:
                # Released concurrently: undo the bump, report nothing
                # released.
                connection.rollback()
                return False
        return True
