"""One trial of a search: one ``simulate`` run of the workload under the
baseline's files plus the trial's own, in whichever process runs it (a
local worker or a Dask worker, which must see the same files)."""

from __future__ import annotations

import dataclasses
import logging
import os
import tempfile

from scheduler.simulation import runner
from scheduler.simulation import runs
from scheduler.simulation import trace


@dataclasses.dataclass(frozen=True)
class TrialTask:
    """Everything a worker needs; sent to it whole (pickled)."""

    name: str
    config_files: tuple[str, ...]
    #: The trial's configuration file (``space.conf_text``), read last.
    overrides: str
    workload: trace.Workload
    settings: runner.Settings


def run(task: TrialTask) -> dict:
    """The figures of ``simulate`` for ``task`` (JSON-safe)."""
    # One line per decision, or per unreported metric, from every
    # trial would bury the search's own output.
    logging.getLogger("scheduler").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="tune-trial-") as directory:
        files = list(task.config_files)
        if task.overrides:
            path = os.path.join(directory, "trial.conf")
            with open(path, "w", encoding="utf-8") as stream:
                stream.write(task.overrides)
            files.append(path)
        conf = runs.load_config(files)
        results, _ = runs.run_all([(task.name, conf)], task.workload,
                                  task.settings, progress=False)
    figures = results[0]
    figures.pop("readings_problems", None)
    return figures
