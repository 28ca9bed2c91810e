"""What a claim is, and the errors claiming raises."""

import dataclasses
import datetime

from scheduler import exception


@dataclasses.dataclass(frozen=True)
class Claim:
    """One allocation and the node it is on."""

    allocation_id: str
    instance_uuid: str
    node_id: int
    node_uuid: str
    host: str
    nodename: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    #: True when the instance already held this claim before the call
    #: that returned it (an idempotent retry, or a concurrent duplicate
    #: request that won the race): the caller did not make it and must not
    #: release it on its own failure.
    existing: bool = False
    #: The node's generation and change time as this claim left them,
    #: when the call that returns it made it (else None): what lets the
    #: caller's host cache take the claim in without reading the node
    #: again (``HostManager.record_claim``).
    generation: int | None = None
    changed_at: datetime.datetime | None = None
    #: The server group the claim was made for, when the call that
    #: returns it made it (else None): with the generation and change
    #: time, what the host cache takes in (``HostManager.record_claim``).
    group: str | None = None
    #: When a failed request gave the claim up for release in the
    #: background (``DeferredReleases``): the release spares the claim if
    #: a retry handed it out since (``Claims.keep``).
    deferred_at: datetime.datetime | None = None


class ClaimConflict(exception.SchedulerError):
    """The node cannot take the claim: full (another scheduler claimed
    first) or gone. The caller tries its next candidate."""

    def __init__(self, node_id: int, host: str, reason: str):
        self.node_id = node_id
        self.host = host
        self.reason = reason
        super().__init__(f"cannot claim on {host} (node {node_id}): "
                         f"{reason}")


class DatabaseError(exception.SchedulerError):
    """A database error interrupted a request; its transaction was rolled
    back. The original SQLAlchemy error is the ``__cause__``."""


@dataclasses.dataclass(frozen=True)
class Usage:
    """What an allocation takes on its node."""

    vcpus: int
    memory_mb: int
    disk_gb: int
