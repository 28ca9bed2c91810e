"""Ends the running moves whose agent died: after [migration_agent]
lease seconds without a heartbeat, any agent takes the move over (only
one wins, see ``store``) and ends it by where the instance runs, asking
both nodes' libvirt through [migration_agent] destination_uri:

* running on the destination: completed (libvirtd finished the
  peer-to-peer move on its own after the agent died);
* still on the source: its migration job, if libvirt still runs it
  unsteered, is aborted; failed, the instance stays where it was;
* on neither, or neither answers: failed, saying so; the source claim
  stays, as the instance was last known there.

The claims follow the outcome, as for any move.
"""

import time
import types

from oslo_config import cfg
from oslo_log import log as logging

from compute_monitor.migration import conf as agent_conf
from compute_monitor.migration import mover as mover_mod
from compute_monitor.migration import store as store_mod

LOG = logging.getLogger(__name__)


def reap(conf: cfg.ConfigOpts, libvirt: types.ModuleType,
         store: store_mod.AgentStore) -> None:
    for row in store.expired():
        # Its own moves are alive in its threads, however late a
        # heartbeat of theirs came.
        if row.agent == store.agent or not store.steal(row):
            continue
        LOG.warning("Migration %s: its agent %s sent no heartbeat for %d s; "
                    "%s takes it over", row.uuid, row.agent,
                    conf.migration_agent.lease, store.agent)
        try:
            state, reason = _outcome(conf, libvirt, row)
        except libvirt.libvirtError as e:
            state, reason = mover_mod.FAILED, (
                f"asking libvirt where the instance runs failed: {e}")
        reason = f"agent {row.agent} lost its lease; {reason}"
        if store.finish(row.uuid, state, reason):
            LOG.warning("Migration %s of instance %s %s: %s", row.uuid,
                        row.instance_uuid, state, reason)


def _outcome(conf: cfg.ConfigOpts, libvirt: types.ModuleType,
             row) -> tuple[str, str]:
    template = conf.migration_agent.destination_uri
    dest = _domain(libvirt, template, row.dest_host, row.instance_uuid)
    if dest is not None and dest.state()[0] == libvirt.VIR_DOMAIN_RUNNING:
        return mover_mod.COMPLETED, "the instance runs on the destination"
    source = _domain(libvirt, template, row.source_host, row.instance_uuid)
    if source is not None and source.isActive():
        _abort(conf, libvirt, source, row.uuid)
        return mover_mod.FAILED, "the instance is still on the source"
    return mover_mod.FAILED, ("the instance was found running on neither "
                              "node")


def _abort(conf: cfg.ConfigOpts, libvirt: types.ModuleType, domain,
           migration_uuid: str) -> None:
    """Abort the migration job libvirt may still run unsteered, and wait
    (up to a lease) until it is over: until then the destination still
    holds the incoming guest."""
    deadline = time.monotonic() + conf.migration_agent.lease
    try:
        if domain.jobInfo()[0] == libvirt.VIR_DOMAIN_JOB_NONE:
            return
        domain.abortJob()
        while (domain.jobInfo()[0] != libvirt.VIR_DOMAIN_JOB_NONE
               and time.monotonic() < deadline):
            time.sleep(conf.migration_agent.poll_interval)
    except libvirt.libvirtError as e:
        LOG.warning("Migration %s: abort of the unsteered job failed: %s",
                    migration_uuid, e)


def _domain(libvirt: types.ModuleType, template: str, host: str,
            instance_uuid: str):
    """The instance's domain on ``host``, None if absent or unreachable."""
    uri = agent_conf.host_uri(template, host)
    try:
        return libvirt.open(uri).lookupByUUIDString(instance_uuid)
    except libvirt.libvirtError as e:
        LOG.info("Instance %s not found at %s: %s", instance_uuid, uri, e)
        return None
