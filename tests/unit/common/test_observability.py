"""Prometheus metrics and the decision log line, after real manager,
host-manager and planner calls over SQLite.

The metrics live in the process's default registry, shared by every
test: each test reads how much a series moved (``Delta``), never its
absolute value, so that the tests do not depend on their order.
"""

import contextlib
import logging
import re
import socket
import urllib.request
from pathlib import Path

import prometheus_client
import pytest
from sqlalchemy import exc as sa_exc

from scheduler import exception
from scheduler.common import observability
from scheduler.placement import migrations as migrations_mod
from scheduler.rpc import server
from tests.fakes import add_node
from tests.fakes import fill_secretly
from tests.fakes import make_manager
from tests.fakes import spec
from tests.fakes import uuids
from tests.unit.placement import test_balance_planner as planning

README = Path(__file__).parents[3] / "README.md"

OBSERVABILITY = "scheduler.common.observability"


def value(name: str, **labels: str) -> float:
    found = prometheus_client.REGISTRY.get_sample_value(name, labels)
    return 0.0 if found is None else found


class Delta:
    """How much some series moved since it was created."""

    def __init__(self, *series: tuple[str, dict[str, str]]):
        self._before = {self._key(name, labels): value(name, **labels)
                        for name, labels in series}

    @staticmethod
    def _key(name: str, labels: dict[str, str]) -> tuple:
        return name, tuple(sorted(labels.items()))

    def __call__(self, name: str, **labels: str) -> float:
        return (value(name, **labels)
                - self._before[self._key(name, labels)])


def decisions(outcome: str) -> list[tuple[str, dict[str, str]]]:
    return [("scheduler_decisions_total", {"outcome": outcome}),
            ("scheduler_decision_duration_seconds_count",
             {"outcome": outcome})]


@pytest.fixture
def conf(unit_ratio_config):
    return unit_ratio_config


def decide(mgr, *args, ctxt: dict | None = None):
    """select_destinations through the RPC endpoint, which writes the
    decision line: (its selections, None) or (None, the error raised)."""
    endpoint = server.SchedulerEndpoint(mgr, "sched-1")
    try:
        return endpoint.select_destinations(
            {"request_id": "req-obs-1"} if ctxt is None else ctxt,
            *args), None
    except Exception as e:  # oslo.messaging wraps the expected ones
        return None, getattr(e, "exc_info", (None, e))[1]


def decision_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "scheduler.common.observability"
            and r.getMessage().startswith("decision ")]


# Decisions by outcome


def test_placed_decision_is_counted_timed_and_logged(conf, engine,
                                                     caplog):
    add_node(engine, "a", memory_mb=16384)
    add_node(engine, "b")
    mgr = make_manager(conf)
    delta = Delta(*decisions("placed"), ("scheduler_claims_total", {}),
                  ("scheduler_decision_duration_seconds_bucket",
                   {"outcome": "placed", "le": "+Inf"}))
    with caplog.at_level(logging.INFO, logger=OBSERVABILITY):
        result, _ = decide(mgr, spec(), uuids(2))
    assert delta("scheduler_decisions_total", outcome="placed") == 1
    assert delta("scheduler_decision_duration_seconds_count",
                 outcome="placed") == 1
    assert delta("scheduler_decision_duration_seconds_bucket",
                 outcome="placed", le="+Inf") == 1
    assert delta("scheduler_claims_total") == 2
    chosen = ",".join(entries[0]["host"] for entries in result)
    line, = decision_lines(caplog)
    assert re.fullmatch(
        rf"decision request_id=req-obs-1 outcome=placed instances=2 "
        rf"chosen={chosen} candidates=2/2 duration_ms=\d+\.\d cluster=- "
        rf"policy=-", line), line


def test_no_valid_host_line_carries_the_histogram(conf, engine, caplog):
    add_node(engine, "a")
    add_node(engine, "b", disabled=True)
    mgr = make_manager(conf)
    delta = Delta(*decisions("no_valid_host"),
                  ("scheduler_filter_removed_hosts_total",
                   {"filter": "RamFilter"}),
                  ("scheduler_filter_removed_hosts_total",
                   {"filter": "ComputeFilter"}))
    with caplog.at_level(logging.INFO, logger=OBSERVABILITY):
        _, error = decide(mgr, spec(ram=10**6, cluster="c1"), uuids(1))
    assert type(error) is exception.NoValidHost
    assert delta("scheduler_decisions_total", outcome="no_valid_host") == 1
    assert delta("scheduler_decision_duration_seconds_count",
                 outcome="no_valid_host") == 1
    assert delta("scheduler_filter_removed_hosts_total",
                 filter="RamFilter") == 1
    assert delta("scheduler_filter_removed_hosts_total",
                 filter="ComputeFilter") == 1
    line, = decision_lines(caplog)
    summary = str(error)
    assert summary == ("0/2 hosts available: 1 ComputeFilter (disabled), "
                       "1 RamFilter (insufficient RAM)")
    assert re.fullmatch(
        r"decision request_id=req-obs-1 outcome=no_valid_host instances=1 "
        r"chosen=- candidates=0/2 duration_ms=\d+\.\d cluster=c1 policy=- "
        rf'summary="{re.escape(summary)}"', line), line


def test_invalid_request_is_counted_and_logged(conf, engine, caplog):
    mgr = make_manager(conf)
    delta = Delta(*decisions("invalid_request"))
    with caplog.at_level(logging.INFO, logger=OBSERVABILITY):
        _, error = decide(mgr, {"flavor": {
            "vcpus": "two", "memory_mb": 512, "root_gb": 1}}, ctxt={})
    assert type(error) is exception.InvalidRequest
    assert delta("scheduler_decisions_total",
                 outcome="invalid_request") == 1
    line, = decision_lines(caplog)
    # A context without a request id.
    assert line.startswith("decision request_id=- outcome=invalid_request "
                           "instances=- chosen=- candidates=- ")
    assert line.endswith(' policy=- error="request_spec.flavor.vcpus: '
                         '\'two\' is not of type \'integer\'"')


def test_database_error_is_an_error_outcome(conf, engine, caplog,
                                            monkeypatch):
    add_node(engine, "a")
    mgr = make_manager(conf)

    def down(now=None):
        raise sa_exc.OperationalError("SELECT", {}, Exception("refused"))

    monkeypatch.setattr(mgr.host_manager, "host_states", down)
    delta = Delta(*decisions("error"))
    with caplog.at_level(logging.INFO, logger=OBSERVABILITY):
        _, error = decide(mgr, spec(), uuids(1))
    assert isinstance(error, exception.SchedulerError)
    assert delta("scheduler_decisions_total", outcome="error") == 1
    line, = decision_lines(caplog)
    assert " outcome=error instances=1 " in line
    assert ' error="DatabaseError: select_destinations failed' in line


# What the decision is made of


def test_removals_are_counted_without_asking_filters_why(conf, engine,
                                                         monkeypatch):
    add_node(engine, "good", memory_mb=16384)
    add_node(engine, "off", disabled=True)
    add_node(engine, "tiny", memory_mb=256)
    add_node(engine, "ignored", memory_mb=16384)
    mgr = make_manager(conf)
    for host_filter in mgr.scheduler.filters:
        if host_filter.name in ("ComputeFilter", "RamFilter"):
            # Column filters: their reasons are for explain output and
            # NoValidHost summaries only.
            monkeypatch.setattr(host_filter, "rejections", None)
    names = ("ComputeFilter", "RamFilter", "IgnoreHostsFilter")
    delta = Delta(*[("scheduler_filter_removed_hosts_total",
                     {"filter": name}) for name in names])
    result, = mgr.select_destinations(spec(ignore_hosts=["ignored"]),
                                      uuids(1))
    assert result[0]["host"] == "good"
    assert {name: delta("scheduler_filter_removed_hosts_total",
                        filter=name) for name in names} == dict.fromkeys(
                            names, 1)


def test_claim_conflict_and_redecision_counters(conf, engine):
    conf.set_override("max_attempts", 1, group="filter_scheduler")
    conf.set_override("weight_classes", ["RAMWeigher"],
                      group="filter_scheduler")
    best = add_node(engine, "a", memory_mb=16384)
    add_node(engine, "b")
    mgr = make_manager(conf)
    mgr.host_manager.host_states()
    fill_secretly(engine, best, 2)
    delta = Delta(("scheduler_claim_conflicts_total", {}),
                  ("scheduler_claim_redecisions_total", {}),
                  ("scheduler_claims_total", {}))
    result, = mgr.select_destinations(spec(), uuids(1))
    assert result[0]["host"] == "b"
    stats = mgr.stats.as_dict()
    assert delta("scheduler_claim_conflicts_total") == stats["conflicts"]
    assert delta("scheduler_claim_redecisions_total") == (
        stats["redecisions"])
    assert (stats["conflicts"], stats["redecisions"]) == (1, 1)
    assert delta("scheduler_claims_total") == 1


def test_refreshes_are_timed_and_their_rows_counted(conf, engine):
    add_node(engine, "a")
    add_node(engine, "b")
    mgr = make_manager(conf)
    series = [(name, {"kind": kind}) for kind in observability.REFRESH_KINDS
              for name in ("scheduler_host_refresh_duration_seconds_count",
                           "scheduler_host_refresh_duration_seconds_sum",
                           "scheduler_host_refresh_rows_total")]
    delta = Delta(*series)
    mgr.host_manager.host_states()
    add_node(engine, "c")
    mgr.host_manager.host_states()
    last = mgr.host_manager.last_refresh
    assert not last.full
    assert delta("scheduler_host_refresh_duration_seconds_count",
                 kind="full") == 1
    assert delta("scheduler_host_refresh_rows_total", kind="full") == 2
    assert delta("scheduler_host_refresh_duration_seconds_count",
                 kind="incremental") == 1
    assert delta("scheduler_host_refresh_rows_total",
                 kind="incremental") == 1
    assert delta("scheduler_host_refresh_duration_seconds_sum",
                 kind="incremental") == pytest.approx(last.duration)


def test_planned_migrations_by_cluster_and_policy(conf, engine):
    fleet = planning.standard_fleet(engine, ticks=2)
    plan = planning.planner(conf, fleet, "evenly_distributed")
    labels = {"cluster": "c1", "policy": "evenly_distributed"}
    delta = Delta(("scheduler_migrations_planned_total", labels))
    for fleet.minute in range(3):
        fleet.report()
        plan.balance(dry_run=True)
    assert delta("scheduler_migrations_planned_total", **labels) == 0
    planned, = plan.balance()
    assert planned.state == migrations_mod.PLANNED
    assert delta("scheduler_migrations_planned_total", **labels) == 1


# The RPC endpoint


def test_endpoint_sets_the_request_id_and_logs_one_info_line(conf, engine,
                                                             caplog):
    add_node(engine, "a")
    endpoint = server.SchedulerEndpoint(make_manager(conf), "sched-1")
    with caplog.at_level(logging.INFO), \
            pytest.raises(Exception) as raised:
        endpoint.select_destinations({"request_id": "req-rpc-9"},
                                     spec(ram=10**6), uuids(1))
    # oslo.messaging's wrapper of an expected exception.
    assert type(raised.value.exc_info[1]) is exception.NoValidHost
    info = [r.getMessage() for r in caplog.records
            if r.levelno == logging.INFO]
    assert len(info) == 1, info
    assert info[0].startswith("decision request_id=req-rpc-9 "
                              "outcome=no_valid_host ")
    assert observability.request_id.get() == "-"


# The exporter and its pieces


def test_logfmt_quotes_what_would_split_a_value():
    assert observability.logfmt([
        ("a", "plain"), ("b", None), ("c", "two words"), ("d", 'q"'),
        ("e", "k=v"), ("f", ""), ("g", "line\nbreak")]) == (
        'a=plain b=- c="two words" d="q\\"" e="k=v" f="" '
        'g="line\\nbreak"')


def test_every_metric_is_listed_in_the_readme():
    registry = prometheus_client.CollectorRegistry()
    observability.Metrics(registry)
    names = {metric.name + ("_total" if metric.type == "counter" else "")
             for metric in registry.collect()}
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Metrics and logs"):]
    section = section[:section.index("\n## ")]
    listed = set(re.findall(r"^\| `(scheduler_\w+)`", section, re.M))
    assert listed == names


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_serve_is_off_with_port_zero(conf):
    assert observability.serve(conf, workers=1) is None


def test_serve_publishes_the_metrics(conf, engine):
    conf.set_override("metrics_port", free_port(), group="scheduler")
    conf.set_override("metrics_host", "127.0.0.1", group="scheduler")
    add_node(engine, "a")
    exporter = observability.serve(conf, workers=1)
    try:
        decide(make_manager(conf), spec(), uuids(1))
        url = f"http://127.0.0.1:{conf.scheduler.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
    finally:
        exporter.shutdown()
        exporter.server_close()
    found = re.search(r'^scheduler_decisions_total\{outcome="placed"\} '
                      r'(\S+)$', text, re.M)
    assert found and float(found.group(1)) >= 1


def test_a_port_in_use_is_a_config_error(conf):
    with contextlib.closing(socket.socket()) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        conf.set_override("metrics_port", port, group="scheduler")
        conf.set_override("metrics_host", "127.0.0.1", group="scheduler")
        with pytest.raises(exception.ConfigError,
                           match=rf"\[scheduler\] metrics_port: cannot "
                           rf"listen on 127.0.0.1:{port}"):
            observability.serve(conf, workers=1)


def test_an_unwritable_state_path_is_a_config_error(conf, tmp_path):
    state = tmp_path / "state-is-a-file"
    state.write_text("")
    conf.set_override("state_path", str(state))
    conf.set_override("metrics_port", free_port(), group="scheduler")
    conf.set_override("metrics_host", "127.0.0.1", group="scheduler")
    with pytest.raises(exception.ConfigError,
                       match=r"\[DEFAULT\] state_path: cannot create "):
        observability.serve(conf, workers=2)
    # The port was given back.
    with socket.socket() as again:
        again.bind(("127.0.0.1", conf.scheduler.metrics_port))


def test_endpoint_refusals_get_a_decision_line_too(conf, caplog):
    endpoint = server.SchedulerEndpoint(make_manager(conf), "sched-1")
    delta = Delta(*decisions("invalid_request"))
    with caplog.at_level(logging.INFO), \
            pytest.raises(Exception) as raised:
        endpoint.select_destinations({"request_id": "req-rpc-10"}, spec(),
                                     uuids(1), return_alternates="yes")
    assert type(raised.value.exc_info[1]) is exception.InvalidRequest
    info = [r.getMessage() for r in caplog.records
            if r.levelno == logging.INFO]
    assert len(info) == 1, info
    assert info[0].startswith("decision request_id=req-rpc-10 "
                              "outcome=invalid_request ")
    assert info[0].endswith(
        " error=\"return_alternates: 'yes' is not of type 'boolean'\"")
    assert delta("scheduler_decisions_total",
                 outcome="invalid_request") == 1
