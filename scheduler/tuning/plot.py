"""The picture of a search: each trial's objective with the best so far
and the baseline, and with ``--pareto`` the trials over the first two
figures, the front marked."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as pyplot

from scheduler.tuning import search


def write(path: str, trials: list[dict], objective: search.Objective,
          baseline: dict, front: list[int], caption: str) -> None:
    """Draw into ``path`` (raises OSError when it cannot be written)."""
    pareto = len(objective.figures) > 1
    figure, axes = pyplot.subplots(1, 2 if pareto else 1,
                                   figsize=(13 if pareto else 8, 5),
                                   squeeze=False)
    _progress(axes[0][0], trials, objective.figures[0], baseline)
    if pareto:
        _front(axes[0][1], trials, objective.figures[:2], baseline, front)
    figure.suptitle(caption, fontsize=9)
    figure.tight_layout()
    try:
        figure.savefig(path, dpi=110)
    finally:
        pyplot.close(figure)


def _progress(ax, trials: list[dict], name: str, baseline: dict) -> None:
    kept = [t for t in trials if t["figures"] is not None]
    ok = [t for t in kept if t["feasible"]]
    refused = [t for t in kept if not t["feasible"]]
    ax.scatter([t["number"] for t in ok],
               [t["figures"][name] for t in ok], s=18, label="trial")
    ax.scatter([t["number"] for t in refused],
               [t["figures"][name] for t in refused], s=18, marker="x",
               color="grey", label="over a limit")
    best, steps = None, []
    for trial in sorted(ok, key=lambda t: t["number"]):
        value = trial["figures"][name]
        best = value if best is None else min(best, value)
        steps.append((trial["number"], best))
    if steps:
        ax.step(*zip(*steps, strict=True), where="post", color="C1",
                label="best so far")
    ax.axhline(baseline[name], color="C3", linestyle="--",
               label="baseline")
    ax.set_xlabel("trial")
    ax.set_ylabel(name)
    ax.legend(fontsize=8)


def _front(ax, trials: list[dict], names: tuple[str, ...],
           baseline: dict, front: list[int]) -> None:
    kept = [t for t in trials if t["figures"] is not None and t["feasible"]]
    x, y = names
    ax.scatter([t["figures"][x] for t in kept],
               [t["figures"][y] for t in kept], s=18, label="trial")
    on_front = sorted((t for t in kept if t["number"] in front),
                      key=lambda t: t["figures"][x])
    ax.plot([t["figures"][x] for t in on_front],
            [t["figures"][y] for t in on_front], "o-", color="C1",
            label="Pareto front")
    ax.scatter([baseline[x]], [baseline[y]], marker="*", s=120,
               color="C3", label="baseline")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.legend(fontsize=8)
