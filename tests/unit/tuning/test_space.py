"""The --space file: what it may name, the ranges it may give, and the
configuration file a point of it makes."""

import optuna
import pytest

from scheduler.simulation import runs
from scheduler.tuning import space


@pytest.fixture
def baseline(tmp_path):
    path = tmp_path / "baseline.conf"
    path.write_text(
        "[filter_scheduler]\nweight_classes = RAMWeigher,MetricsWeigher\n"
        "ram_weight_multiplier = 0.5\n"
        "[metrics]\nweight_setting = memory.free=1e-9, cpu.percent=-1.0\n"
        "[policy:tuned]\nweighers = MetricsWeigher:2,RAMWeigher:1\n"
        "balancer = evenly_distributed\n"
        "balancer_parameters = HighUtilization:80,LowUtilization:20\n")
    return runs.load_config(str(path))


def _space(tmp_path, text):
    path = tmp_path / "space.yaml"
    path.write_text(text)
    return str(path)


def _read(tmp_path, baseline, text):
    return space.read_space(_space(tmp_path, text), baseline)


def test_ranges_and_choices_become_optuna_distributions(tmp_path,
                                                        baseline):
    dims = _read(tmp_path, baseline, """
filter_scheduler.ram_weight_multiplier: {low: 0.0, high: 1.0}
filter_scheduler.host_subset_size: {low: 1, high: 5, step: 2}
metrics.weight_setting[cpu.percent:p95:1h]: {low: 0.01, high: 2, log: true}
filter_scheduler.weight_normalization: {choices: [minmax, rank]}
filter_scheduler.weight_classes: {choices: [[RAMWeigher], RAMWeigher]}
metrics.expected_fallback_percent: {low: 5, high: 100.0}
""")
    by_key = {d.key: d.distribution for d in dims}
    assert by_key["filter_scheduler.ram_weight_multiplier"] == \
        optuna.distributions.FloatDistribution(0.0, 1.0)
    assert by_key["filter_scheduler.host_subset_size"] == \
        optuna.distributions.IntDistribution(1, 5, step=2)
    assert by_key["metrics.weight_setting[cpu.percent:p95:1h]"] == \
        optuna.distributions.FloatDistribution(0.01, 2.0, log=True)
    # A list option's choice is kept as its text.
    assert by_key["filter_scheduler.weight_classes"].choices == (
        "RAMWeigher", "RAMWeigher")
    # A percentage is a number option of the project's own type.
    assert by_key["metrics.expected_fallback_percent"] == \
        optuna.distributions.FloatDistribution(5.0, 100.0)
    entry = dims[2]
    assert (entry.group, entry.option, entry.entry) == (
        "metrics", "weight_setting", "cpu.percent:p95:1h")


@pytest.mark.parametrize("text, message", [
    ("filter_scheduler.weight_clases: {choices: [RAMWeigher]}",
     "filter_scheduler.weight_clases: no such option; did you mean "
     "'filter_scheduler.weight_classes'?"),
    ("filter_scheduler.ram_weight_multiplier: {low: a, high: 1}",
     "low, high and step must be numbers"),
    ("filter_scheduler.ram_weight_multiplier: {low: true, high: 1}",
     "low, high and step must be numbers"),
    ("filter_scheduler.host_subset_size: {low: 1.5, high: 3}",
     "an integer option takes integer low and high"),
    ("filter_scheduler.ram_weight_multiplier: {low: 1, high: 0}",
     "low 1 must be below high 0"),
    ("filter_scheduler.ram_weight_multiplier: {low: 0, high: 1, lo: 2}",
     "not lo"),
    ("filter_scheduler.ram_weight_multiplier: {low: 0}",
     "expected both low and high"),
    ("filter_scheduler.weight_normalization: {low: 0, high: 1}",
     "a range needs a number option"),
    ("metrics.expected_instance_cpu: {low: 0, high: 1}",
     "a range needs a number option"),
    ("filter_scheduler.weight_normalization: {choices: [minmax, linear]}",
     "'linear' is not a valid value"),
    ("filter_scheduler.ram_weight_multiplier: {low: 0, high: 1, log: true}",
     "log needs low > 0"),
    ("filter_scheduler.ram_weight_multiplier[x]: {low: 0, high: 1}",
     "only balancer_parameters, weighers, weight_setting hold named"),
    ("filter_scheduler.ram_weight_multiplier: 3",
     "expected {low: L, high: H} or {choices: [...]}"),
    ("ram_weight_multiplier: {low: 0, high: 1}",
     "expected group.option or group.option[entry]"),
    ("- a\n- b", "expected a mapping of options"),
    ("a: [b", "not YAML"),
])
def test_a_space_that_cannot_be_searched_names_the_key(tmp_path, baseline,
                                                       text, message):
    with pytest.raises(space.SpaceError) as raised:
        _read(tmp_path, baseline, text)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_missing_space_file(tmp_path, baseline):
    with pytest.raises(space.SpaceError, match="No such file"):
        space.read_space(str(tmp_path / "none.yaml"), baseline)


def test_policy_groups_of_the_baseline_can_be_searched(tmp_path, baseline):
    dims = _read(tmp_path, baseline, """
policy:tuned.balancer_parameters[HighUtilization]: {low: 60, high: 95}
policy:tuned.weighers[MetricsWeigher]: {low: 1, high: 5}
""")
    assert [type(d.distribution).__name__ for d in dims] == [
        "IntDistribution", "IntDistribution"]
    with pytest.raises(space.SpaceError, match="no such option"):
        _read(tmp_path, baseline,
              "policy:other.weighers[RAMWeigher]: {low: 1, high: 2}")


def test_a_point_is_written_as_the_options_it_sets(tmp_path, baseline):
    dims = _read(tmp_path, baseline, """
filter_scheduler.ram_weight_multiplier: {low: 0.0, high: 1.0}
metrics.weight_setting[cpu.percent]: {low: -2.0, high: 0.0}
metrics.weight_setting[disk.percent]: {low: -2.0, high: 0.0}
metrics.required: {choices: [true, false]}
policy:tuned.balancer_parameters[HighUtilization]: {low: 60, high: 95}
""")
    texts = space.option_values(dims, {
        "filter_scheduler.ram_weight_multiplier": 0.25,
        "metrics.weight_setting[cpu.percent]": -1.5,
        "metrics.weight_setting[disk.percent]": -0.5,
        "metrics.required": True,
        "policy:tuned.balancer_parameters[HighUtilization]": 70}, baseline)
    # Entries replace or join the baseline's own, in its order.
    assert texts == {
        ("filter_scheduler", "ram_weight_multiplier"): "0.25",
        ("metrics", "weight_setting"):
            "memory.free=1e-09, cpu.percent=-1.5, disk.percent=-0.5",
        ("metrics", "required"): "true",
        ("policy:tuned", "balancer_parameters"):
            "HighUtilization:70,LowUtilization:20"}
    text = space.conf_text(texts, ["made by a test", ""])
    assert text.startswith("# made by a test\n#\n\n[filter_scheduler]\n")
    path = tmp_path / "point.conf"
    path.write_text(text)
    conf = runs.load_config([str(tmp_path / "baseline.conf"), str(path)])
    assert conf.filter_scheduler.ram_weight_multiplier == 0.25
    assert conf.metrics.weight_setting == [
        ("memory.free", 1e-9), ("cpu.percent", -1.5),
        ("disk.percent", -0.5)]
    assert conf.metrics.required is True
    assert conf["policy:tuned"].balancer_parameters == [
        "HighUtilization:70", "LowUtilization:20"]


def test_the_baselines_point_is_where_it_lies_inside_the_space(tmp_path,
                                                              baseline):
    dims = _read(tmp_path, baseline, """
filter_scheduler.ram_weight_multiplier: {low: 0.0, high: 1.0}
metrics.weight_setting[cpu.percent]: {low: -2.0, high: 0.0}
metrics.weight_setting[disk.percent]: {low: -2.0, high: 0.0}
filter_scheduler.weight_classes:
  choices: ["RAMWeigher,MetricsWeigher", MetricsWeigher]
filter_scheduler.weight_normalization: {choices: [rank, hardmax]}
""")
    assert space.baseline_point(dims, baseline) == {
        "filter_scheduler.ram_weight_multiplier": 0.5,
        "metrics.weight_setting[cpu.percent]": -1.0,
        "filter_scheduler.weight_classes": "RAMWeigher,MetricsWeigher"}
