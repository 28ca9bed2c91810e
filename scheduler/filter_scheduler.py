"""The filter scheduler: filters remove hosts, weighers order the rest.

For each instance of a request: drop every host some filter rejects,
weigh the survivors with each weigher (raw weights normalised over the
candidates, times the weigher's multiplier, summed), pick the chosen host
at random among the ``host_subset_size`` best and return it with
``max_attempts - 1`` alternates. Instances of one request consume the
resources of their hosts before the next instance is placed.
"""

import collections
import dataclasses
import datetime
import random
from collections.abc import Sequence

from oslo_config import cfg
from oslo_log import log as logging
from stevedore import named

from scheduler import exception
from scheduler import filters
from scheduler import host_manager as hm
from scheduler import weights
from scheduler.db import models
from scheduler.request_spec import RequestSpec
from scheduler.weights import normalization

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class WeighedTerm:
    raw: float | None
    normalized: float | None


@dataclasses.dataclass
class HostResult:
    """What happened to one host in one decision (explain output)."""

    host: hm.HostState
    filtered_by: str | None = None
    reason: str | None = None
    detail: str | None = None
    weight: float | None = None
    weights: dict[str, WeighedTerm] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Decision:
    """One instance's placement: the ordered candidates and every host's
    fate. ``selected`` is the chosen host then the alternates."""

    selected: list[hm.HostState]
    results: list[HostResult]
    summary: str = ""

    def as_dict(self) -> dict:
        """The JSON form of DESIGN §7 (``explain --format json``)."""
        return {
            "selected": [h.host for h in self.selected],
            "summary": self.summary,
            "hosts": [{
                "host": r.host.host,
                "nodename": r.host.nodename,
                "filtered_by": r.filtered_by,
                "reason": r.reason,
                "detail": r.detail,
                "weight": r.weight,
                "weights": {name: dataclasses.asdict(term)
                            for name, term in r.weights.items()},
            } for r in self.results],
        }


def _load(namespace: str, names: Sequence[str], group: str, option: str,
          conf: cfg.ConfigOpts) -> list:
    def missing(missing_names):
        raise exception.ConfigError(
            group, option, ",".join(sorted(missing_names)),
            f"expected entry-point names of {namespace}")

    def failed(_manager, entrypoint, error):
        raise exception.ConfigError(group, option, entrypoint.name,
                                    f"the plugin failed to load: {error}")

    manager = named.NamedExtensionManager(
        namespace, list(dict.fromkeys(names)), invoke_on_load=True,
        invoke_args=(conf,), name_order=True,
        on_missing_entrypoints_callback=missing,
        on_load_failure_callback=failed)
    return [extension.obj for extension in manager]


def histogram(total: int, rejected: Sequence[HostResult]) -> str:
    """``0/40 hosts available: 25 RamFilter (insufficient RAM), ...``."""
    counts = collections.Counter((r.filtered_by, r.reason) for r in rejected)
    parts = [f"{count} {name} ({reason})" for (name, reason), count in
             sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
    available = total - len(rejected)
    text = f"{available}/{total} hosts available"
    return f"{text}: {', '.join(parts)}" if parts else text


class FilterScheduler:
    """Runs the configured filters and weighers over the host states."""

    def __init__(self, conf: cfg.ConfigOpts,
                 host_manager: hm.HostManager | None = None,
                 rng: random.Random | None = None):
        self.conf = conf
        opts = conf.filter_scheduler
        self.host_manager = host_manager or hm.HostManager(conf)
        self.filters: list[filters.BaseHostFilter] = _load(
            filters.NAMESPACE, opts.enabled_filters, "filter_scheduler",
            "enabled_filters", conf)
        self.weighers: list[weights.BaseHostWeigher] = _load(
            weights.NAMESPACE, opts.weight_classes, "filter_scheduler",
            "weight_classes", conf)
        normalization.validate_weight_maximums(conf)
        self._rng = rng or random.SystemRandom()

    def validate(self, spec: RequestSpec) -> None:
        """Reject malformed input before any host is looked at."""
        for host_filter in self.filters:
            host_filter.validate_request(spec)

    def explain(self, spec: RequestSpec,
                hosts: Sequence[hm.HostState] | None = None) -> Decision:
        """The decision for the first instance of ``spec``, no claim."""
        self.validate(spec)
        if hosts is None:
            hosts = self.host_manager.host_states()
        return self._decide(spec, hosts, models.utcnow())

    def select(self, spec: RequestSpec,
               hosts: Sequence[hm.HostState] | None = None
               ) -> list[Decision]:
        """One decision per instance; raises NoValidHost when one does not
        fit. The resources of each chosen host are consumed (on copies)
        before the next instance is placed."""
        self.validate(spec)
        if hosts is None:
            hosts = self.host_manager.host_states()
        # Copy-on-write: only hosts an instance lands on are copied before
        # consume(), so the shared cache stays untouched and a request
        # does not pay for copying the whole fleet.
        hosts = list(hosts)
        position = {id(h): i for i, h in enumerate(hosts)}
        private: set[int] = set()
        flavor = spec.flavor
        uuids = spec.instance_uuids or [None] * spec.num_instances
        now = models.utcnow()
        decisions = []
        for instance_uuid in uuids:
            decision = self._decide(spec, hosts, now)
            if not decision.selected:
                raise exception.NoValidHost(decision.summary)
            index = position[id(decision.selected[0])]
            if index not in private:
                hosts[index], = hm.snapshot([hosts[index]])
                position[id(hosts[index])] = index
                private.add(index)
            chosen = hosts[index]
            decision.selected[0] = chosen
            chosen.consume(flavor.vcpus, flavor.memory_mb, flavor.disk_gb,
                           instance_uuid, spec.group)
            if spec.group:
                spec.group_hosts.add(chosen.host)
            decisions.append(decision)
        return decisions

    def _decide(self, spec: RequestSpec, hosts: Sequence[hm.HostState],
                now: datetime.datetime) -> Decision:
        if spec.group:
            spec.group_hosts |= {h.host for h in hosts
                                 if spec.group in h.instance_groups}
        results = [HostResult(host) for host in hosts]
        candidates = self._filter(spec, results)
        candidates = self._weigh(spec, candidates)
        candidates.sort(key=lambda r: (-r.weight, r.host.host,
                                       r.host.nodename))
        selected = self._pick(candidates)
        ordered = candidates + [r for r in results if r.filtered_by]
        summary = "" if selected else histogram(
            len(results), [r for r in results if r.filtered_by])
        if LOG.isEnabledFor(logging.DEBUG):
            LOG.debug("Cost table for %s:\n%s", spec.flavor.name or "request",
                      cost_table(ordered))
        return Decision(selected=[r.host for r in selected], results=ordered,
                        summary=summary)

    def _filter(self, spec: RequestSpec,
                results: list[HostResult]) -> list[HostResult]:
        # Filter by filter over the survivors, so a cheap early filter
        # spares later ones most hosts.
        remaining = results
        for host_filter in self.filters:
            if not host_filter.applies(spec):
                continue
            passed = []
            for result in remaining:
                rejection = host_filter.reject(result.host, spec)
                if rejection is None:
                    passed.append(result)
                else:
                    result.filtered_by = host_filter.name
                    result.reason = rejection.reason
                    result.detail = rejection.detail
            remaining = passed
            if not remaining:
                break
        return remaining

    def _weigh(self, spec: RequestSpec,
               candidates: list[HostResult]) -> list[HostResult]:
        weighers = [w for w in self.weighers if w.applies(spec)]
        raw_by_weigher = self._raw_weights(spec, weighers, candidates)
        # Hosts lacking a required metric go before anything is scaled, so
        # they cannot stretch or squash how the remaining hosts compare.
        removed = set()
        for weigher, raw in zip(weighers, raw_by_weigher, strict=True):
            if not weigher.unavailable_removes_host(spec):
                continue
            for index, value in enumerate(raw):
                if value is None and index not in removed:
                    removed.add(index)
                    result = candidates[index]
                    result.filtered_by = weigher.name
                    result.reason = "required metric unavailable"
                    result.detail = "a metric it weighs is missing or stale"
        if removed:
            keep = [i for i in range(len(candidates)) if i not in removed]
            candidates = [candidates[i] for i in keep]
            raw_by_weigher = self._raw_weights(spec, weighers, candidates)

        unavailable_weight = self.conf.metrics.weight_of_unavailable
        mode = self.conf.filter_scheduler.weight_normalization
        for result in candidates:
            result.weight = 0.0
        for weigher, raw in zip(weighers, raw_by_weigher, strict=True):
            maximum = (normalization.weight_maximum(self.conf, weigher.name)
                       if mode == "hardmax" else None)
            normalized = normalization.normalize(mode, raw, maximum)
            multiplier = weigher.multiplier(spec)
            for result, value, norm in zip(candidates, raw, normalized,
                                           strict=True):
                result.weights[weigher.name] = WeighedTerm(value, norm)
                result.weight += (unavailable_weight if norm is None
                                  else multiplier * norm)
        return candidates

    @staticmethod
    def _raw_weights(spec: RequestSpec,
                     weighers: list[weights.BaseHostWeigher],
                     candidates: list[HostResult]) -> list[list]:
        hosts = [r.host for r in candidates]
        return [w.raw_weights(hosts, spec) if hosts else []
                for w in weighers]

    def _pick(self, ordered: list[HostResult]) -> list[HostResult]:
        if not ordered:
            return []
        subset = ordered[:self.conf.filter_scheduler.host_subset_size]
        chosen = self._rng.choice(subset)
        alternates = [r for r in ordered if r is not chosen]
        return [chosen] + alternates[
            :self.conf.filter_scheduler.max_attempts - 1]


def cost_table(results: Sequence[HostResult]) -> str:
    """Hosts x weighers table of normalised weights, for debug logs and
    the CLI."""
    names = sorted({name for r in results for name in r.weights})
    header = ["host", *names, "total", "filtered_by"]
    rows = [header]
    for r in results:
        cells = [r.host.host]
        for name in names:
            term = r.weights.get(name)
            cells.append("-" if term is None or term.normalized is None
                         else f"{term.normalized:.3f}")
        cells.append("-" if r.weight is None else f"{r.weight:.3f}")
        cells.append(r.filtered_by or "")
        rows.append(cells)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in
                               zip(row, widths, strict=True)).rstrip()
                     for row in rows)
