"""The convergence player on the built-in migration policies."""

import pytest

from scheduler.cmd import migration_policy as migration_policy_cmd
from scheduler.policies.migration import convergence
from scheduler.policies.migration import policies

BUILTINS = policies.BUILTIN_POLICIES
ABORT = policies.Action("abort")
POSTCOPY = policies.Action("postcopy")


def downtime(ms: int) -> policies.Action:
    return policies.Action("setDowntime", (ms,))


def play(policy_id: str, counts) -> dict[int, list[policies.Action]]:
    player = convergence.Convergence(BUILTINS[policy_id])
    return {count: player.on_stalled(count) for count in counts}


def test_minimal_downtime_starts_at_100_ms():
    player = convergence.Convergence(BUILTINS["minimal_downtime"])
    assert player.initial_actions() == [downtime(100)]


def test_minimal_downtime_steps_then_aborts():
    assert play("minimal_downtime", range(1, 10)) == {
        1: [downtime(150)], 2: [downtime(200)], 3: [downtime(300)],
        4: [downtime(400)], 5: [], 6: [downtime(500)], 7: [ABORT],
        8: [], 9: []}


def test_suspend_workload_sets_5000_ms_before_aborting():
    actions = play("suspend_workload_if_needed", range(1, 10))
    assert actions[6] == [downtime(500)]
    assert actions[7] == [downtime(5000)]
    assert actions[8] == [ABORT]
    assert actions[9] == []


def test_post_copy_switches_instead_of_aborting():
    actions = play("post_copy", range(1, 9))
    assert actions[7] == [POSTCOPY]
    assert ABORT not in sum(actions.values(), [])


def test_legacy_leaves_everything_to_the_hypervisor():
    player = convergence.Convergence(BUILTINS["legacy"])
    assert player.initial_actions() == []
    assert [player.on_stalled(n) for n in range(1, 20)] == [[]] * 19
    assert player.finished


def test_each_item_fires_once_even_if_counts_repeat():
    player = convergence.Convergence(BUILTINS["minimal_downtime"])
    assert player.on_stalled(1) == [downtime(150)]
    assert player.on_stalled(1) == []
    # Progress resets the hypervisor's count; fired items stay fired.
    assert player.on_stalled(0) == []
    assert player.on_stalled(2) == [downtime(200)]


def test_a_skipping_report_fires_one_action_per_report():
    player = convergence.Convergence(BUILTINS["suspend_workload_if_needed"])
    assert player.on_stalled(20) == [downtime(150)]
    fired = [player.on_stalled(20) for _ in range(7)]
    assert fired == [[downtime(200)], [downtime(300)], [downtime(400)],
                     [downtime(500)], [downtime(5000)], [ABORT], []]
    assert player.finished


def test_nothing_fires_before_the_first_limit():
    player = convergence.Convergence(BUILTINS["minimal_downtime"])
    assert player.on_stalled(0) == []
    assert not player.finished


@pytest.mark.parametrize("last_items, expected", [
    ((ABORT, downtime(900)), [[ABORT], []]),
    ((downtime(900), ABORT), [[downtime(900)], [ABORT]]),
])
def test_nothing_follows_a_final_action(last_items, expected):
    schedule = policies.ConvergenceSchedule((), (), last_items)
    policy = policies.MigrationPolicy("p", "P", "", 1, False, False, False,
                                      schedule)
    player = convergence.Convergence(policy)
    # Without convergence items the last items start at the first stall.
    assert [player.on_stalled(1), player.on_stalled(2)] == expected
    assert player.finished


def test_the_manage_command_plays_a_schedule_to_its_end():
    steps = migration_policy_cmd.played(BUILTINS["minimal_downtime"])
    assert steps == [
        ("before start", "setDowntime 100"),
        ("stalled 1", "setDowntime 150"), ("stalled 2", "setDowntime 200"),
        ("stalled 3", "setDowntime 300"), ("stalled 4", "setDowntime 400"),
        ("stalled 6", "setDowntime 500"), ("stalled 7", "abort")]
    assert migration_policy_cmd.played(BUILTINS["legacy"]) == []
