"""The search: an Optuna study asked for points in batches, each batch's
trials run at once on an executor (local processes or a Dask cluster's
workers), told back in trial order.

Batches make a search reproducible: with the same seed and batch size,
the same points are asked whatever order the trials finish in, on one
machine or on a cluster. A batch waits for its slowest trial, which
costs little when trials are runs of the same workload.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from concurrent import futures
from typing import Any

import optuna

from scheduler.tuning import space as space_mod

#: Figures ``--pareto`` minimises together.
PARETO_FIGURES = ("hot_host_minutes", "migrations", "hosts_used_peak")

optuna.logging.set_verbosity(optuna.logging.WARNING)


class SearchError(Exception):
    """The search could not finish; the message says why."""


@dataclasses.dataclass(frozen=True)
class Objective:
    """What a search minimises, and the limits a trial must keep."""

    figures: tuple[str, ...]
    max_rejected: float
    max_migrations: float

    def values(self, figures: dict) -> list[float]:
        return [float(figures[name]) for name in self.figures]

    def violations(self, figures: dict) -> dict[str, float]:
        """Optuna's constraints: feasible when every one is <= 0."""
        return {"rejected": figures["rejected"] - self.max_rejected,
                "migrations": figures["migrations"] - self.max_migrations}


def sampler(objective: Objective, seed: int) -> optuna.samplers.BaseSampler:
    """TPE for one figure, NSGA-II for several (``--pareto``); both read
    the limits each trial was told (``Trial.set_constraint``)."""
    if len(objective.figures) > 1:
        return optuna.samplers.NSGAIISampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed)


def feasible(trial: optuna.trial.FrozenTrial) -> bool:
    return (trial.state == optuna.trial.TrialState.COMPLETE
            and all(v <= 0 for v in trial.constraints.values()))


def best_trial(study: optuna.Study) -> optuna.trial.FrozenTrial | None:
    """The feasible trial of the lowest first objective (earliest on a
    tie): with ``--pareto``, the front's member that best keeps the
    primary figure."""
    done = [t for t in study.trials if feasible(t)]
    return min(done, key=lambda t: (t.values[0], t.number), default=None)


def pareto_front(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """The feasible trials no other feasible trial beats on every
    objective."""
    done = [t for t in study.trials if feasible(t)]
    return [t for t in done if not any(
        all(a <= b for a, b in zip(o.values, t.values, strict=True))
        and o.values != t.values for o in done)]


def fail_stale(study: optuna.Study) -> int:
    """Trials left running by a search that was killed: failed, so that
    a resumed search does not count or wait for them."""
    stale = study.get_trials(deepcopy=False,
                             states=(optuna.trial.TrialState.RUNNING,))
    for trial in stale:
        study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
    return len(stale)


def completed(study: optuna.Study) -> int:
    return len(study.get_trials(
        deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))


@dataclasses.dataclass
class Search:
    """Runs a study's trials on ``executor`` until ``total`` are done.

    ``submit(values)`` turns a point (key -> value) into the future of
    its figures; ``on_trial`` hears of each trial once told.
    """

    study: optuna.Study
    dimensions: list[space_mod.Dimension]
    objective: Objective
    submit: Callable[[dict[str, Any]], futures.Future]
    batch: int
    on_trial: Callable[[optuna.trial.FrozenTrial], None] = lambda _: None

    def run(self, total: int) -> None:
        """Until ``total`` trials are complete; raises SearchError once as
        many have failed (every point refused, a broken workload)."""
        distributions = {d.key: d.distribution for d in self.dimensions}
        while (left := total - completed(self.study)) > 0:
            failed = self.study.get_trials(
                deepcopy=False, states=(optuna.trial.TrialState.FAIL,))
            if len(failed) >= total:
                raise SearchError(
                    f"{len(failed)} trials failed, none of the last ones "
                    f"completed; the first: "
                    f"{failed[0].user_attrs.get('error', 'no figure')}")
            asked = [self.study.ask(distributions)
                     for _ in range(min(self.batch, left))]
            running = [self.submit(trial.params) for trial in asked]
            try:
                for trial, future in zip(asked, running, strict=True):
                    self._tell(trial, future)
            except BaseException:
                # Interrupted (Ctrl-C): what was not told is failed, so
                # that the study resumes cleanly.
                for future in running:
                    future.cancel()
                for trial in asked:
                    if self.study.get_trials(deepcopy=False)[
                            trial.number].state.is_finished():
                        continue
                    self.study.tell(trial,
                                    state=optuna.trial.TrialState.FAIL)
                raise

    def _tell(self, trial: optuna.Trial, future: futures.Future) -> None:
        try:
            figures = future.result()
        except Exception as e:  # a trial's failure is not the search's
            trial.set_user_attr("error", f"{type(e).__name__}: {e}")
            frozen = self.study.tell(trial,
                                     state=optuna.trial.TrialState.FAIL)
        else:
            trial.set_user_attr("figures", figures)
            for name, value in self.objective.violations(figures).items():
                trial.set_constraint(name, value)
            values = self.objective.values(figures)
            if not all(math.isfinite(v) for v in values):
                frozen = self.study.tell(
                    trial, state=optuna.trial.TrialState.FAIL)
            else:
                frozen = self.study.tell(trial, values)
        self.on_trial(frozen)
