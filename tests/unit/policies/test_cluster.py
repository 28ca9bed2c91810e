"""Cluster policies: [policy:NAME] groups, the built-ins, the mapping of
clusters and the start-up errors."""

import pytest
from oslo_config import cfg

from scheduler import exception
from scheduler.cmd import common
from scheduler.engine import filter_scheduler
from scheduler.policies import cluster as cluster_policy
from tests.fakes import conf_from_text


@pytest.fixture
def make_conf(tmp_path):
    """A private ConfigOpts parsed from the given config-file text."""
    def make(text: str) -> cfg.ConfigOpts:
        return conf_from_text(tmp_path / "scheduler.conf", text)

    return make


EXAMPLE = """
[scheduler]
cluster_policies = rack-a:packed, rack-b:evenly_distributed
default_policy = none

[filter_scheduler]
enabled_filters = ComputeFilter, RamFilter

[policy:packed]
filters = ComputeFilter, PinToHostFilter:first, MetricsFilter:last, RamFilter
weighers = CPUWeigher:2, RAMWeigher:-1
normalization = rank
balancer = power_saving
balancer_parameters = HighUtilization:70, LowUtilization:10
"""


def test_a_policy_group_is_read_in_run_order(make_conf):
    policies = cluster_policy.load_policies(make_conf(EXAMPLE))
    packed = policies.for_cluster("rack-a")
    assert packed == cluster_policy.ClusterPolicy(
        "packed",
        ("PinToHostFilter", "ComputeFilter", "RamFilter", "MetricsFilter"),
        (("CPUWeigher", 2), ("RAMWeigher", -1)), "rank", "power_saving",
        {"HighUtilization": 70, "LowUtilization": 10,
         "CpuOverCommitDurationMinutes": 2})


def test_the_pipeline_names_the_policy_group(make_conf):
    pipeline = cluster_policy.load_policies(
        make_conf(EXAMPLE)).for_cluster("rack-a").pipeline()
    assert pipeline == filter_scheduler.Pipeline(
        ("PinToHostFilter", "ComputeFilter", "RamFilter", "MetricsFilter"),
        (("CPUWeigher", 2.0), ("RAMWeigher", -1.0)), "rank",
        "policy:packed", "filters", "weighers")


def test_builtins_take_filters_and_weighers_from_filter_scheduler(
        make_conf):
    policies = cluster_policy.load_policies(make_conf(EXAMPLE))
    even = policies.for_cluster("rack-b")
    assert even.filters == ("ComputeFilter", "RamFilter")
    assert even.balancer == "even_distribution"
    assert even.balancer_parameters == {"HighUtilization": 80,
                                        "CpuOverCommitDurationMinutes": 2}
    # Unmapped clusters get the default policy.
    none = policies.for_cluster("rack-z")
    assert none.name == "none"
    assert none.balancer is None
    assert none.normalization == "minmax"


def test_power_saving_packs_and_vm_evenly_distributed_counts(make_conf):
    conf = make_conf("[scheduler]\ncluster_policies = a:power_saving, "
                     "b:vm_evenly_distributed\n")
    policies = cluster_policy.load_policies(conf)
    power = policies.for_cluster("a")
    assert dict(power.weighers)["RAMWeigher"] < 0
    assert dict(power.weighers)["CPUWeigher"] < 0
    assert power.balancer_parameters == {
        "HighUtilization": 80, "LowUtilization": 20,
        "CpuOverCommitDurationMinutes": 2}
    vms = policies.for_cluster("b")
    assert vms.balancer == "even_vm_count"
    assert vms.balancer_parameters == {"HighVmCount": 10,
                                       "MigrationThreshold": 5}


def test_without_policies_clusters_use_filter_scheduler(make_conf):
    policies = cluster_policy.load_policies(make_conf(""))
    assert policies.for_cluster("rack-a") is None
    assert policies.for_cluster(None) is None
    assert policies.policies == {}


def test_a_group_overrides_a_builtin_option_by_option(make_conf):
    conf = make_conf("[scheduler]\ncluster_policies = a:power_saving\n"
                     "[policy:power_saving]\n"
                     "balancer_parameters = LowUtilization:30\n"
                     "normalization = hardmax\n")
    power = cluster_policy.load_policies(conf).for_cluster("a")
    assert power.normalization == "hardmax"
    assert power.balancer_parameters["LowUtilization"] == 30
    assert power.balancer_parameters["HighUtilization"] == 80
    assert power.weighers == cluster_policy.load_policies(make_conf(
        "[scheduler]\ndefault_policy = power_saving\n")).for_cluster(
            "x").weighers


def test_another_balancer_does_not_inherit_the_builtin_parameters(
        make_conf):
    conf = make_conf("[scheduler]\ndefault_policy = power_saving\n"
                     "[policy:power_saving]\nbalancer = even_vm_count\n")
    policy = cluster_policy.load_policies(conf).for_cluster("a")
    assert policy.balancer_parameters == {"HighVmCount": 10,
                                          "MigrationThreshold": 5}


def test_policy_groups_are_validated_even_when_unused(make_conf):
    conf = make_conf("[policy:spare]\nfilters = NoSuchFilter\n")
    with pytest.raises(exception.ConfigError, match=r"\[policy:spare\]"):
        cluster_policy.load_policies(conf)


def _group(body: str) -> str:
    return f"[scheduler]\ndefault_policy = p\n[policy:p]\n{body}\n"


@pytest.mark.parametrize("body, message", [
    ("filters = ComputeFilter, NoSuchFilter",
     "invalid value 'NoSuchFilter' for [policy:p] filters: expected "
     "entry-point names of scheduler.filters: "),
    ("filters = ComputeFilter:middle",
     "invalid value 'ComputeFilter:middle' for [policy:p] filters: "
     "expected a filter name, optionally suffixed :first or :last"),
    ("filters = RamFilter, RamFilter:last",
     "invalid value 'RamFilter' for [policy:p] filters: the filter is "
     "listed twice"),
    ("weighers = CPUWeigher:1.5",
     "invalid value 'CPUWeigher:1.5' for [policy:p] weighers: expected "
     "Name:factor with an integer factor"),
    ("weighers = CPUWeigher:2, CPUWeigher:3",
     "invalid value 'CPUWeigher' for [policy:p] weighers: the weigher is "
     "listed twice"),
    ("weighers = GPUWeigher:2",
     "invalid value 'GPUWeigher' for [policy:p] weighers: expected "
     "entry-point names of scheduler.weighers: "),
    ("normalization = log",
     "invalid value 'log' for [policy:p] normalization: expected one of "
     "minmax, rank, hardmax, none"),
    ("balancer = round_robin",
     "invalid value 'round_robin' for [policy:p] balancer: expected an "
     "entry-point name of scheduler.balancers or none: even_distribution, "
     "even_vm_count, power_saving, steady_load, none"),
    ("balancer_parameters = HighUtilization:80",
     "invalid value 'HighUtilization:80' for [policy:p] "
     "balancer_parameters: parameters need a balancer; balancer is none"),
    ("balancer = even_distribution\nbalancer_parameters = HighUtilization",
     "invalid value 'HighUtilization' for [policy:p] balancer_parameters: "
     "expected Name:value"),
    ("balancer = even_distribution\n"
     "balancer_parameters = HighUtilization:100",
     "invalid value 'HighUtilization=100' for [policy:p] "
     "balancer_parameters: an integer from 50 to 99"),
    ("balancer = even_distribution\n"
     "balancer_parameters = CpuOverCommitDurationMinutes:0",
     "invalid value 'CpuOverCommitDurationMinutes=0' for [policy:p] "
     "balancer_parameters: an integer >= 1"),
    ("balancer = power_saving\nbalancer_parameters = LowUtilization:60",
     "invalid value 'LowUtilization=60' for [policy:p] "
     "balancer_parameters: an integer from 0 to 49"),
    ("balancer = even_vm_count\nbalancer_parameters = HighVmCount:-1",
     "invalid value 'HighVmCount=-1' for [policy:p] balancer_parameters: "
     "an integer >= 0"),
    ("balancer = even_vm_count\nbalancer_parameters = MigrationThreshold:1",
     "invalid value 'MigrationThreshold=1' for [policy:p] "
     "balancer_parameters: an integer >= 2"),
    ("balancer = even_vm_count\nbalancer_parameters = HighUtilization:80",
     "invalid value 'HighUtilization=80' for [policy:p] "
     "balancer_parameters: unknown parameter"),
])
def test_bad_policy_names_group_option_and_range(make_conf, body, message):
    with pytest.raises(exception.ConfigError) as info:
        cluster_policy.load_policies(make_conf(_group(body)))
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("text, message", [
    ("[scheduler]\ncluster_policies = rack-a:fastest\n",
     "invalid value 'rack-a:fastest' for [scheduler] cluster_policies: "
     "unknown policy, expected one of evenly_distributed, none, "
     "power_saving, steady_load, vm_evenly_distributed"),
    ("[scheduler]\ndefault_policy = fastest\n",
     "invalid value 'fastest' for [scheduler] default_policy: unknown "
     "policy"),
    ("[scheduler]\ncluster_policies = a:none, a:power_saving\n",
     "invalid value 'a:none, a:power_saving' for [scheduler] "
     "cluster_policies: cluster 'a' is mapped twice"),
    ("[scheduler]\ncluster_policies = a\n",
     "invalid value 'a' for [scheduler] cluster_policies: 'a' is not "
     "cluster:name"),
    ("[policy:]\nfilters = RamFilter\n",
     "invalid value '' for [policy:] : a policy group needs a name"),
])
def test_bad_mapping_fails_start_up_validation(make_conf, text, message):
    with pytest.raises(exception.ConfigError) as info:
        common.validate_options(make_conf(text))
    assert str(info.value).startswith(message)


def test_start_up_validation_reads_the_migration_policies(make_conf):
    conf = make_conf("[migration]\ndefault_policy = fastest\n")
    with pytest.raises(exception.ConfigError,
                       match=r"\[migration\] default_policy"):
        common.validate_options(conf)


def test_one_scheduler_per_policy_sharing_the_host_manager(make_conf):
    policies = cluster_policy.load_policies(make_conf(EXAMPLE))
    host_manager = object()
    schedulers = policies.schedulers(make_conf(EXAMPLE), host_manager)
    assert set(schedulers) == {"packed", "evenly_distributed", "none", None}
    assert all(s.host_manager is host_manager for s in schedulers.values())
    packed = schedulers[policies.name_for("rack-a")]
    assert [f.name for f in packed.filters][0] == "PinToHostFilter"
    assert schedulers[None].pipeline == filter_scheduler.Pipeline.from_conf(
        make_conf(EXAMPLE))


def test_loading_twice_gives_the_same_policies(make_conf):
    # Start-up validation loads them, then the service loads them again.
    conf = make_conf(EXAMPLE)
    assert (cluster_policy.load_policies(conf)
            == cluster_policy.load_policies(conf))
