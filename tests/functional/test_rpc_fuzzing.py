"""The wire format fuzzed against the real manager: every request gets a
result or an error of the RPC contract."""

import uuid
import warnings

import pytest
from hypothesis import HealthCheck
from hypothesis import event
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler import exception
from scheduler import manager as manager_mod
from scheduler.conf import messaging as messaging_conf
from scheduler.db import api as db_api
from scheduler.rpc import rpcapi
from scheduler.rpc import server
from tests.functional.rpc_harness import FLEET
from tests.functional.rpc_harness import make_fleet

# Fuzzing the wire format against the real manager


class _InProcessBus:
    """The real SchedulerManager on SQLite behind the real endpoint, over
    kombu+memory in this process (fast enough for hundreds of examples)."""

    def __init__(self, db_url: str) -> None:
        make_fleet(db_url)
        conf = cfg.ConfigOpts()
        scheduler_conf.register_opts(conf)
        messaging_conf.register_messaging_opts(conf)
        conf([])
        unique = uuid.uuid4().hex[:12]
        conf.set_override("connection", db_url, group="database")
        conf.set_override("transport_url", "kombu+memory:////")
        conf.set_override("control_exchange", f"fuzz-{unique}")
        conf.set_override("scheduler_topic", f"scheduler-{unique}")
        conf.set_override("driver", ["noop"],
                          group="oslo_messaging_notifications")
        self.manager = manager_mod.SchedulerManager(conf)
        self.service = server.SchedulerRPCService(conf, self.manager)
        assert self.service.start()
        self.api = rpcapi.SchedulerAPI(conf, timeout=60)

    def close(self) -> None:
        self.api.close()
        self.service.stop()
        db_api.dispose_engines()


@pytest.fixture(scope="module")
def fuzz_bus(tmp_path_factory):
    bus = _InProcessBus(
        f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'fuzz.sqlite'}")
    yield bus
    bus.close()


_scalars = (st.none() | st.booleans() | st.integers(-2**64, 2**64)
            | st.floats() | st.text(max_size=12))
_json = st.recursive(
    _scalars, lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=8)


def _maybe(valid: st.SearchStrategy) -> st.SearchStrategy:
    """Mostly well-formed values, one in ten anything JSON can carry: a
    spec has a dozen fields, and most specs should get past validation."""
    # The garbage branch on the largest value: hypothesis favours small
    # ones, and shrinks towards well-formed values.
    return st.integers(0, 9).flatmap(lambda n: _json if n == 9 else valid)


def _rarely_with(base: st.SearchStrategy, key: str) -> st.SearchStrategy:
    """``base`` dicts, one in twenty with an unknown ``key`` added."""
    return st.tuples(base, st.integers(0, 19), _json).map(
        lambda t: {**t[0], key: t[2]} if t[1] == 19 else t[0])


_extra_specs = st.dictionaries(
    # Keys: JSON object keys are strings whatever the caller had.
    st.sampled_from(["resources:cpu.percent", "resources:memory.free",
                     "resources:network.rx.bps", "resources:",
                     "hw:cpu_policy", "capabilities:arch"])
    | st.text(max_size=20),
    _maybe(st.sampled_from(["max", "min", "<85M", ">= 1.5G", "==2", "!=0",
                            "<abc", "maxx", "<=1Ki", "x86_64", ">1e400"])
           | st.text(max_size=12)),
    max_size=3)
_flavor = _rarely_with(st.fixed_dictionaries(
    {"vcpus": _maybe(st.integers(-1, 16)),
     "memory_mb": _maybe(st.integers(-1, 70000)),
     "root_gb": _maybe(st.integers(-1, 200))},
    optional={"name": _maybe(st.text(max_size=10)),
              "ephemeral_gb": _maybe(st.integers(0, 10)),
              "extra_specs": _maybe(_extra_specs)}), "swap")
_hosts = st.lists(_maybe(st.sampled_from(FLEET + ("off", "nowhere"))),
                  max_size=3)
_hints = st.fixed_dictionaries({}, optional={
    "same_host": _maybe(_hosts), "different_host": _maybe(_hosts),
    "group": _maybe(st.text(max_size=8)),
    "group_policy": _maybe(st.sampled_from(
        ["affinity", "anti-affinity", "soft-affinity",
         "soft-anti-affinity", "bogus"])),
    "query": _maybe(st.sampled_from([
        '[">=", "$free_ram_mb", 1024]', '["and"]', "[", '["nosuchop", 1]',
        '["=", "$metrics.cpu.percent", 1]'])),
})
_spec = _rarely_with(st.fixed_dictionaries({
    "flavor": _maybe(_flavor)}, optional={
    "num_instances": _maybe(st.integers(-1, 3)),
    "availability_zone": _maybe(st.sampled_from(["nova", "az2"])),
    "cluster": _maybe(st.sampled_from(["c1", "c2"])),
    "scheduler_hints": _maybe(_hints),
    "ignore_hosts": _maybe(_hosts),
    "force_hosts": _maybe(_hosts),
    "force_nodes": _maybe(_hosts),
    "requested_networks": _maybe(st.lists(st.sampled_from(
        ["public", "private"]), max_size=2)),
    "image": _maybe(st.fixed_dictionaries({}, optional={
        "properties": st.dictionaries(st.text(max_size=8), _scalars,
                                      max_size=3)})),
}), "flavour")
_uuids = st.none() | _maybe(st.lists(st.uuids().map(str), max_size=3))


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(method=st.sampled_from(["select_destinations", "explain"]),
       spec=_maybe(_spec), instance_uuids=_uuids,
       return_alternates=_maybe(st.booleans()))
def test_fuzzed_requests_get_a_result_or_a_contract_error(
        fuzz_bus, method, spec, instance_uuids, return_alternates):
    api = fuzz_bus.api
    with warnings.catch_warnings():
        # jsonutils warns about values it has to stringify (none here).
        warnings.simplefilter("ignore")
        try:
            if method == "explain":
                decision = api.explain(spec)
                assert set(decision) >= {"selected", "summary", "hosts"}
                event("explain: decided")
                return
            result = api.select_destinations(spec, instance_uuids,
                                             return_alternates)
        except (exception.InvalidRequest, exception.NoValidHost) as e:
            # Statistics (--hypothesis-show-statistics) show the mix.
            event(f"{method}: {type(e).__name__} {str(e).split(':')[0]}")
            assert type(e) in (exception.InvalidRequest,
                               exception.NoValidHost)
            assert str(e) and len(str(e)) < 2000
            return
    event("select_destinations: placed")
    # Placed: one list per instance, each led by a claim; give it back so
    # that the fleet does not fill up over the examples.
    assert result and all(entries[0]["allocation_id"] for entries in result)
    if isinstance(instance_uuids, list) and instance_uuids:
        released = instance_uuids
    else:
        released = [entries[0]["allocation_id"] for entries in result]
    for instance in released:
        assert api.release(instance) is True
