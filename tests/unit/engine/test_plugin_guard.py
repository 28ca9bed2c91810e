"""Filters and weighers that raise take only their host (or request) down
(issue 18 item 7, ``scheduler.engine.plugin_guard``)."""

import logging

import numpy as np
import pytest

from scheduler import exception
from scheduler import filters
from scheduler import weights
from scheduler.engine import plugin_guard
from scheduler.filters import ram_filter
from scheduler.hosts.table import HostTable
from tests.unit.engine.fakes import SICK
from tests.unit.engine.fakes import errors_counted
from tests.unit.engine.fakes import fleet
from tests.unit.engine.fakes import host
from tests.unit.engine.fakes import make
from tests.unit.engine.fakes import spec


@pytest.fixture(autouse=True)
def fresh_error_log():
    plugin_guard.errors.reset()
    yield
    plugin_guard.errors.reset()


def tracebacks(caplog, plugin: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.exc_info
            and r.name == "scheduler.engine.plugin_guard"
            and r.getMessage().startswith(f"Plugin {plugin} raised")]


class KeyErrorFilter(filters.BaseHostFilter):
    """Per-host form only; a KeyError on the host named ``sick``."""

    def reject(self, host, spec):
        if host.host == SICK:
            raise KeyError("cpu.percent")
        return None


class ColumnKeyErrorFilter(filters.BaseHostFilter):
    """A column form that raises whenever ``sick`` is in the table; the
    per-host form raises on ``sick`` only."""

    def __init__(self, conf):
        super().__init__(conf)
        self.column_calls = 0

    def reject(self, host, spec):
        if host.host == SICK:
            raise KeyError("cpu.percent")
        return None

    def passes(self, table, spec):
        self.column_calls += 1
        if any(h.host == SICK for h in table.hosts):
            raise KeyError("cpu.percent")
        return np.ones(len(table), dtype=bool)


class WrongShapeFilter(filters.BaseHostFilter):
    def reject(self, host, spec):
        return None

    def passes(self, table, spec):
        return np.ones(len(table) + 1, dtype=bool)


class FastFilter(filters.BaseHostFilter):
    """A working column form: the per-host form must not be asked."""

    def reject(self, host, spec):
        raise AssertionError("reject() called though passes() works")

    def passes(self, table, spec):
        return np.ones(len(table), dtype=bool)


class AppliesFilter(filters.BaseHostFilter):
    def applies(self, spec):
        raise RuntimeError("boom")


class ValidatingFilter(filters.BaseHostFilter):
    def __init__(self, conf, error):
        super().__init__(conf)
        self.error = error

    def validate_request(self, spec):
        raise self.error

    def reject(self, host, spec):
        return None


class FreeRamWeigher(weights.BaseHostWeigher):
    """Free RAM, but a ZeroDivisionError on ``sick``; with a column form
    that raises when ``column_raises``."""

    def __init__(self, conf, multiplier=1.0, column_raises=False):
        super().__init__(conf)
        self._multiplier = multiplier
        self.column_raises = column_raises

    def multiplier(self, spec):
        return self._multiplier

    def raw_weight(self, host, spec):
        if host.host == SICK:
            raise ZeroDivisionError("division by zero")
        return float(host.free_ram_mb)

    def raw_column(self, table, rows, spec):
        if self.column_raises:
            raise ValueError("column bug")
        return None


class MultiplierWeigher(weights.BaseHostWeigher):
    def raw_weight(self, host, spec):
        return 1.0

    def multiplier(self, spec):
        raise TypeError("bad multiplier")


@pytest.mark.parametrize("filter_class", [KeyErrorFilter,
                                          ColumnKeyErrorFilter])
def test_a_filter_raising_on_a_host_removes_only_that_host(
        conf, caplog, filter_class):
    before = errors_counted(filter_class.__name__)
    scheduler = make(conf, [filter_class(conf)])
    caplog.set_level(logging.ERROR, logger="scheduler.engine.plugin_guard")
    decision = scheduler.explain(spec(), fleet())
    assert sorted(h.host for h in decision.selected) == ["a", "c"]
    sick, = [r for r in decision.results if r.host.host == SICK]
    assert sick.filtered_by == filter_class.__name__
    assert sick.reason == f"{filter_class.__name__} failed: KeyError"
    assert "cpu.percent" in sick.detail
    assert errors_counted(filter_class.__name__) > before
    assert len(tracebacks(caplog, filter_class.__name__)) == 1


def test_the_failed_hosts_show_in_the_no_valid_host_histogram(conf):
    scheduler = make(conf, [KeyErrorFilter(conf)])
    with pytest.raises(exception.NoValidHost) as error:
        scheduler.select(spec(), [host(SICK)])
    assert str(error.value) == (
        "0/1 hosts available: 1 KeyErrorFilter (KeyErrorFilter failed: "
        "KeyError)")


def test_a_column_form_of_the_wrong_shape_falls_back_to_each_host(conf):
    scheduler = make(conf, [WrongShapeFilter(conf)])
    decision, = scheduler.select(spec(), fleet())
    assert decision.candidates == 3
    assert errors_counted("WrongShapeFilter") >= 1


def test_a_working_column_form_asks_no_host(conf, caplog):
    scheduler = make(conf, [FastFilter(conf)])
    decision, = scheduler.select(spec(), fleet())
    assert decision.candidates == 3
    assert not tracebacks(caplog, "FastFilter")


def test_the_explanation_of_a_column_removal_survives_a_raising_reject(
        conf):
    class Removing(filters.BaseHostFilter):
        def reject(self, host, spec):
            raise KeyError("x")

        def passes(self, table, spec):
            return np.array([h.host != SICK for h in table.hosts])

    decision = make(conf, [Removing(conf)]).explain(spec(), fleet())
    sick, = [r for r in decision.results if r.host.host == SICK]
    assert sick.reason == "Removing failed: KeyError"


@pytest.mark.parametrize("column_raises", [False, True])
def test_a_weigher_raising_on_a_host_gives_it_the_lowest_weight(
        conf, column_raises):
    conf.set_override("weight_normalization", "minmax",
                      group="filter_scheduler")
    weigher = FreeRamWeigher(conf, column_raises=column_raises)
    decision = make(conf, host_weighers=[weigher]).explain(spec(), fleet())
    by_name = {r.host.host: r for r in decision.results}
    # The sick host has the most free RAM, but its weight fails: it is
    # kept, and weighed as the worst candidate (c is the best of the
    # others, a the worst).
    assert [h.host for h in decision.selected] == ["c", "a", SICK]
    term = by_name[SICK].weights["FreeRamWeigher"]
    assert term.raw is None
    assert term.normalized == 0.0
    assert by_name["c"].weights["FreeRamWeigher"].normalized == 1.0
    assert errors_counted("FreeRamWeigher") >= 1


def test_with_a_negative_multiplier_the_worst_weight_is_the_highest(conf):
    weigher = FreeRamWeigher(conf, multiplier=-1.0)
    decision = make(conf, host_weighers=[weigher]).explain(spec(), fleet())
    # Least free RAM first (a), the sick host last whatever the sign.
    assert [h.host for h in decision.selected] == ["a", "c", SICK]
    sick, = [r for r in decision.results if r.host.host == SICK]
    assert sick.weights["FreeRamWeigher"].normalized == 1.0


def test_a_weigher_raising_on_every_host_weighs_them_equally(conf):
    weigher = FreeRamWeigher(conf)
    decision = make(conf, host_weighers=[weigher]).explain(
        spec(), [host(SICK)])
    assert [h.host for h in decision.selected] == [SICK]
    assert decision.selected_weights == [0.0]


@pytest.mark.parametrize("build, method", [
    (lambda conf: make(conf, [AppliesFilter(conf)]), "applies"),
    (lambda conf: make(conf, [ValidatingFilter(conf, KeyError("k"))]),
     "validate_request"),
    (lambda conf: make(conf, host_weighers=[MultiplierWeigher(conf)]),
     "multiplier"),
])
def test_a_plugin_raising_for_the_request_fails_it_naming_the_plugin(
        conf, build, method):
    with pytest.raises(plugin_guard.PluginError) as error:
        build(conf).select(spec(), fleet())
    assert error.value.method == method
    assert str(error.value).startswith(
        f"plugin {error.value.plugin} failed in {method}: ")
    assert isinstance(error.value, exception.SchedulerError)


def test_invalid_request_from_validate_request_is_the_verdict(conf):
    refused = exception.InvalidRequest("request_spec.flavor.name: no")
    scheduler = make(conf, [ValidatingFilter(conf, refused)])
    with pytest.raises(exception.InvalidRequest) as error:
        scheduler.select(spec(), fleet())
    assert error.value is refused


def test_one_traceback_per_plugin_and_type_per_interval(caplog):
    clock = [1000.0]
    log = plugin_guard._ErrorLog(interval=60.0, clock=lambda: clock[0])
    caplog.set_level(logging.ERROR, logger="scheduler.engine.plugin_guard")
    before = errors_counted("Limited")
    for _ in range(5):
        log.report("Limited", "reject", KeyError("x"))
    log.report("Limited", "reject", ValueError("y"))
    log.report("Other", "reject", KeyError("x"))
    assert len(tracebacks(caplog, "Limited")) == 2
    assert len(tracebacks(caplog, "Other")) == 1
    clock[0] += 59.0
    log.report("Limited", "reject", KeyError("x"))
    assert len(tracebacks(caplog, "Limited")) == 2
    clock[0] += 1.0
    log.report("Limited", "reject", KeyError("x"))
    assert len(tracebacks(caplog, "Limited")) == 3
    assert errors_counted("Limited") - before == 8


def test_rejections_isolate_each_host_when_the_list_form_raises(conf):
    hosts = fleet()
    answers = plugin_guard.rejections(KeyErrorFilter(conf), hosts, spec())
    assert [a and a.reason for a in answers] == [
        None, "KeyErrorFilter failed: KeyError", None]


def test_raw_weights_mark_the_hosts_that_failed(conf):
    table = HostTable(fleet())
    raw, failed = plugin_guard.raw_weights(
        FreeRamWeigher(conf), table, np.arange(3), spec())
    assert failed.tolist() == [False, True, False]
    assert np.isnan(raw[1]) and raw[0] > 0 and raw[2] > 0


class _ReasonsFilter(filters.BaseHostFilter):
    """Removes every host; its reasons from the table as ``answer``
    says, each host's ``why_rejected`` otherwise."""

    def __init__(self, conf, answer):
        super().__init__(conf)
        self.answer = answer

    def passes(self, table, spec):
        return np.zeros(len(table), dtype=bool)

    def why_rejected(self, host, spec):
        return filters.Rejection("full", host.host)

    def rejection_reasons(self, table, rows, spec):
        return self.answer(rows)


def _no_valid_host(conf, host_filter):
    with pytest.raises(exception.NoValidHost) as error:
        make(conf, [host_filter]).select(spec(), fleet())
    return str(error.value)


def test_a_no_valid_host_summary_reads_the_reasons_from_the_table(conf):
    def forbidden(host, spec):
        raise AssertionError("asked a host")

    host_filter = _ReasonsFilter(conf, lambda rows: ["full"] * len(rows))
    host_filter.why_rejected = forbidden
    assert _no_valid_host(conf, host_filter) == (
        "0/3 hosts available: 3 _ReasonsFilter (full)")
    assert errors_counted("_ReasonsFilter") == 0


def test_the_ram_filter_summary_asks_no_host_why(conf, monkeypatch):
    def forbidden(self, host, spec):
        raise AssertionError("asked a host")

    monkeypatch.setattr(ram_filter.RamFilter, "why_rejected", forbidden)
    scheduler = make(conf, [ram_filter.RamFilter(conf)])
    with pytest.raises(exception.NoValidHost) as error:
        scheduler.select(spec(ram=10 ** 9), fleet())
    assert str(error.value) == (
        "0/3 hosts available: 3 RamFilter (insufficient RAM)")
    assert errors_counted("RamFilter") == 0


@pytest.mark.parametrize("answer", [
    lambda rows: None,
    lambda rows: ["full"] * (len(rows) - 1),
    lambda rows: [1] * len(rows),
    lambda rows: {}["raises"],
])
def test_reasons_it_cannot_read_are_asked_of_each_host(conf, answer):
    host_filter = _ReasonsFilter(conf, answer)
    summary = _no_valid_host(conf, host_filter)
    assert summary == "0/3 hosts available: 3 _ReasonsFilter (full)"


class _Narrowed(ram_filter.RamFilter):
    """Words its rejections anew: the reasons it inherits are not its."""

    def passes(self, table, spec):
        return super().passes(table, spec) & (
            table.attribute("vcpus") >= 8)

    def why_rejected(self, host, spec):
        return filters.Rejection("fewer than 8 vCPUs", host.host)


class _Judged(ram_filter.RamFilter):
    """Judges host by host, below the column form it inherits."""

    def reject(self, host, spec):
        return filters.Rejection("no room", host.host)


def test_a_subclass_wording_its_rejections_is_asked_host_by_host(conf):
    hosts = [host("a", vcpus=4), host("b", vcpus=4, ram_mb=512)]
    with pytest.raises(exception.NoValidHost) as error:
        make(conf, [_Narrowed(conf)]).select(spec(ram=1024), hosts)
    assert str(error.value) == (
        "0/2 hosts available: 2 _Narrowed (fewer than 8 vCPUs)")


def test_a_subclass_judging_host_by_host_is_asked_so(conf):
    with pytest.raises(exception.NoValidHost) as error:
        make(conf, [_Judged(conf)]).select(spec(ram=10 ** 9), fleet())
    assert str(error.value) == "0/3 hosts available: 3 _Judged (no room)"


def test_a_column_form_without_words_counts_its_hosts_as_rejected(conf):
    class Silent(filters.BaseHostFilter):
        def passes(self, table, spec):
            return np.zeros(len(table), dtype=bool)

    assert _no_valid_host(conf, Silent(conf)) == (
        "0/3 hosts available: 3 Silent (rejected)")


def test_reasons_that_raise_are_counted_as_the_plugin_s_error(conf):
    host_filter = _ReasonsFilter(conf, lambda rows: {}["raises"])
    before = errors_counted("_ReasonsFilter")
    _no_valid_host(conf, host_filter)
    assert errors_counted("_ReasonsFilter") == before + 1


def test_explain_asks_each_removed_host_why_once(conf):
    class Raising(filters.BaseHostFilter):
        def passes(self, table, spec):
            return np.zeros(len(table), dtype=bool)

        def why_rejected(self, host, spec):
            raise KeyError("x")

    before = errors_counted("Raising")
    decision = make(conf, [Raising(conf)]).explain(spec(), fleet())
    assert decision.summary == (
        "0/3 hosts available: 3 Raising (Raising failed: KeyError)")
    assert [result.reason for result in decision.results] == [
        "Raising failed: KeyError"] * 3
    assert errors_counted("Raising") == before + 3
