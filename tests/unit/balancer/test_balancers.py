"""Balancers on small fleets, the history rule and parameter validation."""


import pytest

from scheduler import exception
from scheduler.balancer import base
from scheduler.balancer import history as history_mod
from scheduler.balancer.even_distribution import EvenDistributionBalancer
from scheduler.balancer.even_vm_count import EvenVmCountBalancer
from scheduler.balancer.power_saving import PowerSavingBalancer
from scheduler.hosts import state as hm
from tests.unit.balancer.fakes import even
from tests.unit.balancer.fakes import history
from tests.unit.balancer.fakes import minutes
from tests.unit.balancer.fakes import saving
from tests.unit.balancer.fakes import vm_count


def load(node_id: int, cpu: float | None, vcpus_each=(2,), count=None,
         host_vcpus=16, can_migrate=True) -> base.HostLoad:
    instances = tuple(base.Instance(f"i-{node_id}-{n}", vcpus, 512, 1)
                      for n, vcpus in enumerate(vcpus_each))
    state = hm.HostState(node_id=node_id, uuid=f"n{node_id}",
                         host=f"host-{node_id}", nodename=f"host-{node_id}",
                         vcpus=host_vcpus)
    return base.HostLoad(
        state=state, cpu_percent=cpu, instances=instances,
        instance_count=len(instances) if count is None else count,
        can_migrate=can_migrate)


def proposals(balancer, hosts, hist) -> list[tuple[int, str, list[int]]]:
    return [(p.source.node_id, p.instance.uuid,
             [d.node_id for d in p.destinations])
            for p in balancer.propose(hosts, hist)]


# The history rule

@pytest.mark.parametrize("values, stayed", [
    ([90, 90, 90], True),            # minutes 8, 9, 10: covers 2 minutes
    ([90, 90], False),               # covers only 1 minute
    ([50, 90, 90], False),           # the window opens at 50
    ([50, 90, 90, 90], True),        # 50 is before the window
    ([90, 79, 90], False),
    ([90, 80, 90], True),            # >= is inclusive
])
def test_stayed_at_least(values, stayed):
    assert history(n1=values).stayed_at_least(1, 80, 2) is stayed


def test_window_opens_at_the_report_in_force():
    # Reports at minutes 0, 7.5 and 10: two minutes back from 10 is 8,
    # when the report of 7.5 was in force.
    hist = history_mod.UtilizationHistory({1: [
        history_mod.Sample(minutes(0), 10, 1),
        history_mod.Sample(minutes(7.5), 90, 1),
        history_mod.Sample(minutes(10), 90, 1)]})
    assert hist.stayed_at_least(1, 80, 2)
    assert not hist.stayed_at_least(1, 80, 3)
    assert not hist.stayed_at_least(2, 80, 2)


def test_stayed_below_is_strict():
    assert history(n1=[10, 19, 5]).stayed_below(1, 20, 2)
    assert not history(n1=[10, 20, 5]).stayed_below(1, 20, 2)


def test_mean_over_the_window_includes_the_report_in_force():
    hist = history_mod.UtilizationHistory({1: [
        history_mod.Sample(minutes(0), 0, 1),
        history_mod.Sample(minutes(40), 30, 1),
        history_mod.Sample(minutes(50), 60, 1),
        history_mod.Sample(minutes(60), 90, 1)]})
    # 15 minutes back from 60 is 45, when the report of 40 was in force.
    assert hist.mean_over(1, 15) == pytest.approx(60.0)
    assert hist.mean_over(1, 60) == pytest.approx(45.0)
    assert hist.covers(1, 60)
    assert hist.latest(1).cpu_percent == 90


def test_mean_over_a_short_history_takes_what_there_is():
    hist = history(n1=[40, 80])
    assert hist.mean_over(1, 60) == pytest.approx(60.0)
    assert not hist.covers(1, 60)
    assert hist.covers(1, 1)
    assert hist.mean_over(2, 60) is None
    assert hist.latest(2) is None
    assert not hist.covers(2, 1)


def samples_at(*points: tuple[float, float]) -> history_mod.UtilizationHistory:
    return history_mod.UtilizationHistory({1: [
        history_mod.Sample(minutes(at), value, 1) for at, value in points]})


def test_minutes_at_least_counts_hot_time_in_and_out_of_a_row():
    # One a minute, ending at 10: hot 90s at minutes 2, 3 and 7; the
    # newest (10) stands for no time.
    hist = history(n1=[10, 10, 90, 90, 10, 10, 10, 90, 10, 10, 90])
    assert hist.minutes_at_least(1, 80, 10) == pytest.approx(3.0)
    assert hist.minutes_at_least(1, 80, 4) == pytest.approx(1.0)
    assert hist.minutes_at_least(2, 80, 10) == 0.0


def test_minutes_at_least_counts_from_the_window_opening():
    # The window of 20 minutes opens at 40, within the report of 36.
    hist = samples_at((36, 90), (41, 10), (46, 10), (51, 10), (56, 10),
                      (60, 10))
    assert hist.minutes_at_least(1, 80, 20) == pytest.approx(1.0)


def test_a_gap_in_reporting_is_not_all_hot():
    # Five-minute reports, then none for 45 minutes after a hot one.
    hist = samples_at((0, 10), (5, 90), (50, 10), (55, 10), (60, 10))
    assert hist.minutes_at_least(1, 80, 60) == pytest.approx(5.0)


# even_distribution


def test_even_distribution_moves_off_the_busiest_host():
    hosts = [load(1, 85, (2, 4)), load(2, 95, (2, 4)), load(3, 30),
             load(4, 70)]
    hist = history(n1=[85] * 3, n2=[95] * 3, n3=[30] * 3, n4=[70] * 3)
    found = proposals(even(), hosts, hist)
    # host-2 first; 2 vCPUs of 16 (12.5%) take it to 82.5, not enough, so
    # its largest instance (25%) goes first. host-4 would reach 95.
    assert found[0] == (2, "i-2-1", [3])
    assert [source for source, _, _ in found] == [2, 2, 1, 1]


def test_even_distribution_prefers_the_smallest_sufficient_instance():
    hosts = [load(1, 85, (4, 2, 8)), load(2, 10)]
    found = proposals(even(), hosts, history(n1=[85] * 3, n2=[10] * 3))
    # 2 vCPUs (12.5%) bring 85 to 72.5.
    assert [uuid for _, uuid, _ in found] == ["i-1-1", "i-1-0", "i-1-2"]


def test_even_distribution_needs_the_whole_duration():
    hosts = [load(1, 90), load(2, 10)]
    assert proposals(even(), hosts, history(n1=[90, 90], n2=[10] * 3)) == []
    assert proposals(even(CpuOverCommitDurationMinutes="1"), hosts,
                     history(n1=[90, 90], n2=[10] * 3)) != []


def test_even_distribution_ignores_hosts_without_fresh_cpu():
    # A host whose cpu.percent is stale is neither source nor destination,
    # whatever its history says.
    hist = history(n1=[99] * 3, n2=[10] * 3)
    assert proposals(even(), [load(1, None), load(2, 10)], hist) == []
    assert proposals(even(), [load(1, 99), load(2, None)], hist) == []
    assert proposals(even(), [load(1, 99), load(2, 10)], hist) == [
        (1, "i-1-0", [2])]


def test_even_distribution_skips_hosts_at_their_migration_limit():
    hosts = [load(1, 90, can_migrate=False), load(2, 90), load(3, 10),
             load(4, 10, can_migrate=False)]
    hist = history(n1=[90] * 3, n2=[90] * 3, n3=[10] * 3, n4=[10] * 3)
    assert proposals(even(), hosts, hist) == [(2, "i-2-0", [3])]


def test_even_distribution_counts_the_load_already_leaving():
    # The planner subtracts migrations under way from cpu_percent: a host
    # the history calls busy but that is now under the threshold waits.
    hosts = [load(1, 70), load(2, 10)]
    assert proposals(even(), hosts, history(n1=[90] * 3,
                                            n2=[10] * 3)) == []


def test_even_distribution_never_overloads_the_destination():
    hosts = [load(1, 90, (8,)), load(2, 40), load(3, 31)]
    # 8 of 16 vCPUs add 50%: 40 -> 90 and 31 -> 81 are both too much.
    hist = history(n1=[90] * 3, n2=[40] * 3, n3=[31] * 3)
    assert proposals(even(), hosts, hist) == []
    hosts[2] = load(3, 29)
    assert proposals(even(), hosts, history(
        n1=[90] * 3, n2=[40] * 3, n3=[29] * 3)) == [(1, "i-1-0", [3])]


# power_saving


def test_power_saving_empties_the_emptiest_idle_host():
    hosts = [load(1, 10, (2, 4)), load(2, 5, (2,)), load(3, 50),
             load(4, 60), load(5, 15, ())]
    hist = history(n1=[10] * 3, n2=[5] * 3, n3=[50] * 3, n4=[60] * 3,
                   n5=[15] * 3)
    found = proposals(saving(), hosts, hist)
    # host-2 holds one instance; destinations are never idle hosts.
    assert found[0] == (2, "i-2-0", [3, 4])
    # 4 vCPUs (25%) would take host-4 to 85.
    assert found[1:] == [(1, "i-1-1", [3]), (1, "i-1-0", [3, 4])]


def test_power_saving_relieves_before_it_empties():
    hosts = [load(1, 10), load(2, 90), load(3, 50)]
    hist = history(n1=[10] * 3, n2=[90] * 3, n3=[50] * 3)
    assert proposals(saving(), hosts, hist) == [(2, "i-2-0", [3])]


def test_power_saving_waits_while_a_busy_host_cannot_be_relieved():
    # host-2 is busy and only idle host-1 has room: nothing is emptied
    # onto host-3 meanwhile, and host-1 is not woken up.
    hosts = [load(1, 10), load(2, 95, (8,)), load(3, 70)]
    hist = history(n1=[10] * 3, n2=[95] * 3, n3=[70] * 3)
    assert proposals(saving(), hosts, hist) == []


def test_power_saving_needs_low_for_the_whole_duration():
    hosts = [load(1, 10), load(2, 50)]
    assert proposals(saving(), hosts, history(n1=[30, 10, 10],
                                              n2=[50] * 3)) == []


# even_vm_count


def test_even_vm_count_moves_from_the_fullest_host():
    hosts = [load(1, None, (1,) * 12), load(2, None, (2, 1) * 7),
             load(3, None, (1,) * 8), load(4, None, (1,) * 11)]
    found = proposals(vm_count(), hosts, history())
    # host-2 (14) is 6 above host-3 (8), host-1 only 4; smallest
    # instance first; destinations hold at most 12, fewest first.
    assert found[0] == (2, "i-2-1", [3, 4, 1])
    assert {source for source, _, _ in found} == {2}


def test_even_vm_count_respects_high_vm_count_and_threshold():
    hosts = [load(1, None, (1,) * 10), load(2, None, (1,) * 4)]
    assert proposals(vm_count(), hosts, history()) == []   # 10 not > 10
    assert proposals(vm_count(HighVmCount="9"), hosts, history())[0][0] == 1
    assert proposals(vm_count(HighVmCount="9", MigrationThreshold="7"),
                     hosts, history()) == []


def test_even_vm_count_counts_migrations_under_way():
    # host-2 already receives enough to be no destination.
    hosts = [load(1, None, (1,) * 12), load(2, None, (1,) * 5, count=11),
             load(3, None, (1,) * 6)]
    found = proposals(vm_count(), hosts, history())
    assert found[0] == (1, "i-1-0", [3])


# Parameters

@pytest.mark.parametrize("cls, given, expected", [
    (EvenDistributionBalancer, {},
     {"HighUtilization": 80, "CpuOverCommitDurationMinutes": 2}),
    (PowerSavingBalancer, {"LowUtilization": " 0 ", "HighUtilization": "50"},
     {"HighUtilization": 50, "LowUtilization": 0,
      "CpuOverCommitDurationMinutes": 2}),
    (PowerSavingBalancer, {"HighUtilization": "99", "LowUtilization": "49"},
     {"HighUtilization": 99, "LowUtilization": 49,
      "CpuOverCommitDurationMinutes": 2}),
    (EvenVmCountBalancer, {"HighVmCount": "0", "MigrationThreshold": "2"},
     {"HighVmCount": 0, "MigrationThreshold": 2}),
])
def test_valid_parameters(cls, given, expected):
    assert cls.validate_parameters("p", given) == expected


@pytest.mark.parametrize("cls, given, value, problem", [
    (EvenDistributionBalancer, {"HighUtilization": "49"},
     "HighUtilization=49", "an integer from 50 to 99"),
    (EvenDistributionBalancer, {"HighUtilization": "100"},
     "HighUtilization=100", "an integer from 50 to 99"),
    (EvenDistributionBalancer, {"HighUtilization": "eighty"},
     "HighUtilization=eighty", "an integer from 50 to 99"),
    (EvenDistributionBalancer, {"CpuOverCommitDurationMinutes": "0"},
     "CpuOverCommitDurationMinutes=0", "an integer >= 1"),
    (EvenDistributionBalancer, {"CpuOverCommitDurationMinutes": ""},
     "CpuOverCommitDurationMinutes=", "an integer >= 1"),
    (EvenDistributionBalancer, {"LowUtilization": "10"},
     "LowUtilization=10", "unknown parameter; expected one of: "
     "HighUtilization, CpuOverCommitDurationMinutes"),
    (PowerSavingBalancer, {"LowUtilization": "-1"}, "LowUtilization=-1",
     "an integer from 0 to 49"),
    (PowerSavingBalancer, {"LowUtilization": "50"}, "LowUtilization=50",
     "an integer from 0 to 49"),
    (EvenVmCountBalancer, {"HighVmCount": "-1"}, "HighVmCount=-1",
     "an integer >= 0"),
    (EvenVmCountBalancer, {"MigrationThreshold": "1"},
     "MigrationThreshold=1", "an integer >= 2"),
    (EvenVmCountBalancer, {"SpmVmGrace": "5"}, "SpmVmGrace=5",
     "unknown parameter"),
])
def test_invalid_parameters(cls, given, value, problem):
    with pytest.raises(exception.ConfigError) as caught:
        cls.validate_parameters("mine", given)
    error = caught.value
    assert (error.group, error.option, error.value) == (
        "policy:mine", "balancer_parameters", value)
    assert problem in str(error)


def test_balancers_are_entry_points():
    assert base.balancer_class("even_distribution") is \
        EvenDistributionBalancer
    assert base.balancer_class("power_saving") is PowerSavingBalancer
    assert base.balancer_class("even_vm_count") is EvenVmCountBalancer
    with pytest.raises(KeyError):
        base.balancer_class("EvenDistribution")
