"""config check on windowed statistics and the history they need."""

import pytest
from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler.cmd import common
from scheduler.cmd import config_check
from scheduler.cmd import weight_setting_check
from scheduler.conf import cli

WEIGHED = ("[filter_scheduler]\nweight_classes = MetricsWeigher\n"
           "[database]\nconnection = sqlite:////nonexistent/x.sqlite\n")


@pytest.fixture
def load(tmp_path):
    def parse(text: str) -> cfg.ConfigOpts:
        path = tmp_path / "scheduler.conf"
        path.write_text(text)
        conf = cfg.ConfigOpts()
        scheduler_conf.register_opts(conf)
        conf(["--config-file", str(path)], project="scheduler")
        return conf
    return parse


def test_a_windowed_statistic_is_accepted(load):
    assert config_check.problems(load(
        WEIGHED + "[metrics]\nweight_setting = cpu.percent:p95:1h=-1\n"),
        []) == []


@pytest.mark.parametrize("setting, named", [
    ("cpu.percent:median:1h=-1", "unknown statistic 'median'"),
    ("cpu.percent:mean:1d=-1", "window '1d' is not a duration"),
])
def test_an_unknown_stat_or_malformed_window_is_named(load, setting,
                                                      named):
    lines = config_check.problems(load(
        WEIGHED + f"[metrics]\nweight_setting = {setting}\n"), [])
    assert len(lines) == 1
    assert lines[0].startswith("[metrics] weight_setting: value ")
    assert named in lines[0]


def test_a_window_longer_than_the_history_is_named_with_it(load):
    lines = config_check.problems(load(
        "[filter_scheduler]\nweight_classes = MetricsWeigher, "
        "LoadRiskWeigher\n"
        "[database]\nconnection = sqlite:////nonexistent/x.sqlite\n"
        "[metrics]\nhistory_window = 30m\nrisk_window = 2h\n"
        "expected_instance_cpu = measured\ninstance_history_window = 30m\n"
        "weight_setting = cpu.percent:mean:1h=-1\n"), [])
    # target_window (1h) is read by no enabled weigher: not named.
    assert lines == [
        "[metrics] risk_window: value '2h': a window of 2h, longer than "
        "[metrics] history_window = 30m: raise history_window or shorten "
        "the window",
        "[metrics] expected_window: value '1h': a window of 1h, longer "
        "than [metrics] instance_history_window = 30m: raise "
        "instance_history_window or shorten the window",
        "[metrics] weight_setting: value 'cpu.percent:mean:1h': a window "
        "of 1h, longer than [metrics] history_window = 30m: raise "
        "history_window or shorten the window",
    ]


def test_expected_window_is_held_by_the_instance_history(load):
    # A long instance history covers a window the node history does not;
    # without one, instances count at their newest entry: no problem.
    for held in ("6h", "0"):
        assert config_check.problems(load(
            "[filter_scheduler]\nweight_classes = InstanceLoadWeigher\n"
            "[database]\nconnection = sqlite:////nonexistent/x.sqlite\n"
            "[metrics]\nhistory_window = 30m\nexpected_window = 6h\n"
            f"instance_history_window = {held}\n"), []) == []


@pytest.mark.parametrize("option, value", [
    ("expected_instance_cpu", "busy"),
    ("expected_instance_cpu", "150"),
    ("history_window", "forever"),
])
def test_bad_load_options_are_named(load, option, value):
    lines = config_check.problems(load(
        f"[metrics]\n{option} = {value}\n"), [])
    assert len(lines) == 1
    assert lines[0].startswith(f"[metrics] {option}: value '{value}'")


@pytest.mark.parametrize("option", ["target_cpu_percent",
                                    "expected_fallback_percent"])
@pytest.mark.parametrize("value", ["150", "-1", "nan", "inf", "many"])
def test_a_percent_outside_0_to_100_is_named(load, option, value):
    lines = config_check.problems(load(f"[metrics]\n{option} = {value}\n"),
                                  [])
    assert lines == [f"[metrics] {option}: value '{value}': '{value}' is "
                     "not a number from 0 to 100"]


def test_start_up_exits_2_on_a_window_longer_than_the_history(load,
                                                                 capsys):
    conf = load("[metrics]\nhistory_window = 30m\n"
                "weight_setting = cpu.percent:mean:1h=-1\n")
    with pytest.raises(SystemExit) as exited:
        common.validate("scheduler-service", conf,
                        [weight_setting_check.validate_windows])
    assert exited.value.code == cli.CONFIG_ERROR_EXIT
    error = capsys.readouterr().err
    assert "[metrics] weight_setting" in error
    assert "history_window = 30m" in error
