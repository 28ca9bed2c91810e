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
import random
from collections.abc import Callable
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
    #: The weight of each host of ``selected``, in the same order.
    selected_weights: list[float] = dataclasses.field(default_factory=list)
    summary: str = ""
    # Builds ``results``, on first use only.
    _explain: Callable[[], list[HostResult]] = dataclasses.field(
        default=list, repr=False, compare=False)
    _results: list[HostResult] | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False)

    @property
    def results(self) -> list[HostResult]:
        """Every host's fate: the candidates best first, then the hosts
        filtered out, in the order they were given.

        Built on first use: one object per host and weigher costs more
        than filtering and weighing, and placing an instance needs only
        ``selected`` and ``selected_weights``.
        """
        if self._results is None:
            self._results = self._explain()
        return self._results

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


@dataclasses.dataclass
class _Weighed:
    """The candidates of one decision with their weights, by column."""

    hosts: list[hm.HostState]
    #: (weigher name, raw weights, normalised weights) per weigher.
    terms: list[tuple[str, list, list]]
    #: The sum of multiplier x normalised weight over the weighers.
    totals: list[float]


#: A host rejected by a filter or weigher (named), and why.
_Rejected = tuple[hm.HostState, str, filters.Rejection]

#: Hosts per block of _filter(): small enough for their data to stay in
#: the CPU caches, large enough for the per-call work of filters not to
#: matter.
_FILTER_BLOCK = 256

_METRIC_UNAVAILABLE = filters.Rejection(
    "required metric unavailable", "a metric it weighs is missing or stale")


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """The filters and weighers one scheduler runs, and how it scales.

    Built from ``[filter_scheduler]`` by default; a cluster policy
    (``[policy:NAME]``) builds its own. ``weighers`` pairs each weigher
    name with a factor that multiplies the weigher's own multiplier.
    ``group``, ``filters_option`` and ``weighers_option`` name where the
    names came from, for configuration errors.
    """

    filters: tuple[str, ...]
    weighers: tuple[tuple[str, float], ...]
    normalization: str
    group: str = "filter_scheduler"
    filters_option: str = "enabled_filters"
    weighers_option: str = "weight_classes"

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> "Pipeline":
        opts = conf.filter_scheduler
        return cls(tuple(opts.enabled_filters),
                   tuple((name, 1.0) for name in opts.weight_classes),
                   opts.weight_normalization)


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
                 rng: random.Random | None = None,
                 pipeline: Pipeline | None = None):
        self.conf = conf
        self.pipeline = pipeline or Pipeline.from_conf(conf)
        self.host_manager = host_manager or hm.HostManager(conf)
        self.filters: list[filters.BaseHostFilter] = _load(
            filters.NAMESPACE, self.pipeline.filters, self.pipeline.group,
            self.pipeline.filters_option, conf)
        self.weighers: list[weights.BaseHostWeigher] = _load(
            weights.NAMESPACE, [name for name, _ in self.pipeline.weighers],
            self.pipeline.group, self.pipeline.weighers_option, conf)
        self._factors = dict(self.pipeline.weighers)
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
        spec.start_call(models.utcnow())
        return self._decide(spec, hosts)

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
        # One "now" for every host and instance of the request.
        spec.start_call(models.utcnow())
        decisions = []
        for instance_uuid in uuids:
            decision = self._decide(spec, hosts)
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

    def _decide(self, spec: RequestSpec,
                hosts: Sequence[hm.HostState]) -> Decision:
        if spec.group:
            spec.group_hosts |= {h.host for h in hosts
                                 if spec.group in h.instance_groups}
        rejected: list[_Rejected] = []
        candidates = self._filter(spec, hosts, rejected)
        weighed = self._weigh(spec, candidates, rejected)
        # Indexes into weighed.hosts (the weighers may have removed hosts
        # lacking a required metric), heaviest first, ties by name.
        keys = [(-total, host.host, host.nodename) for total, host
                in zip(weighed.totals, weighed.hosts, strict=True)]
        ranked = sorted(range(len(keys)), key=keys.__getitem__)
        picked = [ranked[rank] for rank in self._pick(len(ranked))]
        # A copy: select() replaces the hosts it consumes on in its list.
        given = list(hosts)
        decision = Decision(
            selected=[weighed.hosts[i] for i in picked],
            selected_weights=[weighed.totals[i] for i in picked],
            summary="" if picked else histogram(
                len(given), [_result(record) for record in rejected]),
            _explain=lambda: _results(given, weighed, ranked, rejected))
        if LOG.isEnabledFor(logging.DEBUG):
            LOG.debug("Cost table for %s:\n%s", spec.flavor.name or "request",
                      cost_table(decision.results))
        return decision

    def _filter(self, spec: RequestSpec, hosts: Sequence[hm.HostState],
                rejected: list[_Rejected]) -> list[hm.HostState]:
        """The hosts every filter passes; the others go to ``rejected``,
        named after the first filter that rejects them."""
        active = [f for f in self.filters if f.applies(spec)]
        passed: list[hm.HostState] = []
        # A block of hosts at a time through every filter: the hosts'
        # data is still in the CPU caches when the next filter reads it,
        # which counts over a large fleet.
        for start in range(0, len(hosts), _FILTER_BLOCK):
            passed.extend(_filter_block(
                active, spec, hosts[start:start + _FILTER_BLOCK], rejected))
        return passed

    def _weigh(self, spec: RequestSpec, candidates: list[hm.HostState],
               rejected: list[_Rejected]) -> _Weighed:
        weighers = [w for w in self.weighers if w.applies(spec)]
        raw_by_weigher = self._raw_weights(spec, weighers, candidates)
        # Hosts lacking a required metric go before anything is scaled, so
        # they cannot stretch or squash how the remaining hosts compare.
        removed: set[int] = set()
        for weigher, raw in zip(weighers, raw_by_weigher, strict=True):
            if not weigher.unavailable_removes_host(spec) or None not in raw:
                continue
            for index, value in enumerate(raw):
                if value is None and index not in removed:
                    removed.add(index)
                    rejected.append((candidates[index], weigher.name,
                                     _METRIC_UNAVAILABLE))
        if removed:
            candidates = [host for index, host in enumerate(candidates)
                          if index not in removed]
            raw_by_weigher = self._raw_weights(spec, weighers, candidates)

        unavailable_weight = self.conf.metrics.weight_of_unavailable
        mode = self.pipeline.normalization
        weighed = _Weighed(candidates, [], [0.0] * len(candidates))
        for weigher, raw in zip(weighers, raw_by_weigher, strict=True):
            maximum = (normalization.weight_maximum(self.conf, weigher.name)
                       if mode == "hardmax" else None)
            normalized = normalization.normalize(mode, raw, maximum)
            multiplier = (self._factors[weigher.name]
                          * weigher.multiplier(spec))
            weighed.terms.append((weigher.name, raw, normalized))
            weighed.totals = [
                total + (unavailable_weight if norm is None
                         else multiplier * norm)
                for total, norm in zip(weighed.totals, normalized,
                                       strict=True)]
        return weighed

    @staticmethod
    def _raw_weights(spec: RequestSpec,
                     weighers: list[weights.BaseHostWeigher],
                     hosts: list[hm.HostState]) -> list[list]:
        return [w.raw_weights(hosts, spec) if hosts else []
                for w in weighers]

    def _pick(self, count: int) -> list[int]:
        """Ranks (0 is the best) of the chosen host, then the alternates,
        among ``count`` ranked candidates."""
        if not count:
            return []
        opts = self.conf.filter_scheduler
        chosen = self._rng.choice(range(min(opts.host_subset_size, count)))
        # The alternates are the best hosts but the chosen one.
        alternates = [rank for rank in range(min(opts.max_attempts, count))
                      if rank != chosen]
        return [chosen] + alternates[:opts.max_attempts - 1]


def _filter_block(active: list[filters.BaseHostFilter], spec: RequestSpec,
                  hosts: Sequence[hm.HostState],
                  rejected: list[_Rejected]) -> Sequence[hm.HostState]:
    # Filter by filter over the survivors, so a cheap early filter spares
    # later ones most hosts.
    remaining = hosts
    for host_filter in active:
        if not remaining:
            break
        verdicts = host_filter.rejections(remaining, spec)
        if verdicts.count(None) == len(remaining):
            continue  # every host passed
        name = host_filter.name
        survivors = []
        for host, rejection in zip(remaining, verdicts, strict=True):
            if rejection is None:
                survivors.append(host)
            else:
                rejected.append((host, name, rejection))
        remaining = survivors
    return remaining


def _result(record: _Rejected) -> HostResult:
    host, name, rejection = record
    return HostResult(host, name, rejection.reason, rejection.detail)


def _results(hosts: Sequence[hm.HostState], weighed: _Weighed,
             ranked: list[int],
             rejected: list[_Rejected]) -> list[HostResult]:
    """Every host's fate: the candidates best first (``ranked`` indexes
    ``weighed``), then the rejected hosts in the order given."""
    results = [HostResult(
        weighed.hosts[i], weight=weighed.totals[i],
        weights={name: WeighedTerm(raw[i], normalized[i])
                 for name, raw, normalized in weighed.terms})
        for i in ranked]
    fates = {id(record[0]): record for record in rejected}
    results.extend(_result(fates[id(host)]) for host in hosts
                   if id(host) in fates)
    return results


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
