"""``--plot``: per-node cpu.percent over time as a heat map for each
configuration, and the figures side by side as bars (matplotlib, Agg)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np

#: The figures drawn as bars, with their axis titles.
BARS = (("hot_host_minutes", "hot host-minutes"),
        ("cpu_stddev_mean", "mean std-dev of cpu.percent"),
        ("herd_max", "herd max"), ("rejected", "rejected"),
        ("hosts_used_peak", "hosts used, peak"),
        ("migrations", "migrations"))


def write(path: str, runs: list[dict],
          histories: list[list[np.ndarray]], report_interval: float) -> None:
    """Draw ``runs`` (their JSON figures) and their cpu.percent samples
    (``histories``, one array per sample over the nodes) into ``path``."""
    count = len(runs)
    figure = plt.figure(figsize=(max(8.0, 5.0 * count), 9.5),
                        layout="constrained")
    grid = figure.add_gridspec(2, max(count, 1), height_ratios=(3, 2))
    image = None
    for column, (run, history) in enumerate(zip(runs, histories,
                                                strict=True)):
        axis = figure.add_subplot(grid[0, column])
        samples = (np.array(history).T if history
                   else np.zeros((1, 1)))
        hours = samples.shape[1] * report_interval / 3600.0
        image = axis.imshow(samples, aspect="auto", origin="lower",
                            interpolation="nearest", cmap="inferno",
                            vmin=0, vmax=100, extent=(0, hours, 0,
                                                      samples.shape[0]))
        axis.set_title(f"{run['config']}\n{run['hot_host_minutes']:g} hot "
                       f"host-minutes", fontsize=10)
        axis.set_xlabel("simulated hours")
        axis.set_ylabel("host")
    if image is not None:
        figure.colorbar(image, ax=figure.axes, label="cpu.percent",
                        shrink=0.6, location="right")
    bars = grid[1, :].subgridspec(1, len(BARS))
    for index, (key, title) in enumerate(BARS):
        axis = figure.add_subplot(bars[0, index])
        values = [run[key] for run in runs]
        axis.bar(range(count), values,
                 color=[f"C{i}" for i in range(count)])
        axis.set_xticks(range(count),
                        [run["config"] for run in runs], rotation=30,
                        ha="right", fontsize=8)
        axis.set_title(title, fontsize=9)
    figure.savefig(path, dpi=90)
    plt.close(figure)
