"""Options of installed plugin packages are known to config check and to
the programs' start-up (their ``oslo.config.opts`` entry points); other
packages' are not, and misspelt names are warned about at start-up."""

import logging
import textwrap

import pytest
from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler.cmd import config_check
from scheduler.cmd import unknown_options
from scheduler.conf import cli

PLUGIN_MODULE = '''
from oslo_config import cfg

OPTS = [cfg.IntOpt("max_widgets", default=3, min=0)]


def list_opts():
    return [("widget_plugins", OPTS)]


def broken():
    raise RuntimeError("cannot list")


class WidgetFilter:
    pass
'''


def _distribution(site, name: str, entry_points: str) -> None:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A directory on sys.path holding a plugin package (a filter and its
    options) and a library that only declares options."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "widget_plugins.py").write_text(PLUGIN_MODULE)
    _distribution(site, "widget-plugins", """
        [scheduler.filters]
        WidgetFilter = widget_plugins:WidgetFilter
        [oslo.config.opts]
        widget_plugins = widget_plugins:list_opts
        """)
    _distribution(site, "some-library", """
        [oslo.config.opts]
        some_library = widget_plugins:list_opts
        """)
    monkeypatch.syspath_prepend(str(site))
    return site


def _conf(tmp_path, text: str) -> cfg.ConfigOpts:
    path = tmp_path / "scheduler.conf"
    path.write_text(text)
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    conf(["--config-file", str(path)], project="scheduler")
    return conf


def test_plugin_options_are_known_and_checked(site, tmp_path):
    assert config_check.problems(_conf(
        tmp_path, "[widget_plugins]\nmax_widgets = 5\n")) == []
    lines = config_check.problems(_conf(
        tmp_path, "[widget_plugins]\nmax_widgets = -1\nmax_widget = 2\n"))
    assert [line.split(": value ")[0] for line in lines] == [
        "[widget_plugins] max_widgets", "[widget_plugins] max_widget"]
    assert "did you mean 'max_widgets'?" in lines[1]


def test_options_of_packages_without_plugins_are_not_loaded(site, tmp_path):
    # A library (no plugin of ours) may declare what it likes: not read.
    (site / "some-library-1.0.dist-info" / "entry_points.txt").write_text(
        "[oslo.config.opts]\nsome_library = widget_plugins:broken\n")
    assert config_check.problems(_conf(
        tmp_path, "[DEFAULT]\n")) == []


def test_a_plugin_package_whose_options_fail_to_load(site, tmp_path):
    (site / "widget-plugins-1.0.dist-info" / "entry_points.txt").write_text(
        "[scheduler.filters]\nWidgetFilter = widget_plugins:WidgetFilter\n"
        "[oslo.config.opts]\nwidget_plugins = widget_plugins:broken\n")
    assert config_check.problems(_conf(tmp_path, "[DEFAULT]\n")) == [
        "[oslo.config.opts] widget_plugins: value "
        "'widget_plugins:broken': the plugin package's options cannot be "
        "registered: cannot list"]


def test_start_up_warns_once_per_unknown_name(tmp_path, caplog):
    conf = _conf(tmp_path, "[filter_scheduler]\nhost_subset_sise = 2\n"
                 "[metric]\nrequired = false\nmax_age = 3\n"
                 "[metrics]\nweight_settings = cpu.percent=-1\n"
                 "[compute_monitor]\nintervall = 5\n")
    conf.register_opt(cli.strict_opt)  # as every program does
    path = conf.config_file[0]
    with caplog.at_level(logging.WARNING, logger=unknown_options.LOG.name):
        unknown_options.report_unknown_options("prog", conf)
    assert [r.getMessage() for r in caplog.records
            if r.name == unknown_options.LOG.name] == [
        f"Unknown option host_subset_sise in [filter_scheduler] of {path}, "
        "ignored; did you mean 'host_subset_size'?",
        f"Unknown group [metric] in {path}, ignored; did you mean "
        "'metrics'?",
        f"Unknown option weight_settings in [metrics] of {path}, ignored; "
        "did you mean 'weight_setting'?",
        f"Unknown option intervall in [compute_monitor] of {path}, "
        "ignored; did you mean 'interval'?",
    ]
