"""A search from start to end: the executor (local processes or a Dask
cluster), the Optuna study in its storage, the baseline's run, the
trials, and the hold-out runs of the baseline and the best."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import multiprocessing
import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import optuna
from oslo_config import cfg

from scheduler.simulation import runner
from scheduler.simulation import trace
from scheduler.tuning import search
from scheduler.tuning import space as space_mod
from scheduler.tuning import trial as trial_mod

#: Seconds to wait for a Dask scheduler before calling it unreachable.
DASK_CONNECT_TIMEOUT = 10


class SessionError(Exception):
    """The executor or the storage cannot be used: before any trial."""


class TrialRefused(Exception):
    """The trial's configuration does not pass ``config check``."""


@dataclasses.dataclass
class Outcome:
    """What a search found: figures of the baseline and of the best on
    the searched workload and on the hold-out (``{"search": ...,
    "holdout": ...}``), the best's values, and the front's trials."""

    baseline: dict
    best: dict | None
    best_values: dict[str, Any] | None
    best_number: int | None
    front: list[int]
    trials: list[optuna.trial.FrozenTrial]


@dataclasses.dataclass
class Session:
    config_files: tuple[str, ...]
    baseline_conf: cfg.ConfigOpts
    dimensions: list[space_mod.Dimension]
    workload: trace.Workload
    settings: runner.Settings
    storage_url: str
    study_name: str
    study: optuna.Study
    objective_name: str
    pareto: bool
    max_migrations: int | None
    #: The hold-out: a workload and settings the search never saw (another
    #: seed, or another trace and readings), and how to name it.
    holdout_workload: trace.Workload
    holdout_settings: runner.Settings
    holdout_label: str
    trials: int
    caption: str
    executor: concurrent.futures.Executor
    batch: int
    #: Why a list of configuration files cannot be simulated (the first
    #: problem of ``config check``), or None: a trial whose values make
    #: a configuration it refuses fails without running.
    check: Callable[[list[str]], str | None]
    objective: search.Objective | None = None
    _client: Any = None

    @classmethod
    def open(cls, *, jobs: int, dask_scheduler: str | None,
             **fields: Any) -> Session:
        """Connect the executor and open (or resume) the study; raises
        SessionError when either cannot be used."""
        pareto = fields["pareto"]
        figures = (search.PARETO_FIGURES if pareto
                   else (fields["objective_name"],))
        client = None
        if dask_scheduler:
            client = _dask_client(dask_scheduler)
            executor = client.get_executor(pure=False)
            batch = max(1, sum(client.nthreads().values()))
        else:
            executor = concurrent.futures.ProcessPoolExecutor(
                max_workers=jobs,
                mp_context=multiprocessing.get_context("spawn"))
            batch = jobs
        try:
            storage = optuna.storages.RDBStorage(fields["storage_url"])
            study = optuna.create_study(
                storage=storage, study_name=fields["study_name"],
                load_if_exists=True,
                directions=["minimize"] * len(figures))
        except Exception as e:
            _shut(executor, client)
            raise SessionError(
                f"--storage {fields['storage_url']}: cannot open the study "
                f"{fields['study_name']}: {' '.join(str(e).split())}"
            ) from None
        return cls(study=study, executor=executor, batch=batch,
                   _client=client, **fields)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        _shut(self.executor, self._client)

    def task(self, name: str, values: dict[str, Any] | None,
             holdout: bool = False) -> trial_mod.TrialTask:
        texts = ({} if values is None else space_mod.option_values(
            self.dimensions, values, self.baseline_conf))
        workload, settings = ((self.holdout_workload, self.holdout_settings)
                              if holdout else (self.workload, self.settings))
        return trial_mod.TrialTask(name, self.config_files,
                                   space_mod.conf_text(texts) if texts
                                   else "", workload, settings)

    def _submit(self, task: trial_mod.TrialTask
                ) -> concurrent.futures.Future:
        problem = self._refusal(task)
        if problem is None:
            return self.executor.submit(trial_mod.run, task)
        refused: concurrent.futures.Future = concurrent.futures.Future()
        refused.set_exception(TrialRefused(problem))
        return refused

    def _refusal(self, task: trial_mod.TrialTask) -> str | None:
        if not task.overrides:
            return None
        with tempfile.TemporaryDirectory(prefix="tune-check-") as folder:
            path = os.path.join(folder, "trial.conf")
            with open(path, "w", encoding="utf-8") as stream:
                stream.write(task.overrides)
            return self.check([*self.config_files, path])

    def search(self, progress: bool = False) -> Outcome:
        """The baseline, the trials up to ``trials`` completed, then the
        hold-out runs."""
        search.fail_stale(self.study)
        baseline = self._baseline()
        self.objective = search.Objective(
            self._figures(),
            max_rejected=baseline["rejected"],
            max_migrations=(self.max_migrations
                            if self.max_migrations is not None
                            else len(self.workload) // 10))
        # The sampler is not stored with the study: set on every run.
        self.study.sampler = search.sampler(self.objective,
                                            self.settings.seed)
        start = space_mod.baseline_point(self.dimensions,
                                         self.baseline_conf)
        if not self.study.trials and len(start) == len(self.dimensions):
            self.study.enqueue_trial(start)
        bar = _bar(self.trials, search.completed(self.study), progress)
        runner_ = search.Search(
            self.study, self.dimensions, self.objective,
            lambda values: self._submit(self.task("trial", values)),
            self.batch, on_trial=lambda t: _advance(bar, t, self.study))
        try:
            runner_.run(self.trials)
        finally:
            bar.close()
        return self._outcome(baseline)

    def _figures(self) -> tuple[str, ...]:
        return (search.PARETO_FIGURES if self.pareto
                else (self.objective_name,))

    def _baseline(self) -> dict:
        """The baseline's figures on the searched workload, run once per
        study (a resumed search reads them back)."""
        stored = self.study.user_attrs.get("baseline")
        if stored is not None:
            return stored
        try:
            figures = self._submit(self.task("baseline", None)).result()
        except Exception as e:
            raise search.SearchError(f"the baseline did not run: "
                              f"{type(e).__name__}: {e}") from None
        self.study.set_user_attr("baseline", figures)
        return figures

    def _outcome(self, baseline: dict) -> Outcome:
        best = search.best_trial(self.study)
        runs = [self._submit(self.task("baseline", None, holdout=True))]
        if best is not None:
            runs.append(self._submit(self.task("best", best.params,
                                               holdout=True)))
        holdout = [future.result() for future in runs]
        return Outcome(
            baseline={"search": baseline, "holdout": holdout[0]},
            best=None if best is None else {
                "search": best.user_attrs["figures"],
                "holdout": holdout[1]},
            best_values=None if best is None else dict(best.params),
            best_number=None if best is None else best.number,
            front=([t.number for t in search.pareto_front(self.study)]
                   if self.pareto else []),
            trials=self.study.get_trials(deepcopy=False))


def _shut(executor: concurrent.futures.Executor, client: Any) -> None:
    """Stop the executor without waiting for trials not started: local
    processes drop their queue; a Dask client's close releases its
    futures (its executor knows no ``cancel_futures``)."""
    if client is None:
        executor.shutdown(cancel_futures=True)
    else:
        executor.shutdown(wait=False)
        client.close()


def _dask_client(address: str):
    try:
        from distributed import Client
    except ImportError:
        raise SessionError(
            "--dask-scheduler needs dask.distributed: pip install "
            "'metrics-scheduler[dask]'") from None
    try:
        return Client(address, timeout=DASK_CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as e:
        raise SessionError(
            f"--dask-scheduler {address}: cannot connect within "
            f"{DASK_CONNECT_TIMEOUT} s: {' '.join(str(e).split())}"
        ) from None


def _bar(total: int, done: int, shown: bool):
    from tqdm import tqdm

    return tqdm(total=total, initial=min(done, total), desc="trials",
                unit="trial", file=sys.stderr, disable=not shown,
                dynamic_ncols=True)


def _advance(bar, trial: optuna.trial.FrozenTrial,
             study: optuna.Study) -> None:
    if trial.state == optuna.trial.TrialState.COMPLETE:
        bar.update(1)
    best = search.best_trial(study)
    if best is not None:
        bar.set_postfix(best=f"{best.values[0]:g}", trial=best.number)
