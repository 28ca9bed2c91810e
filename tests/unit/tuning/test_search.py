"""The batched search: reproducible whatever order trials finish in,
limits kept, failures and interruptions leaving a study that resumes."""

from concurrent import futures

import optuna
import pytest

from scheduler.tuning import search
from scheduler.tuning import space

DIMENSIONS = [space.Dimension(
    "filter_scheduler.ram_weight_multiplier", "filter_scheduler",
    "ram_weight_multiplier", None,
    optuna.distributions.FloatDistribution(0.0, 1.0))]
KEY = DIMENSIONS[0].key
OBJECTIVE = search.Objective(("hot_host_minutes",), max_rejected=5,
                             max_migrations=10)


def _figures(x: float) -> dict:
    # Better towards 0.3; rejects too many below 0.1.
    return {"hot_host_minutes": round(abs(x - 0.3) * 1000),
            "rejected": 9 if x < 0.1 else 1, "migrations": 0,
            "hosts_used_peak": 10}


def _study(seed: int = 0, figures=OBJECTIVE.figures) -> optuna.Study:
    study = optuna.create_study(directions=["minimize"] * len(figures))
    study.sampler = search.sampler(
        search.Objective(figures, 5, 10), seed)
    return study


class Reversed(futures.Executor):
    """Finishes each batch's trials last first: the order a real
    executor's trials may finish in."""

    def __init__(self):
        self.pending = []

    def submit(self, values):
        future = futures.Future()
        self.pending.append((future, values))
        if len(self.pending) == 2:
            for done, point in reversed(self.pending):
                done.set_result(_figures(point[KEY]))
            self.pending = []
        return future


def _run(study, submit, batch=2, total=8, objective=OBJECTIVE):
    search.Search(study, DIMENSIONS, objective, submit, batch).run(total)
    return [(t.number, t.params, t.values) for t in study.trials]


def _at_once(values):
    future = futures.Future()
    future.set_result(_figures(values[KEY]))
    return future


def test_a_batch_asks_the_same_points_whatever_order_trials_finish():
    in_order = _run(_study(), _at_once)
    reversed_order = _run(_study(), Reversed().submit)
    assert in_order == reversed_order
    assert len(in_order) == 8


def test_the_best_keeps_the_limits():
    study = _study()
    _run(study, _at_once, total=12)
    best = search.best_trial(study)
    assert best.params[KEY] >= 0.1
    assert all(best.values[0] <= t.values[0]
               for t in study.trials if search.feasible(t))
    # A trial over a limit is kept in the study, marked infeasible.
    over = [t for t in study.trials if t.params[KEY] < 0.1]
    assert all(not search.feasible(t) for t in over)


def test_failed_trials_do_not_count_and_too_many_stop_the_search():
    calls = []

    def failing(values):
        calls.append(values)
        future = futures.Future()
        future.set_exception(RuntimeError("simulation broke"))
        return future

    study = _study()
    with pytest.raises(search.SearchError, match="4 trials failed.*"
                       "RuntimeError: simulation broke"):
        _run(study, failing, total=4)
    assert len(calls) == 4
    assert search.completed(study) == 0


def test_an_interrupted_batch_leaves_no_trial_running():
    submitted = []

    def interrupted(values):
        submitted.append(values)
        future = futures.Future()
        if len(submitted) == 2:
            # The second of the batch: Ctrl-C while waiting for it.
            future.set_exception(KeyboardInterrupt())
        else:
            future.set_result(_figures(values[KEY]))
        return future

    study = _study()
    with pytest.raises(KeyboardInterrupt):
        _run(study, interrupted, total=4)
    states = [t.state for t in study.trials]
    assert states == [optuna.trial.TrialState.COMPLETE,
                      optuna.trial.TrialState.FAIL]
    # And it resumes to the total asked.
    _run(study, _at_once, total=4)
    assert search.completed(study) == 4


def test_stale_running_trials_are_failed_on_resume():
    study = _study()
    study.ask({KEY: DIMENSIONS[0].distribution})
    assert search.fail_stale(study) == 1
    assert study.trials[0].state == optuna.trial.TrialState.FAIL


def test_the_pareto_front_holds_the_undominated_feasible_trials():
    figures = ("hot_host_minutes", "migrations")
    study = _study(figures=figures)
    objective = search.Objective(figures, 5, 10)
    points = {0.2: (100, 5), 0.4: (50, 9), 0.6: (120, 6), 0.05: (10, 1)}

    def submit(values):
        hot, moves = points[values[KEY]]
        future = futures.Future()
        future.set_result({"hot_host_minutes": hot, "migrations": moves,
                           "rejected": 9 if values[KEY] < 0.1 else 0})
        return future

    for x in points:
        study.enqueue_trial({KEY: x})
    _run(study, submit, batch=4, total=4, objective=objective)
    front = {t.params[KEY] for t in search.pareto_front(study)}
    # 0.6 is beaten by 0.2 on both; 0.05 rejects too many.
    assert front == {0.2, 0.4}
    assert search.best_trial(study).params[KEY] == 0.4
