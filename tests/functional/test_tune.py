"""``scheduler-manage tune`` end to end, as operators run it: a search in
local processes that writes a configuration ``config check`` accepts,
the same search on a Dask cluster with the same trials, a resumed
study, Ctrl-C, and bad input refused before any trial runs."""

import json
import os
import signal
import time

import pytest

#: A workload small enough for seconds a trial, loaded enough for hot
#: minutes under Nova's default (97 on seed 0, 77 with cpu.percent=-1).
WORKLOAD = ("--synthetic", "150", "--hosts", "6", "--host-vcpus", "8",
            "--host-memory-mb", "262144", "--duration", "7200")
SPACE = """\
filter_scheduler.weight_classes:
  choices: ["RAMWeigher,MetricsWeigher", "MetricsWeigher"]
metrics.weight_setting[cpu.percent]: {low: -2.0, high: -0.1}
filter_scheduler.weight_normalization: {choices: [minmax, hardmax]}
"""
#: What differs between two runs of one trial: the clocks.
CLOCKS = ("wall_seconds", "cpu_seconds", "wall_seconds_by_event")


@pytest.fixture
def baseline(write_config):
    return write_config({"filter_scheduler": {"weight_classes":
                                              "RAMWeigher"}},
                        name="nova.conf")


@pytest.fixture
def space(tmp_path):
    path = tmp_path / "space.yaml"
    path.write_text(SPACE)
    return path


def tune(run_console_script, baseline, space, storage, *args):
    return run_console_script(
        "scheduler-manage", "tune", "--space", str(space), *WORKLOAD,
        "--storage", storage, *args, config_file=baseline, timeout=300)


def storage_url(tmp_path, name="tune.sqlite"):
    return f"sqlite:///{tmp_path / name}"


def trials(report):
    """Each trial's number, state, values and figures, without clocks."""
    return [(t["number"], t["state"], t["values"],
             t["figures"] and {k: v for k, v in t["figures"].items()
                               if k not in CLOCKS})
            for t in report["trials"]]


def test_local_search_writes_what_config_check_accepts(
        run_console_script, baseline, space, tmp_path):
    output, plot = tmp_path / "tuned.conf", tmp_path / "tune.png"
    result = tune(run_console_script, baseline, space,
                  storage_url(tmp_path), "--trials", "6", "--jobs", "2",
                  "--format", "json", "--output", str(output),
                  "--plot", str(plot))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    completed = [t for t in report["trials"] if t["state"] == "COMPLETE"]
    assert len(completed) == 6
    assert report["holdout_seed"] == 1
    base = report["baseline"]
    assert base["search"]["hot_host_minutes"] > 0
    assert base["search"]["vms"] == base["holdout"]["vms"] == 150
    # A different seed: a different workload.
    assert base["search"]["placed"] != base["holdout"]["placed"] or \
        base["search"]["hot_host_minutes"] != \
        base["holdout"]["hot_host_minutes"]
    best = report["best"]
    assert report["improved"] == (best["search"]["hot_host_minutes"]
                                  < base["search"]["hot_host_minutes"])
    assert best["search"]["rejected"] <= base["search"]["rejected"]
    figures = report["trials"][report["best_trial"]]["figures"]
    assert figures["hot_host_minutes"] == best["search"]["hot_host_minutes"]
    assert set(report["best_values"]) == {
        "filter_scheduler.weight_classes",
        "metrics.weight_setting[cpu.percent]",
        "filter_scheduler.weight_normalization"}
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    text = output.read_text()
    assert text.startswith("# scheduler-manage tune, study ")
    if report["improved"]:
        assert "weight_setting = cpu.percent=" in text
    check = run_console_script(
        "scheduler-manage", "--config-file", str(output), "config", "check",
        config_file=baseline)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_dask_cluster_runs_the_same_trials(
        run_console_script, baseline, space, tmp_path):
    distributed = pytest.importorskip("distributed")
    local = tune(run_console_script, baseline, space,
                 storage_url(tmp_path, "local.sqlite"), "--trials", "4",
                 "--jobs", "2", "--format", "json")
    assert local.returncode == 0, local.stderr
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  processes=True,
                                  dashboard_address=None) as cluster:
        on_dask = tune(run_console_script, baseline, space,
                       storage_url(tmp_path, "dask.sqlite"), "--trials", "4",
                       "--dask-scheduler", cluster.scheduler_address,
                       "--format", "json")
        assert on_dask.returncode == 0, on_dask.stderr
        # The trials ran on the workers, not in the command's process.
        logs = cluster.get_logs(cluster=False, scheduler=False)
        assert len(logs) == 2
    local_report, dask_report = (json.loads(r.stdout)
                                 for r in (local, on_dask))
    assert trials(dask_report) == trials(local_report)
    assert dask_report["best_values"] == local_report["best_values"]
    for part in ("search", "holdout"):
        strip = [{k: v for k, v in r["best"][part].items()
                  if k not in CLOCKS} for r in (local_report, dask_report)]
        assert strip[0] == strip[1]


def test_an_interrupted_study_resumes(run_console_script, baseline, space,
                                      tmp_path):
    url = storage_url(tmp_path)
    first = tune(run_console_script, baseline, space, url, "--trials", "2",
                 "--jobs", "1", "--format", "json")
    assert first.returncode == 0, first.stderr
    second = tune(run_console_script, baseline, space, url, "--trials", "4",
                  "--jobs", "1", "--format", "json")
    assert second.returncode == 0, second.stderr
    before, after = (json.loads(r.stdout) for r in (first, second))
    assert after["study"] == before["study"]
    done = [t for t in trials(after) if t[1] == "COMPLETE"]
    assert len(done) == 4
    # The first run's trials are kept, not run again.
    assert trials(after)[:len(before["trials"])] == trials(before)


def test_ctrl_c_keeps_the_study(start_console_script, baseline, space,
                                tmp_path):
    import optuna

    url = storage_url(tmp_path)
    process = start_console_script(
        "scheduler-manage", "tune", "--space", str(space), *WORKLOAD,
        "--storage", url, "--trials", "500", "--jobs", "2",
        config_file=baseline)
    deadline = time.monotonic() + 120
    while "trials:" not in process.stderr or "best=" not in process.stderr:
        assert process.popen.poll() is None, process.stderr
        assert time.monotonic() < deadline, process.stderr
        time.sleep(0.2)
    os.kill(process.popen.pid, signal.SIGINT)
    result = process.wait(timeout=120)
    assert result.returncode == 130, result.stderr
    assert "interrupted: the study tune-" in result.stderr
    assert "Traceback" not in result.stderr
    summary, = optuna.study.get_all_study_summaries(url)
    study = optuna.load_study(study_name=summary.study_name, storage=url)
    states = {t.state.name for t in study.trials}
    assert "RUNNING" not in states
    assert "COMPLETE" in states


@pytest.mark.parametrize("space_text, args, message", [
    ("filter_scheduler.weight_clases: {choices: [RAMWeigher]}\n", (),
     "filter_scheduler.weight_clases: no such option; did you mean "
     "'filter_scheduler.weight_classes'?"),
    ("filter_scheduler.weight_classes: {low: 0, high: 1}\n", (),
     "a range needs a number option"),
    ("filter_scheduler.host_subset_size: {low: 1.5, high: 3}\n", (),
     "an integer option takes integer low and high, not 1.5, 3"),
    ("metrics.weight_setting[cpu.percent]: {low: -1, high: -2}\n", (),
     "metrics.weight_setting[cpu.percent]"),
    (SPACE, ("--objective", "hot_minutes"),
     "--objective hot_minutes: no such figure"),
    (SPACE, ("--dask-scheduler", "tcp://127.0.0.1:1"),
     "--dask-scheduler tcp://127.0.0.1:1: cannot connect"),
    (None, (), "--space"),
])
def test_bad_input_exits_2_before_any_trial(
        run_console_script, baseline, tmp_path, space_text, args, message):
    space = tmp_path / "space.yaml"
    if space_text is not None:
        space.write_text(space_text)
    result = tune(run_console_script, baseline, space,
                  storage_url(tmp_path), "--trials", "2", *args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("scheduler-manage: error: ")
    assert message in lines[0]
    assert not (tmp_path / "tune.sqlite").exists()
