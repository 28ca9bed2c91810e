"""Where ``scheduler-manage simulate`` keeps each run's database, and
how it reports: the figures first, then the plot, whose failure costs
only the picture."""

import argparse
import errno
import json
import os

import numpy as np
import pytest

from scheduler.cmd import simulate
from scheduler.simulation import fleet
from scheduler.simulation import plot
from scheduler.simulation import runs as simulation_runs


def _config(tmp_path, text: str):
    path = tmp_path / "run.conf"
    path.write_text(text)
    return simulation_runs.load_config(str(path))


def test_scratch_database_commits_without_waiting_for_the_disk(tmp_path):
    conf = _config(tmp_path, "")
    simulation_runs.use_database(conf, str(tmp_path), 3)
    assert conf.database.connection == f"sqlite:///{tmp_path}/run3.sqlite"
    assert conf.database.sqlite_synchronous is False


def test_a_configured_database_keeps_its_settings(tmp_path):
    url = f"sqlite:///{tmp_path}/own.sqlite"
    conf = _config(tmp_path, f"[database]\nconnection = {url}\n")
    simulation_runs.use_database(conf, str(tmp_path), 0)
    assert conf.database.connection == url
    assert conf.database.sqlite_synchronous is True


def test_the_oracle_config_has_no_policy_and_no_random_pick(tmp_path):
    path = tmp_path / "run.conf"
    path.write_text("[scheduler]\ndefault_policy = evenly_distributed\n"
                    "[filter_scheduler]\nhost_subset_size = 3\n"
                    "cpu_allocation_ratio = 2.5\n")
    conf = simulation_runs.load_config(str(path))
    oracle_conf = simulation_runs.oracle_config(conf)
    assert oracle_conf.scheduler.default_policy is None
    assert oracle_conf.filter_scheduler.host_subset_size == 1
    assert oracle_conf.filter_scheduler.cpu_allocation_ratio == 2.5
    assert conf.filter_scheduler.host_subset_size == 3


def _report_args(tmp_path, **given) -> argparse.Namespace:
    values = {"format": "table", "plot": str(tmp_path / "out.png"),
              "report_interval": 60.0, "seed": 0, "trace": None,
              "synthetic": 5, "cpu_readings": [], "fleet": None}
    return argparse.Namespace(**{**values, **given})


RUN = {"config": "a.conf", "vms": 5, "placed": 5, "rejected": 0,
       "hosts_used_peak": 2, "hot_host_minutes": 3.0, "vm_hot_minutes": 4.0,
       "overload_core_minutes": 0.0, "p95_host_cpu": 50.0,
       "cpu_stddev_mean": 1.5, "herd_max": 1, "migrations": 0,
       "sim_seconds": 600.0, "wall_seconds": 0.5, "hot_threshold": 80.0}
FLEET = fleet.FleetSpec(2, 32, 131072)


def test_the_report_comes_with_its_plot(tmp_path, capsys):
    args = _report_args(tmp_path)
    assert simulate.report(args, [dict(RUN)], [[np.array([10.0, 90.0])]],
                           FLEET, 0) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["figure", "a.conf"]
    assert out[-1] == f"plot written to {args.plot}"
    assert (tmp_path / "out.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("output", ["table", "json"])
def test_a_plot_that_cannot_be_written_keeps_the_report(tmp_path, capsys,
                                                        monkeypatch, output):
    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(plot, "write", disk_full)
    args = _report_args(tmp_path, format=output)
    assert simulate.report(args, [dict(RUN)], [[]], FLEET, 0) == 1
    printed = capsys.readouterr()
    if output == "json":
        assert json.loads(printed.out)["runs"][0]["placed"] == 5
    else:
        assert "hot_host_minutes" in printed.out
        assert "plot written" not in printed.out
    assert printed.err == (
        f"scheduler-manage: error: --plot {args.plot}: cannot write the "
        "image (No space left on device); the report above is complete\n")
