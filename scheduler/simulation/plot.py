"""``--plot``: per-node cpu.percent over time as a heat map for each
configuration, and the figures side by side as bars (matplotlib, Agg)."""

import os

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.figure import Figure

#: The figures drawn as bars, with their axis titles.
BARS = (("hot_host_minutes", "hot host-minutes"),
        ("cpu_stddev_mean", "mean std-dev of cpu.percent"),
        ("herd_max", "herd max"), ("rejected", "rejected"),
        ("hosts_used_peak", "hosts used, peak"),
        ("migrations", "migrations"))
#: The colour of the hot threshold's mark on the colour bar: the heat
#: map's palette (inferno) has no cyan.
THRESHOLD_COLOUR = "tab:cyan"
#: The label of the colour bar's axes, which finds them in the figure.
COLOUR_BAR = "colour bar"


def unwritable(path: str) -> str | None:
    """Why ``path`` cannot take the image (its folder is missing or not
    writable, it is a folder, its extension names no format matplotlib
    writes), or None."""
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        return f"folder {folder} does not exist"
    if os.path.isdir(path):
        return "is a folder, expected an image file"
    extension = os.path.splitext(path)[1].lower().lstrip(".")
    formats = FigureCanvasBase.get_supported_filetypes()
    if extension and extension not in formats:
        return (f"matplotlib writes no .{extension} images (expected one "
                f"of {', '.join(sorted(formats))})")
    if not os.access(folder, os.W_OK | os.X_OK) or (
            os.path.exists(path) and not os.access(path, os.W_OK)):
        return "not writable"
    return None


def draw(runs: list[dict], histories: list[list[np.ndarray]],
         report_interval: float, caption: str) -> Figure:
    """The figure of ``runs`` (their JSON figures) and their cpu.percent
    samples (``histories``, one array per sample over the nodes), with
    ``caption`` (the workload, the nodes, the seed) above it."""
    count = len(runs)
    figure = plt.figure(figsize=(max(8.0, 5.0 * count), 10.0),
                        layout="constrained")
    figure.suptitle(caption, fontsize=11)
    # The colour bar gets a narrow column of its own, right of the last
    # heat map, as high as the heat maps.
    grid = figure.add_gridspec(2, count + 1, height_ratios=(3, 2),
                               width_ratios=(1.0,) * count + (0.06,))
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
                       "host-minutes (cpu.percent >= "
                       f"{run['hot_threshold']:g})", fontsize=10)
        axis.set_xlabel("simulated hours")
        axis.set_ylabel("host")
    if image is not None:
        _colour_bar(figure, image,
                    figure.add_subplot(grid[0, count], label=COLOUR_BAR),
                    sorted({run["hot_threshold"] for run in runs}))
    _bars(figure, grid[1, :], runs)
    return figure


def _colour_bar(figure: Figure, image, axis, thresholds: list[float]
                ) -> None:
    """The colour bar in ``axis``, each hot threshold a line across it."""
    bar = figure.colorbar(image, cax=axis)
    for threshold in thresholds:
        bar.ax.axhline(threshold, color=THRESHOLD_COLOUR, linewidth=3)
    named = " and ".join(f"{threshold:g}" for threshold in thresholds)
    bar.set_label(f"cpu.percent (line: hot from {named})")


def _bars(figure: Figure, cell, runs: list[dict]) -> None:
    count = len(runs)
    bars = cell.subgridspec(1, len(BARS))
    for index, (key, title) in enumerate(BARS):
        axis = figure.add_subplot(bars[0, index])
        values = [run[key] for run in runs]
        axis.bar(range(count), values,
                 color=[f"C{i}" for i in range(count)])
        axis.set_xticks(range(count),
                        [run["config"] for run in runs], rotation=30,
                        ha="right", fontsize=8)
        axis.set_title(title, fontsize=9)
        # Every figure is >= 0: all zero is a flat bar at the bottom, not
        # an axis centred on 0.
        axis.set_ylim(bottom=0)


def write(path: str, runs: list[dict], histories: list[list[np.ndarray]],
          report_interval: float, caption: str) -> None:
    """Draw ``runs`` into ``path`` (``draw``); raises OSError when it
    cannot be written."""
    figure = draw(runs, histories, report_interval, caption)
    try:
        figure.savefig(path, dpi=90)
    finally:
        plt.close(figure)
