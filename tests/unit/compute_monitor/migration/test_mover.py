"""One migration steered by its policy, against a fake domain: the
schedule played from the job statistics, the flags, bandwidth, cancel,
a lost lease, a refusing destination."""

from compute_monitor.migration import mover as mover_mod
from scheduler.policies.migration import policies
from tests.unit.compute_monitor.migration.fakes import Domain
from tests.unit.compute_monitor.migration.fakes import iteration
from tests.unit.compute_monitor.migration.fakes import libvirt_module

LIBVIRT = libvirt_module({})
HELD = mover_mod.Beat(True, False)


def run(domain, policy_id="minimal_downtime", beats=None, policy=None,
        bandwidth=None):
    seen = []

    def beat(progress):
        seen.append(progress)
        return beats.pop(0) if beats else HELD

    mover = mover_mod.Mover(
        LIBVIRT, domain, policy or policies.BUILTIN_POLICIES[policy_id],
        "fake://h1/system", "tcp://10.0.0.2", 0.01, beat)
    return mover.run(bandwidth), seen


def test_each_new_iteration_fires_the_next_convergence_item():
    domain = Domain([iteration(1, 90), iteration(1, 40), iteration(2),
                     iteration(3), iteration(5)])
    outcome, progress = run(domain)
    assert outcome == mover_mod.Outcome("completed")
    steps = [call for call in domain.calls if call[0] != "migrate"]
    # Initial 100 ms, then one item per report: stalls 1, 2, then the
    # report at 4 fires only the third item (300 ms).
    assert steps == [("downtime", 100), ("downtime", 150), ("downtime", 200),
                     ("downtime", 300)]
    # The heartbeat just before the start, then one per report.
    assert progress[:3] == [0, 10, 60]


def test_a_schedule_ending_in_abort_fails_the_move():
    aborting = policies.MigrationPolicy(
        "abort_on_stall", "x", "", 1, False, False, False,
        policies.ConvergenceSchedule(
            (), (), (policies.Action(policies.ABORT),)))
    domain = Domain([iteration(1), iteration(2), iteration(3)])
    outcome, _ = run(domain, policy=aborting)
    assert outcome == mover_mod.Outcome(
        "failed", "aborted by migration policy abort_on_stall at stalled "
        "iteration 1")
    assert ("abortJob",) in domain.calls


def test_post_copy_policy_switches_instead_of_aborting():
    domain = Domain([iteration(n) for n in range(1, 10)])
    outcome, _ = run(domain, "post_copy")
    assert outcome.state == "completed"
    assert ("postcopy",) in domain.calls
    assert ("abortJob",) not in domain.calls


def test_flags_follow_the_policy():
    flags = mover_mod.migration_flags
    base = LIBVIRT.VIR_MIGRATE_LIVE | LIBVIRT.VIR_MIGRATE_PEER2PEER
    assert flags(LIBVIRT, policies.BUILTIN_POLICIES["legacy"], False) == base
    assert flags(LIBVIRT, policies.BUILTIN_POLICIES["minimal_downtime"],
                 False) == (base | LIBVIRT.VIR_MIGRATE_AUTO_CONVERGE
                            | LIBVIRT.VIR_MIGRATE_COMPRESSED)
    assert flags(LIBVIRT, policies.BUILTIN_POLICIES["post_copy"],
                 True) & (LIBVIRT.VIR_MIGRATE_POSTCOPY
                          | LIBVIRT.VIR_MIGRATE_PERSIST_DEST
                          | LIBVIRT.VIR_MIGRATE_UNDEFINE_SOURCE) == (
        LIBVIRT.VIR_MIGRATE_POSTCOPY | LIBVIRT.VIR_MIGRATE_PERSIST_DEST
        | LIBVIRT.VIR_MIGRATE_UNDEFINE_SOURCE)


def test_the_move_starts_with_its_bandwidth():
    domain = Domain([iteration(1), iteration(1), iteration(1)])
    run(domain, "legacy", bandwidth=40)
    _, uri, params, _ = domain.calls[0]
    assert (uri, params) == ("fake://h1/system", {
        "migrate_uri": "tcp://10.0.0.2", "bandwidth": 40})


def test_cancel_aborts_and_ends_cancelled():
    domain = Domain([iteration(1)] * 5)
    outcome, _ = run(domain, beats=[HELD, HELD,
                                    mover_mod.Beat(True, True)])
    assert outcome == mover_mod.Outcome("cancelled",
                                        "cancelled by an operator")
    assert ("abortJob",) in domain.calls


def test_a_lost_lease_aborts_the_move():
    domain = Domain([iteration(1)] * 5)
    outcome, _ = run(domain, beats=[HELD, mover_mod.Beat(False, False)])
    assert outcome == mover_mod.Outcome("failed",
                                        "this agent lost its lease")


def test_a_lease_lost_before_the_start_starts_nothing():
    domain = Domain([iteration(1)])
    outcome, _ = run(domain, beats=[mover_mod.Beat(False, False)])
    assert outcome == mover_mod.Outcome(
        "failed", "this agent lost its lease before the move started")
    assert domain.calls == []


def test_a_steering_error_aborts_the_job_and_reports_its_end():
    domain = Domain([iteration(1)] * 5)

    def beat(progress):
        if progress:
            raise RuntimeError("boom")
        return HELD

    mover = mover_mod.Mover(
        LIBVIRT, domain, policies.BUILTIN_POLICIES["legacy"],
        "fake://h1/system", "", 0.01, beat)
    assert mover.run(None) == mover_mod.Outcome(
        "failed", "agent error while steering: boom")
    assert ("abortJob",) in domain.calls


def test_a_cancel_after_post_copy_started_is_a_failure():
    switching = policies.MigrationPolicy(
        "postcopy_on_stall", "x", "", 1, False, False, False,
        policies.ConvergenceSchedule(
            (), (), (policies.Action(policies.POSTCOPY),)))
    domain = Domain([iteration(n) for n in range(1, 6)])
    beats = [HELD] * 3 + [mover_mod.Beat(True, True)] * 3
    outcome, _ = run(domain, beats=beats, policy=switching)
    assert ("postcopy",) in domain.calls
    assert outcome.state == "failed"
    assert outcome.reason.startswith(
        "cancelled by an operator after post-copy started; libvirt: ")


def test_a_refusing_destination_fails_with_libvirts_reason():
    domain = Domain(fail="operation failed: guest CPU doesn't match")
    outcome, _ = run(domain)
    assert outcome == mover_mod.Outcome(
        "failed", "libvirt: operation failed: guest CPU doesn't match")
