"""The filter scheduler: filters remove hosts, weighers order the rest.

For each instance of a request: drop every host some filter rejects,
weigh the survivors with each weigher (raw weights normalised over the
candidates, times the weigher's multiplier, summed), pick the chosen host
at random among the ``host_subset_size`` best and return it with
``max_attempts - 1`` alternates. Instances of one request consume the
resources of their hosts before the next instance is placed.
"""

import contextlib
import dataclasses
import random
from collections.abc import Iterator
from collections.abc import Sequence

import numpy as np
from oslo_config import cfg
from oslo_log import log as logging
from stevedore import named

from scheduler import exception
from scheduler import filters
from scheduler import weights
from scheduler.common import clock
from scheduler.common import observability
from scheduler.engine import decision as decision_mod
from scheduler.engine import plugin_guard
from scheduler.engine import warnings as request_warnings
from scheduler.engine.decision import Decision
from scheduler.engine.decision import HostResult  # noqa: F401 (re-export)
from scheduler.engine.decision import WeighedTerm  # noqa: F401 (re-export)
from scheduler.engine.decision import cost_table
from scheduler.engine.decision import histogram
from scheduler.hosts.cache.manager import HostManager
from scheduler.hosts.state import HostState
from scheduler.hosts.state import snapshot
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec
from scheduler.weights import normalization

LOG = logging.getLogger(__name__)


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
        # A plugin that checks its own options says which one is wrong.
        if isinstance(error, exception.ConfigError):
            raise error
        raise exception.ConfigError(group, option, entrypoint.name,
                                    f"the plugin failed to load: {error}")

    manager = named.NamedExtensionManager(
        namespace, list(dict.fromkeys(names)), invoke_on_load=True,
        invoke_args=(conf,), name_order=True,
        on_missing_entrypoints_callback=missing,
        on_load_failure_callback=failed)
    return [extension.obj for extension in manager]


class FilterScheduler:
    """Runs the configured filters and weighers over the host states."""

    def __init__(self, conf: cfg.ConfigOpts,
                 host_manager: HostManager | None = None,
                 rng: random.Random | None = None,
                 pipeline: Pipeline | None = None):
        self.conf = conf
        self.pipeline = pipeline or Pipeline.from_conf(conf)
        self.host_manager = host_manager or HostManager(conf)
        self.filters: list[filters.BaseHostFilter] = _load(
            filters.NAMESPACE, self.pipeline.filters, self.pipeline.group,
            self.pipeline.filters_option, conf)
        self.weighers: list[weights.BaseHostWeigher] = _load(
            weights.NAMESPACE, [name for name, _ in self.pipeline.weighers],
            self.pipeline.group, self.pipeline.weighers_option, conf)
        self._factors = dict(self.pipeline.weighers)
        normalization.validate_weight_maximums(conf)
        self._rng = rng or random.SystemRandom()
        self._metrics = observability.metrics()

    def validate(self, spec: RequestSpec) -> None:
        """Reject malformed input before any host is looked at."""
        for host_filter in self.filters:
            plugin_guard.hook(host_filter, "validate_request", spec)

    def explain(self, spec: RequestSpec,
                hosts: Sequence[HostState] | None = None) -> Decision:
        """The decision for the first instance of ``spec``, no claim."""
        self.validate(spec)
        with self._table(hosts) as table:
            spec.start_call(clock.utcnow())
            decision = self._decide(spec, table)
        # Not logged: the caller shows them (scheduler-manage explain on
        # stderr, the REST API and RPC in the document).
        decision.warnings = request_warnings.collect(
            spec, self.conf, self.filters, log=False)
        return decision

    def select(self, spec: RequestSpec,
               hosts: Sequence[HostState] | None = None,
               instances: Sequence[str] | None = None
               ) -> list[Decision]:
        """One decision per instance (``instances``, by default those of
        ``spec``); raises NoValidHost when one does not fit. The
        resources of each chosen host are consumed (on copies) before the
        next instance is placed. Each call is a decision of its own
        (``spec.start_call``): one spec serves every round of a
        request."""
        self.validate(spec)
        return self.select_valid(spec, hosts, instances)

    def select_valid(self, spec: RequestSpec,
                     hosts: Sequence[HostState] | None = None,
                     instances: Sequence[str] | None = None
                     ) -> list[Decision]:
        """``select`` for a spec its caller validated (``validate``) at
        the front of the request, once for all its rounds."""
        # Logged (once each), as no explain output shows them here.
        request_warnings.collect(spec, self.conf, self.filters)
        if instances is None:
            instances = spec.instance_uuids or [None] * spec.num_instances
        with self._table(hosts) as table:
            return self._select(spec, table, list(instances))

    def _select(self, spec: RequestSpec, table: HostTable,
                uuids: list[str | None]) -> list[Decision]:
        flavor = spec.flavor
        # One "now" for every host and instance of the request.
        spec.start_call(clock.utcnow())
        decisions = []
        for number, instance_uuid in enumerate(uuids):
            decision = self._decide(spec, table)
            self._metrics.removed(decision.removed_by)
            if not decision.selected:
                raise exception.NoValidHost(decision.summary)
            # Copy-on-write: the chosen host is copied before consume(),
            # so the shared cache stays untouched.
            chosen, = snapshot(decision.selected[:1])
            chosen.consume(flavor.vcpus, flavor.memory_mb, flavor.disk_gb,
                           instance_uuid, spec.group)
            decision.selected[0] = chosen
            if spec.group:
                spec.group_hosts.add(chosen.host)
            decisions.append(decision)
            if number + 1 < len(uuids):
                table = table.replaced({decision.selected_rows[0]: chosen})
        return decisions

    @contextlib.contextmanager
    def _table(self, hosts: Sequence[HostState] | None
               ) -> Iterator[HostTable]:
        """The table of ``hosts``, or the host cache's, for one decision:
        leased, so that the cache's next version may take its columns
        over once the decision is made."""
        if hosts is not None:
            yield HostTable(list(hosts))
            return
        with self.host_manager.leased_table() as table:
            yield table

    def _decide(self, spec: RequestSpec, table: HostTable) -> Decision:
        hosts = table.hosts
        if spec.group:
            spec.group_hosts |= {h.host for h in hosts
                                 if spec.group in h.instance_groups}
        removed = decision_mod.Removed(hosts)
        candidates = self._filter(spec, table, removed)
        weighed = self._weigh(spec, table, candidates, removed)
        opts = self.conf.filter_scheduler
        best = best_first(weighed.totals, table.name_rank(),
                          max(opts.host_subset_size, opts.max_attempts),
                          rows=weighed.rows)
        picked = [int(best[rank]) for rank in self._pick(len(best))]
        picked_rows = weighed.rows[picked].tolist()
        decision = Decision(
            selected=[hosts[row] for row in picked_rows],
            selected_weights=weighed.totals[picked].tolist(),
            selected_rows=picked_rows,
            candidates=len(weighed.rows), hosts=len(hosts),
            removed_by=removed.counts(),
            summary="" if picked else histogram(
                len(hosts), removed.reasons(spec, table)),
            _explain=lambda: decision_mod.results_of(
                table, weighed, weighed.rows[best_first(
                    weighed.totals, table.name_rank(), rows=weighed.rows)],
                removed, spec))
        if LOG.isEnabledFor(logging.DEBUG):
            LOG.debug("Cost table for %s:\n%s", spec.flavor.name or "request",
                      cost_table(decision.results))
        return decision

    def _filter(self, spec: RequestSpec, table: HostTable,
                removed: decision_mod.Removed) -> np.ndarray:
        """Positions of the hosts every filter passes; the others are
        recorded in ``removed`` under the first filter that rejects
        them. Plugins that raise: ``plugin_guard``."""
        alive = np.ones(len(table), dtype=bool)
        for host_filter in self.filters:
            if not plugin_guard.hook(host_filter, "applies", spec):
                continue
            verdicts = plugin_guard.passes(host_filter, table, spec)
            if verdicts is None:
                # No (working) column form: ask the filter about the
                # hosts left.
                rows = np.flatnonzero(alive)
                answers = plugin_guard.rejections(
                    host_filter, table.hosts.take(rows.tolist()), spec)
                for row, rejection in zip(rows.tolist(), answers,
                                          strict=True):
                    if rejection is not None:
                        alive[row] = False
                        removed.add(row, host_filter, rejection)
            elif not verdicts.all():
                # (Most filters pass every host of a healthy fleet: one
                # reduction then, not a mask, its test and an update.)
                removed.add_all(alive & ~verdicts, host_filter)
                alive &= verdicts
        return np.flatnonzero(alive)

    def _weigh(self, spec: RequestSpec, table: HostTable,
               candidates: np.ndarray,
               removed: decision_mod.Removed) -> decision_mod.Weighed:
        weighers = [w for w in self.weighers
                    if plugin_guard.hook(w, "applies", spec)]
        # (raw weights, where the weigher raised or None) per weigher.
        raws = [plugin_guard.raw_weights(w, table, candidates, spec)
                for w in weighers]
        # Hosts lacking a required metric go before anything is scaled, so
        # they cannot stretch or squash how the remaining hosts compare.
        lacking = np.zeros(len(candidates), dtype=bool)
        for weigher, (raw, failed) in zip(weighers, raws, strict=True):
            if (plugin_guard.hook(weigher, "unavailable_removes_host", spec)
                    and normalization.has_nan(raw)):
                newly = np.isnan(raw) & ~lacking
                if failed is not None:
                    newly &= ~failed
                if not newly.any():
                    continue
                for row in candidates[newly].tolist():
                    removed.add(row, weigher, _unavailable(
                        weigher, table.hosts[row], spec))
                lacking |= newly
        if lacking.any():
            candidates = candidates[~lacking]
            raws = [plugin_guard.raw_weights(w, table, candidates, spec)
                    for w in weighers]

        unavailable_weight = self.conf.metrics.weight_of_unavailable
        mode = self.pipeline.normalization
        weighed = decision_mod.Weighed(candidates, [],
                                       np.zeros(len(candidates)))
        for weigher, (raw, failed) in zip(weighers, raws, strict=True):
            maximum = (normalization.weight_maximum(self.conf, weigher.name)
                       if mode == "hardmax" else None)
            multiplier = (self._factors[weigher.name]
                          * plugin_guard.hook(weigher, "multiplier", spec))
            normalized = plugin_guard.worst(
                normalization.normalize_array(mode, raw, maximum), failed,
                multiplier)
            # 1.0 x a weight is that weight: no pass for the usual
            # multiplier; nor a masked choice when nobody lacks a value.
            weighted = (normalized if multiplier == 1.0
                        else multiplier * normalized)
            if normalization.has_nan(normalized):
                weighted = np.where(np.isnan(normalized), unavailable_weight,
                                    weighted)
            weighed.terms.append((weigher.name, raw, normalized,
                                  float(multiplier), weighted))
            weighed.totals += weighted
        return weighed

    def _pick(self, count: int) -> list[int]:
        """Ranks (0 is the best) of the chosen host, then the alternates,
        among ``count`` ranked candidates."""
        if not count:
            return []
        opts = self.conf.filter_scheduler
        subset = min(opts.host_subset_size, count)
        # The best, without a draw, from a subset of one (the default):
        # SystemRandom makes a system call for each.
        chosen = self._rng.choice(range(subset)) if subset > 1 else 0
        # The alternates are the best hosts but the chosen one.
        alternates = [rank for rank in range(min(opts.max_attempts, count))
                      if rank != chosen]
        return [chosen] + alternates[:opts.max_attempts - 1]


def best_first(totals: np.ndarray, name_ranks: np.ndarray,
               count: int | None = None,
               rows: np.ndarray | None = None) -> np.ndarray:
    """Positions of the ``count`` heaviest ``totals`` (None: of all),
    heaviest first, equal totals by ``name_ranks`` (with ``rows``, the
    ranks of a whole table, total i being row ``rows[i]``'s).

    A decision needs the chosen host and its alternates only: partitioning
    around the count-th weight then sorting what is at least that heavy
    costs a fraction of sorting every candidate (at 100,000 hosts, a
    sort took several milliseconds); the name ranks of those few only are
    looked up.
    """
    near = None
    if count is not None and count < len(totals):
        threshold = _at_most_the_heaviest(totals, count)
        if not np.isnan(threshold):  # NaN sorts last: the full sort then
            # Every host as heavy as the count-th: ties at the cut are
            # ordered by name like the rest.
            near = np.flatnonzero(totals >= threshold)
    if near is None:
        near = np.arange(len(totals))
    ranks = name_ranks[near if rows is None else rows[near]]
    order = near[np.lexsort((ranks, -totals[near]))]
    return order if count is None else order[:count]


#: Totals per block whose heaviest _at_most_the_heaviest() compares.
_BLOCK = 512


def _at_most_the_heaviest(totals: np.ndarray, count: int) -> float:
    """A total no heavier than the ``count``-th heaviest, or NaN when a
    total is NaN (the caller then sorts them all: NaN goes last).

    The ``count``-th heaviest of the blocks' heaviest totals will do: at
    least ``count`` totals (those block maxima) weigh as much. One pass
    over the totals and a partition of a few hundred maxima cost a
    fraction of partitioning every candidate (a tenth of a decision at
    100,000 hosts).
    """
    blocks = len(totals) // _BLOCK
    if blocks <= count:
        if np.isnan(totals).any():
            return np.nan
        cut = len(totals) - count
        return np.partition(totals, cut)[cut]
    heaviest = totals[:blocks * _BLOCK].reshape(blocks, _BLOCK).max(axis=1)
    if blocks * _BLOCK < len(totals):
        heaviest = np.append(heaviest, totals[blocks * _BLOCK:].max())
    if np.isnan(heaviest).any():
        return np.nan
    cut = len(heaviest) - count
    return np.partition(heaviest, cut)[cut]


def _unavailable(weigher: weights.BaseHostWeigher, host: HostState,
                 spec: RequestSpec) -> filters.Rejection:
    """Why the weigher's required value is missing on ``host``."""
    try:
        why = weigher.why_unavailable(host, spec)
    except Exception as e:
        # Only the explanation failed: the host goes all the same.
        plugin_guard.errors.report(weigher.name, "why_unavailable", e)
        why = None
    return why or _METRIC_UNAVAILABLE
