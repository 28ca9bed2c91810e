"""``--plot``: what the figure says (caption, hot thresholds, colour bar
beside the heat maps), read from the matplotlib figure, not its pixels;
and which paths are refused before a simulation."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from scheduler.simulation import plot

CAPTION = "trace vmtable.csv; 4 hosts of 32 vCPUs and 131072 MB; seed 7"


def _run(name: str, hot_threshold: float) -> dict:
    return {"config": name, "hot_host_minutes": 12.0,
            "hot_threshold": hot_threshold, "cpu_stddev_mean": 3.5,
            "herd_max": 2, "rejected": 0, "hosts_used_peak": 4,
            "migrations": 1}


@pytest.fixture
def figure():
    runs = [_run("nova.conf", 80.0), _run("balanced.conf", 70.0)]
    history = [np.array([10.0, 90.0, 50.0, 0.0])] * 30
    figure = plot.draw(runs, [history, history], 60.0, CAPTION)
    yield figure
    plt.close(figure)


def _colour_bar_axis(figure):
    [axis] = [axis for axis in figure.axes
              if axis.get_label() == plot.COLOUR_BAR]
    return axis


def test_the_caption_names_what_was_simulated(figure):
    assert figure.get_suptitle() == CAPTION


def test_each_heat_map_names_its_hot_threshold(figure):
    titles = [axis.get_title() for axis in figure.axes[:2]]
    assert titles == [
        "nova.conf\n12 hot host-minutes (cpu.percent >= 80)",
        "balanced.conf\n12 hot host-minutes (cpu.percent >= 70)"]


def test_the_colour_bar_marks_each_hot_threshold(figure):
    axis = _colour_bar_axis(figure)
    marks = sorted(line.get_ydata()[0] for line in axis.get_lines())
    assert marks == [70.0, 80.0]
    assert axis.get_ylabel() == "cpu.percent (line: hot from 70 and 80)"


def test_the_colour_bar_stands_beside_the_heat_maps(figure):
    figure.draw_without_rendering()
    last_map = figure.axes[1].get_position()
    bar = _colour_bar_axis(figure).get_position()
    # Next to the last heat map (a small gap, not a column of white),
    # and as high as it.
    assert 0 < bar.x0 - last_map.x1 < 0.02
    assert (bar.y0, bar.y1) == pytest.approx((last_map.y0, last_map.y1),
                                             abs=0.01)


def test_write_saves_the_image(tmp_path):
    path = tmp_path / "out.png"
    plot.write(str(path), [_run("a.conf", 80.0)],
               [[np.array([10.0, 90.0])]], 60.0, CAPTION)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_writable_paths(tmp_path):
    assert plot.unwritable(str(tmp_path / "out.png")) is None
    assert plot.unwritable(str(tmp_path / "out.PDF")) is None
    # No extension: matplotlib writes a PNG.
    assert plot.unwritable(str(tmp_path / "out")) is None


@pytest.mark.parametrize(("name", "problem"), [
    ("missing/out.png", "folder {tmp}/missing does not exist"),
    (".", "is a folder, expected an image file"),
    ("out.xyz", "matplotlib writes no .xyz images (expected one of "),
])
def test_unwritable_paths(tmp_path, name, problem):
    found = plot.unwritable(str(tmp_path / name))
    assert found.startswith(problem.format(tmp=tmp_path))
