"""The entries of a ``select_destinations`` reply: ``{"host",
"nodename", "uuid", "weight", "allocation_id"}`` per claimed host or
alternate."""

from scheduler import claims
from scheduler.engine import filter_scheduler
from scheduler.hosts.state import HostState


def weight(decision: filter_scheduler.Decision,
           node_id: int) -> float | None:
    """The node's weight in the decision, None when it was not a
    candidate."""
    weights = getattr(decision, "selected_weights", None)
    if weights and len(weights) == len(decision.selected):
        for host, value in zip(decision.selected, weights, strict=True):
            if host.node_id == node_id:
                return value
        return None
    # Candidates come first in results, so this stops after a few hosts.
    for result in decision.results:
        if result.host.node_id == node_id:
            return result.weight
    return None


def host_entry(host: HostState,
               decision: filter_scheduler.Decision) -> dict:
    """An alternate: a host the instance may go to, unclaimed."""
    return {"host": host.host, "nodename": host.nodename, "uuid": host.uuid,
            "weight": weight(decision, host.node_id),
            "allocation_id": None}


def claim_entry(claim: claims.Claim,
                decision: filter_scheduler.Decision | None) -> dict:
    """The host the instance holds a claim on (weight None when no
    decision of this call placed it)."""
    return {"host": claim.host, "nodename": claim.nodename,
            "uuid": claim.node_uuid,
            "weight": (None if decision is None
                       else weight(decision, claim.node_id)),
            "allocation_id": claim.allocation_id}
