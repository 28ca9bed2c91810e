"""Non-finite numbers in the configuration stop start-up with status 2
naming the option, and config check lists them (issue 18 item 9)."""

import pytest
from oslo_config import cfg

from compute_monitor import conf as monitor_conf
from scheduler.cmd import common
from scheduler.cmd import config_check
from scheduler.conf import cli
from scheduler.conf import metrics as metrics_conf
from scheduler.conf import opts as scheduler_opts
from tests.fakes import conf_from_text

NON_FINITE = ["nan", "NaN", "inf", "-inf", "1e999", "-1e999"]


def float_options() -> list[tuple[str, str]]:
    """(group, name) of every float option of the scheduler and the
    agent."""
    found = set()
    for list_opts in (scheduler_opts.list_opts, monitor_conf.list_opts):
        for group, opts in list_opts():
            name = getattr(group, "name", group) or "DEFAULT"
            found |= {(name, opt.dest) for opt in opts
                      if isinstance(opt, cfg.FloatOpt)}
    return sorted(found)


@pytest.fixture
def load(tmp_path):
    def parse(text: str) -> cfg.ConfigOpts:
        return conf_from_text(tmp_path / "scheduler.conf", text,
                              monitor_conf.register_opts,
                              project="scheduler")
    return parse


def test_every_float_option_is_found():
    options = float_options()
    assert ("metrics", "weight_multiplier") in options
    assert ("filter_scheduler", "ram_allocation_ratio") in options
    assert ("compute_monitor", "cpu_allocation_ratio") in options


@pytest.mark.parametrize("group, name", float_options())
@pytest.mark.parametrize("value", ["nan", "inf", "1e999"])
def test_a_non_finite_float_option_is_refused_naming_it(
        load, group, name, value):
    conf = load(f"[{group}]\n{name} = {value}\n")
    problems = list(common.option_problems(conf))
    assert [(p.group, p.option, p.value) for p in problems] == [
        (group, name, value)]
    assert "expected a finite number" in str(problems[0])


@pytest.mark.parametrize("value", NON_FINITE)
def test_a_non_finite_weight_setting_ratio_is_refused(value):
    with pytest.raises(ValueError, match=(
            rf"ratio '{value}' of cpu.percent is not a finite number")):
        metrics_conf.WeightSetting()(f"memory.free=1, cpu.percent={value}")


def test_finite_ratios_still_parse():
    assert metrics_conf.WeightSetting()("cpu.percent=-1e3, m.x=1e-9") == [
        ("cpu.percent", -1000.0), ("m.x", 1e-9)]


@pytest.mark.parametrize("value", ["nan", "inf", "1e999"])
def test_start_up_exits_2_naming_the_option(load, capsys, value):
    conf = load(f"[metrics]\nweight_setting = cpu.percent={value}\n")
    with pytest.raises(SystemExit) as exited:
        common.validate("scheduler-service", conf)
    assert exited.value.code == cli.CONFIG_ERROR_EXIT
    error = capsys.readouterr().err
    assert error.startswith(
        "scheduler-service: error: invalid value "
        f"'cpu.percent={value}' for [metrics] weight_setting: ")
    assert "not a finite number" in error


def test_config_check_lists_each_non_finite_option(load):
    lines = config_check.problems(load(
        "[metrics]\nweight_setting = cpu.percent=nan\n"
        "weight_of_unavailable = -inf\n"
        "[filter_scheduler]\ncpu_allocation_ratio = nan\n"))
    assert sorted(line.split(":")[0] for line in lines) == [
        "[filter_scheduler] cpu_allocation_ratio",
        "[metrics] weight_of_unavailable", "[metrics] weight_setting"]
