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

import contextlib
import time
import types

from oslo_config import cfg
from oslo_log import log as logging

from compute_monitor.migration import conf as agent_conf
from compute_monitor.migration import mover as mover_mod
from compute_monitor.migration import store as store_mod

LOG = logging.getLogger(__name__)


def reap(conf: cfg.ConfigOpts, libvirt: types.ModuleType,
         store: store_mod.AgentStore, live: set[str]) -> None:
    """End the expired moves, but those in ``live`` (the uuids of the
    moves this agent's threads still carry out, however late a heartbeat
    of theirs came): a move this agent holds without a thread is as
    dead as another agent's."""
    for row in store.expired():
        if row.uuid in live or not store.steal(row):
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
        # finish() cuts the reason to the column (libvirt's errors are
        # long); the log keeps it whole.
        if store.finish(row.uuid, state, reason):
            LOG.warning("Migration %s of instance %s %s: %s", row.uuid,
                        row.instance_uuid, state, reason)


def _outcome(conf: cfg.ConfigOpts, libvirt: types.ModuleType,
             row) -> tuple[str, str]:
    template = conf.migration_agent.destination_uri
    with contextlib.ExitStack() as opened:
        dest = _domain(libvirt, opened, template, row.dest_host,
                       row.instance_uuid)
        if (dest is not None
                and dest.state()[0] == libvirt.VIR_DOMAIN_RUNNING):
            return mover_mod.COMPLETED, ("the instance runs on the "
                                         "destination")
        source = _domain(libvirt, opened, template, row.source_host,
                         row.instance_uuid)
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


def _domain(libvirt: types.ModuleType, opened: contextlib.ExitStack,
            template: str, host: str, instance_uuid: str):
    """The instance's domain on ``host``, None if absent or unreachable;
    its connection is closed when ``opened`` closes."""
    uri = agent_conf.host_uri(template, host)
    try:
        connection = libvirt.open(uri)
    except libvirt.libvirtError as e:
        LOG.info("Instance %s not looked for at %s: %s", instance_uuid, uri,
                 e)
        return None
    opened.callback(connection.close)
    try:
        return connection.lookupByUUIDString(instance_uuid)
    except libvirt.libvirtError as e:
        LOG.info("Instance %s not found at %s: %s", instance_uuid, uri, e)
        return None
