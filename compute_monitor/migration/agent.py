"""The migration agent's loop: every [migration_agent] poll_interval it
takes over the moves whose holder died (``reaper``), then takes the
node's planned outgoing moves the per-host limits allow and carries
each out in a thread of its own (``mover``), recording the outcome and
moving the claims (``store``).

Bandwidth, as the balancer works it out when it plans the move
(``bandwidth_per_migration``): the cluster's setting (REST API) or
[migration] bandwidth, in Mbps or ``auto`` (the link speed of
[migration_agent] migration_interface), divided by the move's migration
policy's maxMigrations (the most moves a host runs at once under it);
``hypervisor_default`` leaves it to libvirt. Every move starts with its
share, so the moves of a node never sum past the link.
"""

import os
import threading
import types

import psutil
from oslo_config import cfg
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from compute_monitor import conf as monitor_conf
from compute_monitor.migration import conf as agent_conf
from compute_monitor.migration import mover as mover_mod
from compute_monitor.migration import reaper
from compute_monitor.migration import store as store_mod
from scheduler import exception
from scheduler.conf import migration as migration_conf
from scheduler.policies.migration import policies as migration_policies

LOG = logging.getLogger(__name__)

#: Mbps to libvirt's MiB/s.
_MBPS_TO_MIB = 1_000_000 / 8 / 2**20


def agent_name(conf: cfg.ConfigOpts) -> str:
    """host:pid, as recorded in the rows this agent holds."""
    return f"{conf.host}:{os.getpid()}"


class MigrationAgent:
    """Carries out the planned moves leaving this node."""

    def __init__(self, conf: cfg.ConfigOpts, libvirt: types.ModuleType,
                 store: store_mod.AgentStore | None = None):
        self.conf = conf
        self.libvirt = libvirt
        self.store = store or store_mod.AgentStore(conf, agent_name(conf))
        self._stop = threading.Event()
        self._threads: dict[str, threading.Thread] = {}
        self._node_id: int | None = None
        # Said once, not every poll, while the node is not registered.
        self._warned = False

    def stop(self) -> None:
        self._stop.set()

    def run_forever(self) -> None:
        while not self._stop.is_set():
            try:
                self.cycle()
            except (sa_exc.SQLAlchemyError, exception.SchedulerError) as e:
                LOG.error("Migration agent cycle failed, retrying in %s s: "
                          "%s", self.conf.migration_agent.poll_interval, e)
            self._stop.wait(self.conf.migration_agent.poll_interval)
        for thread in list(self._threads.values()):
            thread.join()

    def cycle(self) -> None:
        """Reap expired leases, then start what the limits allow."""
        self._threads = {uuid: thread for uuid, thread
                         in self._threads.items() if thread.is_alive()}
        reaper.reap(self.conf, self.libvirt, self.store, set(self._threads))
        node_id = self._own_node()
        if node_id is None:
            return
        for row in self.store.planned_from(node_id):
            if row.uuid in self._threads:
                continue
            if not self.store.node_exists(row.dest_node_id):
                self._fail_planned(row, f"destination node {row.dest_host} "
                                   "is gone")
                continue
            refused = self.store.take(row)
            if refused is not None:
                LOG.debug("Migration %s waits: %s", row.uuid, refused)
                if isinstance(refused, store_mod.SourceFull):
                    break
                continue
            LOG.info("Migration %s taken: instance %s from %s to %s",
                     row.uuid, row.instance_uuid, row.source_host,
                     row.dest_host)
            thread = threading.Thread(target=self.carry_out, args=(row,),
                                      name=f"move-{row.uuid}")
            self._threads[row.uuid] = thread
            thread.start()

    def _own_node(self) -> int | None:
        if self._node_id is None:
            node = monitor_conf.hypervisor_hostname(self.conf)
            self._node_id = self.store.node_id(self.conf.host, node)
            if self._node_id is None and not self._warned:
                LOG.warning("No compute node %s (host %s) in the database "
                            "yet: start its compute-monitor", node,
                            self.conf.host)
                self._warned = True
        return self._node_id

    def _fail_planned(self, row, reason: str) -> None:
        if self.store.fail_planned(row.uuid, reason):
            LOG.error("Migration %s of instance %s failed: %s", row.uuid,
                      row.instance_uuid, reason)

    def carry_out(self, row) -> None:
        """Run one taken move to its end and record it; never raises (a
        thread of its own)."""
        try:
            outcome = self._migrate(row)
        # Anything: the row must still end, not stay running.
        except Exception as e:
            LOG.exception("Migration %s: unexpected error", row.uuid)
            outcome = mover_mod.Outcome(mover_mod.FAILED,
                                        f"agent error: {e}")
        self._record(row, outcome)

    def _record(self, row, outcome: mover_mod.Outcome) -> None:
        """Record the outcome, retrying every poll while the database is
        unreachable (until the agent stops: then the lease runs out and
        the next agent ends the move by where the instance runs)."""
        while True:
            try:
                ended = self.store.finish(row.uuid, outcome.state,
                                          outcome.reason)
                break
            except sa_exc.SQLAlchemyError as e:
                LOG.error("Migration %s ended %s but cannot be recorded, "
                          "retrying: %s", row.uuid, outcome.state, e)
                if self._stop.wait(self.conf.migration_agent.poll_interval):
                    return
        if not ended:
            self._record_lost(row, outcome)
            return
        log = LOG.info if outcome.state == mover_mod.COMPLETED else LOG.error
        log("Migration %s of instance %s from %s to %s %s%s", row.uuid,
            row.instance_uuid, row.source_host, row.dest_host,
            outcome.state, f": {outcome.reason}" if outcome.reason else "")

    def _migrate(self, row) -> mover_mod.Outcome:
        conf = self.conf.migration_agent
        try:
            policy = migration_policies.read_migration_policies(
                self.conf).policy_for(row.cluster, row.migration_policy)
        except exception.SchedulerError as e:
            return mover_mod.Outcome(mover_mod.FAILED, str(e))
        try:
            connection = self.libvirt.open(conf.libvirt_uri)
        except self.libvirt.libvirtError as e:
            return mover_mod.Outcome(
                mover_mod.FAILED,
                f"libvirt at {conf.libvirt_uri} unreachable: {e}")
        try:
            try:
                domain = connection.lookupByUUIDString(row.instance_uuid)
            except self.libvirt.libvirtError:
                return mover_mod.Outcome(
                    mover_mod.FAILED, f"instance {row.instance_uuid} is not "
                    f"on {row.source_host} ({conf.libvirt_uri})")
            mover = mover_mod.Mover(
                self.libvirt, domain, policy,
                agent_conf.host_uri(conf.destination_uri, row.dest_host),
                agent_conf.host_uri(conf.migration_uri, row.dest_host),
                conf.poll_interval,
                lambda progress: self._beat(row.uuid, progress))
            return mover.run(self._bandwidth_mib(policy, row.cluster))
        finally:
            connection.close()

    def _record_lost(self, row, outcome: mover_mod.Outcome) -> None:
        """The move ended but its lease was gone (an agent took it over).
        Completed, the guest runs on the destination whatever the taker
        recorded: a move the taker ended otherwise (it looked before the
        landing) is set completed and the claim follows the guest; one
        still running is the taker's, which finds the guest there."""
        if outcome.state != mover_mod.COMPLETED:
            LOG.error("Migration %s ended %s, but this agent no longer "
                      "holds it: the agent that took it over records it",
                      row.uuid, outcome.state)
            return
        if self.store.record_landed(row.uuid):
            LOG.error("Migration %s completed after this agent lost its "
                      "lease, and was recorded otherwise: now recorded "
                      "completed, instance %s's claim moved to %s",
                      row.uuid, row.instance_uuid, row.dest_host)
        else:
            LOG.error("Migration %s completed after this agent lost its "
                      "lease: instance %s runs on %s; the agent that took "
                      "the move over records it", row.uuid,
                      row.instance_uuid, row.dest_host)

    def _beat(self, migration_uuid: str,
              progress: int | None) -> mover_mod.Beat:
        try:
            held, cancel = self.store.heartbeat(migration_uuid, progress)
        except sa_exc.SQLAlchemyError as e:
            # The move goes on; the lease runs out only if this lasts.
            LOG.warning("Migration %s: heartbeat failed: %s",
                        migration_uuid, e)
            return mover_mod.Beat(True, False)
        return mover_mod.Beat(held, cancel)

    def _bandwidth_mib(self, policy: migration_policies.MigrationPolicy,
                       cluster: str | None) -> int | None:
        """The move's bandwidth in MiB/s; None: libvirt's."""
        setting = self.store.bandwidth_setting(cluster)
        link = None
        if setting == migration_conf.BANDWIDTH_AUTO:
            interface = self.conf.migration_agent.migration_interface
            stats = psutil.net_if_stats().get(interface or "")
            link = stats.speed if stats and stats.speed > 0 else None
        mbps = migration_policies.bandwidth_per_migration(
            self.conf, policy, link, None, setting)
        if mbps is None:
            return None
        return max(1, int(mbps * _MBPS_TO_MIB))

