"""Start-up's report of the names no option reads: a WARNING each, or with
``--strict`` one exit-2 line naming them all."""

import logging

import pytest
from oslo_config import cfg

from scheduler.cmd import unknown_options
from scheduler.conf import cli

MISSPELT = ("[filter_scheduler]\nweight_clases = MetricsWeigher\n"
            "[filter_schedular]\nenabled_filters = ComputeFilter\n"
            "host_subset_size = 2\n")


def _conf(tmp_path, *args: str) -> tuple[cfg.ConfigOpts, str]:
    path = tmp_path / "scheduler.conf"
    path.write_text(MISSPELT)
    conf = cfg.ConfigOpts()
    cli.parse("scheduler-service", conf, ["--config-file", str(path), *args],
              "scheduler")
    return conf, str(path)


def test_strict_exits_2_naming_every_unknown_name(tmp_path, capsys):
    conf, path = _conf(tmp_path, "--strict")
    with pytest.raises(SystemExit) as exited:
        unknown_options.report_unknown_options("scheduler-service", conf)
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "scheduler-service: error: unknown options refused by --strict "
        f"(strict = true): [filter_scheduler] weight_clases of {path} (did "
        "you mean 'weight_classes'?), [filter_schedular] (unknown group) of "
        f"{path} (did you mean 'filter_scheduler'?)\n")


def test_without_strict_one_warning_per_name(tmp_path, caplog):
    conf, path = _conf(tmp_path)
    with caplog.at_level(logging.WARNING, logger=unknown_options.LOG.name):
        unknown_options.report_unknown_options("scheduler-service", conf)
    assert [r.getMessage() for r in caplog.records] == [
        f"Unknown option weight_clases in [filter_scheduler] of {path}, "
        "ignored; did you mean 'weight_classes'?",
        f"Unknown group [filter_schedular] in {path}, ignored; did you "
        "mean 'filter_scheduler'?"]


def test_strict_in_the_config_file_is_no_unknown_option(tmp_path, capsys):
    path = tmp_path / "scheduler.conf"
    path.write_text("[DEFAULT]\nstrict = true\n")
    conf = cfg.ConfigOpts()
    cli.parse("scheduler-service", conf, ["--config-file", str(path)],
              "scheduler")
    assert conf.strict is True
    unknown_options.report_unknown_options("scheduler-service", conf)
    assert capsys.readouterr().err == ""
