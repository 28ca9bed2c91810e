"""Filter plugins: hard constraints that remove hosts from consideration.

A filter is a ``BaseHostFilter`` subclass registered in the
``scheduler.filters`` entry-point namespace under its class name, which is
the name operators list in ``[filter_scheduler] enabled_filters``.
"""

import dataclasses
from collections.abc import Sequence

import numpy as np
from oslo_config import cfg

from scheduler.host_manager import HostState
from scheduler.host_table import HostTable
from scheduler.request_spec import RequestSpec

NAMESPACE = "scheduler.filters"


# Slots: a filter may reject most of a large fleet, and a frozen
# dataclass without them takes twice as long to build.
@dataclasses.dataclass(frozen=True, slots=True)
class Rejection:
    """Why a filter removed a host.

    ``reason`` is short and the same for every host failing the same way
    (it is counted in the NoValidHost histogram: "25 RamFilter
    (insufficient RAM)"); ``detail`` carries this host's numbers for
    explain output.
    """

    reason: str
    detail: str = ""


class BaseHostFilter:
    """Base class of filters; subclasses implement ``reject`` or, to
    check many hosts faster, ``rejections``."""

    def __init__(self, conf: cfg.ConfigOpts):
        self.conf = conf

    @property
    def name(self) -> str:
        return type(self).__name__

    def applies(self, spec: RequestSpec) -> bool:
        """False when the request gives this filter nothing to check, so
        the scheduler skips it for every host."""
        return True

    def validate_request(self, spec: RequestSpec) -> None:
        """Raise InvalidRequest-style errors for malformed input the
        filter reads (once per request, before any host is checked)."""

    def warnings(self, spec: RequestSpec) -> list[str]:
        """What the operator should know about ``spec`` although it is
        valid (an extra spec this filter ignores, say): shown once in
        explain output and logged once, never per host."""
        return []

    def reject(self, host: HostState, spec: RequestSpec) -> Rejection | None:
        """None when ``host`` can take one instance of ``spec``."""
        if type(self).rejections is BaseHostFilter.rejections:
            raise NotImplementedError
        return self.rejections([host], spec)[0]

    def rejections(self, hosts: Sequence[HostState],
                   spec: RequestSpec) -> list[Rejection | None]:
        """``reject()`` of each host, in order: what the scheduler calls,
        with the hosts in blocks of a few hundred, so a host's verdict
        must not depend on the other hosts.

        A filter overrides this rather than ``reject`` to check a fleet
        faster: no method is called per host, which adds up over
        thousands of hosts, and what depends on the request alone
        (options, parsed extra specs, the time) is worked out once per
        request with ``spec.memo()``.
        """
        return [self.reject(host, spec) for host in hosts]

    def passes(self, table: HostTable,
               spec: RequestSpec) -> np.ndarray | None:
        """The verdicts of every host of ``table`` at once: a boolean
        array, True where ``reject()`` gives None; or None when the
        filter has no column form (the scheduler then calls
        ``rejections()`` with the hosts left).

        The fast path of large fleets: a filter that implements it is
        asked ``reject()`` only for the hosts it removed, and only when
        someone wants to know why (explain, NoValidHost).
        """
        return None

