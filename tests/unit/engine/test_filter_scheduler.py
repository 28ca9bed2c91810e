"""The filter scheduler end to end over in-memory host states."""

import datetime
import logging

import numpy as np
import pytest

from scheduler import exception
from scheduler.db import models
from scheduler.engine import filter_scheduler
from scheduler.hosts import state as hm
from tests.unit.engine.fakes import host
from tests.unit.engine.fakes import scheduler
from tests.unit.engine.fakes import spec

GIB = 2**30


def test_most_free_ram_wins_with_alternates(conf):
    hosts = [host("a", ram_mb=4096), host("b", ram_mb=16384),
             host("c", ram_mb=8192), host("d", ram_mb=2048)]
    decision, = scheduler(conf, weight_classes=["RAMWeigher"]).select(
        spec(), hosts)
    assert [h.host for h in decision.selected] == ["b", "c", "a"]


def test_no_valid_host_histogram(conf):
    hosts = [host("a", ram_mb=512), host("b", ram_mb=512),
             host("c", disabled=True, disabled_reason="maintenance"),
             host("d", ram_mb=512)]
    with pytest.raises(exception.NoValidHost) as error:
        scheduler(conf).select(spec(ram=1024), hosts)
    assert str(error.value) == ("0/4 hosts available: 3 RamFilter "
                                "(insufficient RAM), 1 ComputeFilter "
                                "(disabled)")


def test_threshold_reason_in_histogram(conf):
    hosts = [host("a", metrics={"network.rx.bps": 90e6}),
             host("b", metrics={"network.rx.bps": 86e6})]
    with pytest.raises(exception.NoValidHost) as error:
        scheduler(conf).select(spec(extra_specs={
            "resources:network.rx.bps": "<85M"}), hosts)
    assert str(error.value) == ("0/2 hosts available: 2 "
                                "ResourcesThresholdFilter "
                                "(network.rx.bps<85M)")


def test_instances_consume_resources_between_placements(conf):
    hosts = [host("a", ram_mb=2048), host("b", ram_mb=2048)]
    sched = scheduler(conf, ram_allocation_ratio=1.0)
    decisions = sched.select(spec(ram=1024, num_instances=4), hosts)
    placed = sorted(d.selected[0].host for d in decisions)
    assert placed == ["a", "a", "b", "b"]
    # The caller's host states are untouched: consumption works on copies.
    assert hosts[0].memory_mb_claimed == 0
    with pytest.raises(exception.NoValidHost):
        sched.select(spec(ram=1024, num_instances=5), hosts)


def test_host_subset_size_picks_among_the_best(conf):
    hosts = [host(f"h{i}", ram_mb=1024 * (i + 2)) for i in range(6)]
    sched = scheduler(conf, host_subset_size=3,
                      weight_classes=["RAMWeigher"])
    chosen = {sched.select(spec(), hosts)[0].selected[0].host
              for _ in range(60)}
    assert chosen == {"h5", "h4", "h3"}


class _NoDraws:
    def choice(self, _seq):
        raise AssertionError("a subset of one host needs no draw")


def test_a_subset_of_one_takes_the_best_without_a_draw(conf):
    hosts = [host(f"h{i}", ram_mb=1024 * (i + 2)) for i in range(3)]
    conf.set_override("weight_classes", ["RAMWeigher"], "filter_scheduler")
    sched = filter_scheduler.FilterScheduler(conf, rng=_NoDraws())
    decision, = sched.select(spec(), hosts)
    assert [h.host for h in decision.selected] == ["h2", "h1", "h0"]


def test_required_metric_missing_removes_host_not_crash(conf):
    hosts = [host("a", metrics={"memory.free": 4 * GIB}),
             host("b", metrics={"memory.free": 8 * GIB}),
             host("c")]
    sched = scheduler(conf, weight_classes=["MetricsWeigher"],
                      weight_setting="memory.free=1.0")
    decision = sched.explain(spec(), hosts)
    assert [h.host for h in decision.selected] == ["b", "a"]
    removed = [r for r in decision.results if r.host.host == "c"][0]
    assert removed.filtered_by == "MetricsWeigher"
    assert removed.weight is None


def test_optional_metric_missing_does_not_change_the_others(conf):
    with_metrics = [host("a", metrics={"memory.free": 4 * GIB}),
                    host("b", metrics={"memory.free": 8 * GIB}),
                    host("c", metrics={"memory.free": 6 * GIB})]
    sched = scheduler(conf, weight_classes=["MetricsWeigher"],
                      weight_setting="memory.free=1.0", required=False)
    alone = sched.explain(spec(), with_metrics)
    mixed = sched.explain(spec(), with_metrics + [host("x")])
    weights = {r.host.host: r.weight for r in alone.results}
    assert weights == {"a": 0.0, "b": 1.0, "c": 0.5}
    assert {r.host.host: r.weight for r in mixed.results} == {
        **weights, "x": conf.metrics.weight_of_unavailable}
    assert [h.host for h in mixed.selected] == ["b", "c", "a"]


def test_burst_spreads_by_pending_memory(conf):
    """A burst weighed by memory.free must not pile onto the host that
    looked best at the last report: claims count as pending memory."""
    hosts = [host(n, ram_mb=65536, metrics={"memory.free": free * GIB,
                                            "memory.total": 64 * GIB})
             for n, free in (("a", 20), ("b", 19), ("c", 18))]
    sched = scheduler(conf, weight_classes=["MetricsWeigher"],
                      weight_setting="memory.free=1.0")
    decisions = sched.select(spec(ram=4096, num_instances=6), hosts)
    placed = [d.selected[0].host for d in decisions]
    assert set(placed) == {"a", "b", "c"}
    assert max(placed.count(h) for h in "abc") <= 3


def test_stale_metrics_are_unavailable(conf):
    old = models.utcnow() - datetime.timedelta(seconds=600)
    stale = host("a")
    stale.metrics = {"memory.free": hm.Metric(100 * GIB, old)}
    fresh = host("b", metrics={"memory.free": 1 * GIB})
    sched = scheduler(conf, weight_classes=["MetricsWeigher"],
                      weight_setting="memory.free=1.0")
    decision = sched.explain(spec(), [stale, fresh])
    assert [h.host for h in decision.selected] == ["b"]


def test_explain_dict_shape(conf):
    hosts = [host("a"), host("b", ram_mb=256)]
    result = scheduler(conf).explain(spec(), hosts).as_dict()
    assert result["selected"] == ["a"] and result["summary"] == ""
    by_host = {h["host"]: h for h in result["hosts"]}
    assert by_host["b"]["filtered_by"] == "RamFilter"
    assert by_host["b"]["reason"] == "insufficient RAM"
    assert by_host["b"]["weight"] is None
    assert set(by_host["a"]["weights"]["RAMWeigher"]) == {
        "raw", "normalized", "multiplier", "weighted"}


def test_explain_gives_each_weighers_multiplied_part(conf):
    hosts = [host("a"), host("b", ram_mb=4096), host("c", ram_mb=2048)]
    sched = scheduler(conf, weight_classes=["RAMWeigher", "CPUWeigher"],
                      ram_weight_multiplier=-2.0)
    result = sched.explain(spec(), hosts).as_dict()
    for entry in result["hosts"]:
        ram = entry["weights"]["RAMWeigher"]
        cpu = entry["weights"]["CPUWeigher"]
        assert (ram["multiplier"], cpu["multiplier"]) == (-2.0, 1.0)
        assert ram["weighted"] == -2.0 * ram["normalized"]
        assert entry["weight"] == pytest.approx(
            ram["weighted"] + cpu["weighted"])
    # Least free RAM wins with a negative multiplier.
    assert result["selected"][0] == "c"


@pytest.mark.parametrize("option, value", [
    ("enabled_filters", ["RamFilter", "NoSuchFilter"]),
    ("weight_classes", ["NoSuchWeigher"]),
])
def test_unknown_plugin_is_a_config_error(conf, option, value):
    conf.set_override(option, value, group="filter_scheduler")
    with pytest.raises(exception.ConfigError) as error:
        filter_scheduler.FilterScheduler(conf)
    assert f"[filter_scheduler] {option}" in str(error.value)
    assert "NoSuch" in str(error.value)


def test_cost_table_only_built_for_debug(conf, caplog, monkeypatch):
    calls = []
    real = filter_scheduler.cost_table
    monkeypatch.setattr(filter_scheduler, "cost_table",
                        lambda r: calls.append(1) or real(r))
    sched = scheduler(conf)
    with caplog.at_level(logging.INFO, logger="scheduler"):
        sched.select(spec(), [host("a")])
    assert calls == []
    with caplog.at_level(logging.DEBUG, logger="scheduler"):
        sched.select(spec(), [host("a"), host("b", ram_mb=1)])
    assert calls == [1]
    assert "RamFilter" in caplog.text and "total" in caplog.text


def test_request_memo_lasts_one_call(conf):
    request = spec()
    calls = []

    def factory():
        calls.append(1)
        return len(calls)

    now = models.utcnow()
    request.start_call(now)
    assert request.now == now
    assert [request.memo("k", factory) for _ in range(3)] == [1, 1, 1]
    request.start_call(now)
    assert request.memo("k", factory) == 2


def test_one_now_per_request(conf, monkeypatch):
    seen = []
    sched = scheduler(conf)
    real = sched.filters[0].passes
    monkeypatch.setattr(sched.filters[0], "passes",
                        lambda table, s: seen.append(s.now) or real(table, s))
    request = spec(num_instances=3)
    sched.select(request, [host("a"), host("b")])
    assert len(seen) == 3 and len(set(seen)) == 1


def test_selected_weights_and_results_on_demand(conf):
    hosts = [host("a", ram_mb=4096), host("b", ram_mb=16384),
             host("c", ram_mb=256)]
    decision = scheduler(conf, weight_classes=["RAMWeigher"]).explain(
        spec(), hosts)
    assert [h.host for h in decision.selected] == ["b", "a"]
    assert decision.selected_weights == [1.0, 0.0]
    assert decision.results is decision.results
    assert [(r.host.host, r.weight, r.filtered_by)
            for r in decision.results] == [
        ("b", 1.0, None), ("a", 0.0, None), ("c", None, "RamFilter")]


@pytest.mark.parametrize("count", [1, 3, 5, None])
@pytest.mark.parametrize("largest", [40, 5000])
def test_best_first_is_the_head_of_the_full_ranking(count, largest):
    rng = np.random.default_rng(7)
    for _ in range(50):
        size = int(rng.integers(1, largest))
        # Few distinct weights: ties at the cut are the case to get right.
        totals = rng.integers(0, 4, size).astype(float)
        names = rng.permutation(size)
        full = np.lexsort((names, -totals))
        expected = full if count is None else full[:count]
        assert filter_scheduler.best_first(totals, names, count).tolist() \
            == expected.tolist()


@pytest.mark.parametrize("count", [2, None])
def test_best_first_of_rows_reads_their_name_ranks(count):
    rng = np.random.default_rng(3)
    names = rng.permutation(3000)
    rows = np.sort(rng.choice(3000, 2000, replace=False))
    totals = rng.integers(0, 3, len(rows)).astype(float)
    assert filter_scheduler.best_first(
        totals, names, count, rows=rows).tolist() \
        == filter_scheduler.best_first(totals, names[rows], count).tolist()


def test_best_first_with_nan_weights_sorts_everything():
    totals = np.array([np.nan, 1.0, np.nan, 2.0])
    names = np.arange(4)
    assert filter_scheduler.best_first(totals, names, 1).tolist() == [3]


@pytest.mark.parametrize("size", [4, 3000])
def test_a_nan_weight_does_not_shorten_the_best(size):
    totals = np.arange(size, dtype=float)
    totals[1] = np.nan
    assert filter_scheduler.best_first(totals, np.arange(size), 2).tolist() \
        == [size - 1, size - 2]
