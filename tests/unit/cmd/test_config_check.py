"""``scheduler-manage config check``: each check on its own, each problem
once, unknown groups and options found without false alarms."""

import json

import pytest
from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler.cmd import config_check


@pytest.fixture
def load(tmp_path):
    """Parse ``text`` as the only config file of a private ConfigOpts."""
    def parse(text: str, *register) -> cfg.ConfigOpts:
        path = tmp_path / "scheduler.conf"
        path.write_text(text)
        conf = cfg.ConfigOpts()
        scheduler_conf.register_opts(conf)
        for group, opt in register:
            conf.register_opt(opt, group=group)
        conf(["--config-file", str(path)], project="scheduler")
        return conf
    return parse


def test_defaults_have_no_problem(load):
    assert config_check.problems(load("[DEFAULT]\n")) == []


def test_deprecated_names_and_policy_groups_are_known(load):
    conf = load("[extra]\nold_name = 1\ntypo = 2\n"
                "[policy:quiet]\nbalancer = none\ncolour = blue\n",
                ("extra", cfg.StrOpt("new_name",
                                     deprecated_name="old_name")))
    assert config_check.problems(conf) == [
        "[extra] typo: value '***': unknown option of [extra] in "
        f"{conf.config_file[0]}",
        "[policy:quiet] colour: value '***': unknown option of "
        f"[policy:quiet] in {conf.config_file[0]}",
    ]


def test_unreadable_option_is_reported_once(load):
    # weight_maximums cannot be read: the type check says so, and the
    # weight_maximums check, which reads it again, adds nothing.
    lines = config_check.problems(load(
        "[filter_scheduler]\nweight_maximums = RAMWeigher\n"))
    assert len(lines) == 1
    assert lines[0].startswith(
        "[filter_scheduler] weight_maximums: value 'RAMWeigher':")


def test_policies_file_problem_listed_once(load, tmp_path):
    policies = tmp_path / "policies.json"
    policies.write_text(json.dumps([{"id": "a"}]))
    # The file check and the start-up validator both find policy 'a'.
    lines = config_check.problems(load(
        f"[migration]\npolicies_file = {policies}\n"))
    assert len(lines) == 1
    assert lines[0].startswith(f"[migration] policies_file: value "
                               f"'{policies}': policy 'a': ")


def test_checks_run_independently(load):
    lines = config_check.problems(load(
        "[database]\nconnection = nope\n"
        "[filter_scheduler]\nenabled_filters = Nope\n"
        "weight_maximums = RAMWeigher:0\n"
        "[scheduler]\ndefault_policy = missing\n"))
    assert [line.split(":")[0] for line in lines] == [
        "[database] connection", "[filter_scheduler] enabled_filters",
        "[filter_scheduler] weight_maximums", "[scheduler] default_policy"]


def test_every_policy_and_mapping_problem_in_one_run(load, tmp_path):
    policies = tmp_path / "policies.json"
    policies.write_text(json.dumps([{"id": "a"}, {"id": "b"}]))
    lines = config_check.problems(load(
        "[scheduler]\ncluster_policies = r1:packed, r2:nonexist, "
        "r3:alsonot\n"
        "[policy:packed]\nbalancer = power_saving\n"
        "balancer_parameters = LowUtilization:75\n"
        "[policy:p2]\nbalancer = even_vm_count\n"
        "balancer_parameters = MigrationThreshold:1\n"
        f"[migration]\npolicies_file = {policies}\n"
        "cluster_policies = r1:nope\ndefault_policy = alsonope\n"))
    assert [line.split(": value ")[0] for line in lines] == [
        "[scheduler] cluster_policies", "[scheduler] cluster_policies",
        "[policy:p2] balancer_parameters",
        "[policy:packed] balancer_parameters",
        "[migration] policies_file", "[migration] policies_file",
        "[migration] cluster_policies", "[migration] default_policy"]
    assert "r2:nonexist" in lines[0] and "r3:alsonot" in lines[1]
    assert "policy 'a'" in lines[4] and "policy 'b'" in lines[5]


def test_monitor_names_are_checked_as_the_agent_loads_them(load):
    """A compute_monitor.conf is checked too: the agent would exit 2."""
    lines = config_check.problems(load(
        "[compute_monitor]\nmonitors = cpu,netwrk\n"))
    assert lines == [
        "[compute_monitor] monitors: value 'netwrk': expected an "
        "entry-point name of compute_monitor.monitors: cpu, disk, file, "
        "libvirt, memory, network; did you mean 'network'?"]


def test_misspelt_names_get_the_closest_known_one(load):
    conf = load("[filter_scheduler]\nhost_subset_sise = 2\n"
                "enabled_filters = ComputeFilter,RamFiltr\n"
                "[metric]\nrequired = false\n"
                "[scheduler]\ndefault_policy = power_savings\n")
    path = conf.config_file[0]
    assert config_check.problems(conf) == [
        f"[filter_scheduler] host_subset_sise: value '***': unknown option "
        f"of [filter_scheduler] in {path}; did you mean 'host_subset_size'?",
        f"[metric] required: value '***': unknown group [metric] in {path}; "
        "did you mean 'metrics'?",
        "[filter_scheduler] enabled_filters: value 'RamFiltr': expected an "
        "entry-point name of scheduler.filters: "
        + ", ".join(sorted(config_check.importlib.metadata.entry_points(
            group="scheduler.filters").names))
        + "; did you mean 'RamFilter'?",
        "[scheduler] default_policy: value 'power_savings': unknown "
        "policy, expected one of evenly_distributed, none, power_saving, "
        "steady_load, vm_evenly_distributed; did you mean 'power_saving'?"]


def test_weight_setting_needs_metrics_weigher(load):
    assert config_check.problems(load(
        "[metrics]\nweight_setting = cpu.percent=-1.0\n")) == [
        "[metrics] weight_setting: value 'cpu.percent=-1': MetricsWeigher, "
        "which weighs these metrics, is in neither [filter_scheduler] "
        "weight_classes nor a cluster policy's weighers: add it there, or "
        "the setting has no effect"]


def test_metrics_weigher_needs_weight_setting(load):
    assert config_check.problems(load(
        "[scheduler]\ndefault_policy = mine\n"
        "[policy:mine]\nweighers = RAMWeigher:1, MetricsWeigher:2\n")) == [
        "[metrics] weight_setting: value '': empty, while MetricsWeigher is "
        "enabled ([policy:mine] weighers): it weighs nothing; set it, e.g. "
        "memory.free=1e-9, cpu.percent=-1.0"]


def test_metrics_weigher_of_a_policy_reads_weight_setting(load):
    # No fleet to compare the names with (no database): a note, no problem.
    notes: list[str] = []
    assert config_check.problems(load(
        "[database]\nconnection = sqlite:////nonexistent/x.sqlite\n"
        "[metrics]\nweight_setting = cpu.percent=-1.0\n"
        "[scheduler]\ndefault_policy = mine\n"
        "[policy:mine]\nweighers = MetricsWeigher:1\n"), notes) == []
    assert len(notes) == 1 and "no database at" in notes[0]


def test_misspelt_choices_and_weigher_names_get_a_hint(load):
    assert config_check.problems(load(
        "[filter_scheduler]\nweight_normalization = minmx\n"
        "weight_maximums = RAMWeighr:8192\n")) == [
        "[filter_scheduler] weight_normalization: value 'minmx': Valid "
        "values are [minmax, rank, hardmax, none], but found 'minmx'; did "
        "you mean 'minmax'?",
        "[filter_scheduler] weight_maximums: value 'RAMWeighr': not a "
        "weigher: expected entry-point names of scheduler.weighers; did "
        "you mean 'RAMWeigher'?"]
    assert config_check.problems(load(
        "[scheduler]\ndefault_policy = mine\n"
        "[policy:mine]\nnormalization = rnk\n")) == [
        "[policy:mine] normalization: value 'rnk': expected one of minmax, "
        "rank, hardmax, none; did you mean 'rank'?"]
