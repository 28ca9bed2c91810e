"""The plugin base classes derive the form a plugin does not write
(``scheduler.filters``, ``scheduler.weights`` and their shared shapes
``capacity`` and ``attribute``), and the plugin guard contains a plugin
that writes one form only as it contains one that writes both."""

import math

import numpy as np
import pytest

from scheduler import filters
from scheduler import weights
from scheduler.engine import plugin_guard
from scheduler.filters.capacity import CapacityFilter
from scheduler.hosts.table import HostTable
from scheduler.weights.attribute import AttributeWeigher
from tests.fakes import make_host
from tests.unit.engine.fakes import SICK
from tests.unit.engine.fakes import errors_counted
from tests.unit.engine.fakes import fleet
from tests.unit.engine.fakes import make
from tests.unit.engine.fakes import spec


@pytest.fixture(autouse=True)
def fresh_error_log():
    plugin_guard.errors.reset()
    yield
    plugin_guard.errors.reset()


class BigFilter(filters.BaseHostFilter):
    """Column form only: hosts with at least 8 vCPUs."""

    def passes(self, table, spec):
        return table.attribute("vcpus") >= 8

    def why_rejected(self, host, spec):
        return filters.Rejection("small", f"{host.vcpus} vCPUs")


class TerseFilter(filters.BaseHostFilter):
    """Column form only, without a word on why."""

    def passes(self, table, spec):
        return table.attribute("vcpus") >= 8


class SmallFilter(filters.BaseHostFilter):
    """Per-host form only: hosts with fewer than 8 vCPUs."""

    def reject(self, host, spec):
        return filters.Rejection("big") if host.vcpus >= 8 else None


def test_a_column_filter_gets_its_per_host_form(conf):
    hosts = [make_host("a", vcpus=4), make_host("b", vcpus=8)]
    plugin = BigFilter(conf)
    assert plugin.reject(hosts[0], spec()) == filters.Rejection(
        "small", "4 vCPUs")
    assert plugin.reject(hosts[1], spec()) is None
    assert plugin.rejections(hosts, spec()) == [
        filters.Rejection("small", "4 vCPUs"), None]
    assert TerseFilter(conf).rejections(hosts, spec()) == [
        filters.UNEXPLAINED, None]


def test_the_derived_form_keeps_the_class_rule_when_an_instance_has_none(
        conf):
    plugin = BigFilter(conf)
    plugin.passes = lambda table, spec: None
    assert plugin.reject(make_host(vcpus=4), spec()).reason == "small"


def test_a_per_host_filter_has_no_column_form(conf):
    plugin = SmallFilter(conf)
    hosts = [make_host("a", vcpus=4), make_host("b", vcpus=8)]
    assert plugin.passes(HostTable(hosts), spec()) is None
    assert [r and r.reason for r in plugin.rejections(hosts, spec())] == [
        None, "big"]
    assert not SmallFilter.writes_column_form
    assert BigFilter.writes_column_form


def test_a_filter_without_any_form_says_so(conf):
    with pytest.raises(NotImplementedError):
        filters.BaseHostFilter(conf).rejections([make_host()], spec())


def test_a_derived_form_refuses_a_malformed_column(conf):
    class Wrong(filters.BaseHostFilter):
        def passes(self, table, spec):
            return np.ones(len(table) + 1, dtype=bool)

    with pytest.raises(TypeError, match="expected bool of shape"):
        Wrong(conf).reject(make_host(), spec())


def test_a_column_filter_raising_on_one_value_removes_that_host(conf):
    class Picky(filters.BaseHostFilter):
        def passes(self, table, spec):
            return table.column("picky", bool, lambda host: {
                "a": True, "c": True}[host.host])

    decision = make(conf, [Picky(conf)]).explain(spec(), fleet())
    assert sorted(h.host for h in decision.selected) == ["a", "c"]
    sick, = [r for r in decision.results if r.host.host == SICK]
    assert sick.reason == "Picky failed: KeyError"
    assert errors_counted("Picky") >= 3


def test_why_rejected_raising_keeps_the_host_removed(conf):
    class Mute(filters.BaseHostFilter):
        def passes(self, table, spec):
            return np.array([h.host != SICK for h in table.hosts])

        def why_rejected(self, host, spec):
            raise KeyError("x")

    decision = make(conf, [Mute(conf)]).explain(spec(), fleet())
    assert sorted(h.host for h in decision.selected) == ["a", "c"]
    sick, = [r for r in decision.results if r.host.host == SICK]
    assert sick.reason == "Mute failed: KeyError"


def test_a_column_filter_words_its_removals_without_judging_again(conf):
    judged = []

    class Counting(BigFilter):
        def passes(self, table, spec):
            judged.append(len(table))
            return super().passes(table, spec)

    decision = make(conf, [Counting(conf)]).explain(
        spec(), [make_host("a", vcpus=4), make_host("b", vcpus=8)])
    assert [(r.host.host, r.reason, r.detail) for r in decision.results] == [
        ("b", None, None), ("a", "small", "4 vCPUs")]
    assert judged == [2]


class GpuFilter(CapacityFilter):
    """A third party's capacity: the flavor's vCPUs against the host's
    instance slots (any numeric attributes do)."""

    flavor_amount = "vcpus"
    free = "free_vcpus"
    capacity = "vcpus"
    ratio = "cpu_allocation_ratio"
    resource = "slots"
    unit = "slots"


@pytest.mark.parametrize(("vcpus", "claimed", "ratio", "reason"), [
    (8, 0, 1.0, None),
    (8, 6, 1.0, "insufficient slots"),
    (2, 0, 4.0, "instance larger than the node's slots"),
])
def test_the_capacity_shape_serves_any_resource(conf, vcpus, claimed, ratio,
                                                reason):
    host = make_host(vcpus=vcpus, vcpus_claimed=claimed,
                     cpu_allocation_ratio=ratio)
    rejection = GpuFilter(conf).reject(host, spec(vcpus=4))
    assert (rejection and rejection.reason) == reason


@pytest.mark.parametrize("vcpus", [0, 1])
def test_a_subclass_may_narrow_the_verdicts_it_inherits_in_place(conf,
                                                                  vcpus):
    # Every host has room (or the flavor asks none): the verdicts the
    # built-in filter answers are still an array of the subclass's own.
    class EightOrMore(GpuFilter):
        def passes(self, table, spec):
            ok = super().passes(table, spec)
            ok &= table.attribute("vcpus") >= 8
            return ok

    decision = make(conf, [EightOrMore(conf)]).explain(
        spec(vcpus=vcpus), [make_host("a", vcpus=4), make_host("b", vcpus=8)])
    assert [h.host for h in decision.selected] == ["b"]


class HalfWeigher(weights.BaseHostWeigher):
    """Column form only: half the free RAM, NaN without vCPUs."""

    def raw_column(self, table, rows, spec):
        ram = table.attribute("free_ram_mb")[rows] / 2
        return np.where(table.attribute("vcpus")[rows] > 0, ram, np.nan)


class DoubleWeigher(weights.BaseHostWeigher):
    """Per-host form only."""

    def raw_weight(self, host, spec):
        return 2.0 * host.free_ram_mb


def test_a_column_weigher_gets_its_per_host_form(conf):
    hosts = [make_host("a", memory_mb=1024), make_host("b", vcpus=0)]
    plugin = HalfWeigher(conf)
    assert plugin.raw_weights(hosts, spec()) == [512.0, None]
    assert plugin.raw_weight(hosts[0], spec()) == 512.0
    plugin.raw_column = lambda table, rows, spec: None
    assert plugin.raw_weight(hosts[1], spec()) is None


def test_a_per_host_weigher_has_no_column_form(conf):
    hosts = [make_host("a", memory_mb=1024)]
    plugin = DoubleWeigher(conf)
    assert plugin.raw_column(HostTable(hosts), np.arange(1), spec()) is None
    raw, failed = plugin_guard.raw_weights(plugin, HostTable(hosts),
                                           np.arange(1), spec())
    assert raw.tolist() == [2048.0] and failed is None


def test_a_weigher_without_any_form_says_so(conf):
    with pytest.raises(NotImplementedError):
        weights.BaseHostWeigher(conf).raw_weight(make_host(), spec())


def test_a_column_weigher_raising_on_one_value_fails_that_host(conf):
    class Picky(weights.BaseHostWeigher):
        def raw_column(self, table, rows, spec):
            return table.column("picky", float, lambda host: {
                "a": 1.0, "c": 2.0}[host.host])[rows]

    table = HostTable(fleet())
    raw, failed = plugin_guard.raw_weights(Picky(conf), table,
                                           np.arange(3), spec())
    assert failed.tolist() == [False, True, False]
    assert raw[0] == 1.0 and math.isnan(raw[1]) and raw[2] == 2.0


class FreeSlotsWeigher(AttributeWeigher):
    """A third party's attribute weigher."""

    attribute = "free_vcpus"
    multiplier_option = "cpu_weight_multiplier"


def test_the_attribute_shape_serves_any_attribute(conf):
    conf.set_override("cpu_weight_multiplier", -2.0,
                      group="filter_scheduler")
    plugin = FreeSlotsWeigher(conf)
    assert plugin.multiplier(spec()) == -2.0
    assert plugin.raw_weights([make_host(vcpus=4, vcpus_claimed=1)],
                              spec()) == [3.0]
