"""Migration policies: built-ins, the custom policies file, the choice of
a policy and the bandwidth per migration."""

import copy
import json

import pytest
from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler import exception
from scheduler.policies.migration import policies


@pytest.fixture
def conf() -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    conf([])
    return conf


def _item(action: str, *params) -> dict:
    return {"action": action, "params": list(params)}


# oVirt's published "Minimal downtime" document, with a string id.
SEED_MINIMAL_DOWNTIME = {
    "id": "custom_minimal", "maxMigrations": 2, "autoConvergence": True,
    "migrationCompression": True, "enableGuestEvents": True,
    "name": "Minimal downtime", "description": "As published.",
    "config": {
        "convergenceItems": [
            {"stallingLimit": limit,
             "convergenceItem": _item("setDowntime", str(ms))}
            for limit, ms in ((1, 150), (2, 200), (3, 300), (4, 400),
                              (6, 500))],
        "initialItems": [_item("setDowntime", "100")],
        "lastItems": [_item("abort")],
    },
}


def _policy(policy_id: str, **changes) -> dict:
    policy = copy.deepcopy(SEED_MINIMAL_DOWNTIME)
    policy["id"] = policy_id
    policy.update(changes)
    return policy


@pytest.fixture
def policies_file(tmp_path, conf):
    """Writes the document (JSON unless a str) and points the option at
    it."""
    def write(document) -> str:
        path = tmp_path / "migration_policies.json"
        path.write_text(document if isinstance(document, str)
                        else json.dumps(document))
        conf.set_override("policies_file", str(path), group="migration")
        return str(path)

    return write


def test_builtins_carry_the_published_values(policies_file):
    builtins = policies.BUILTIN_POLICIES
    assert sorted(builtins) == ["legacy", "minimal_downtime", "post_copy",
                                "suspend_workload_if_needed"]
    custom, errors = policies.parse_policies_file(
        policies_file([SEED_MINIMAL_DOWNTIME]))
    assert errors == {}
    published = custom["custom_minimal"]
    minimal = builtins["minimal_downtime"]
    assert minimal.schedule == published.schedule
    assert minimal.max_migrations == 2
    suspend = builtins["suspend_workload_if_needed"]
    assert suspend.max_migrations == 1
    assert suspend.schedule.convergence_items == minimal.schedule\
        .convergence_items
    assert suspend.schedule.last_items == (
        policies.Action("setDowntime", (5000,)), policies.Action("abort"))
    assert builtins["post_copy"].schedule.last_items == (
        policies.Action("postcopy"),)
    assert builtins["legacy"].schedule is None


def test_custom_policies_load_and_are_chosen_per_cluster_and_request(
        conf, policies_file):
    policies_file([_policy("fast", maxMigrations=4)])
    conf.set_override("cluster_policies", "rack-a:fast, rack-b:post_copy",
                      group="migration")
    loaded = policies.load_migration_policies(conf)
    assert loaded.policy_for("rack-a").max_migrations == 4
    assert loaded.policy_for("rack-b").id == "post_copy"
    assert loaded.policy_for("rack-z").id == "minimal_downtime"
    assert loaded.policy_for(None).id == "minimal_downtime"
    assert loaded.policy_for("rack-a", requested="legacy").id == "legacy"


def test_unknown_requested_policy_is_an_invalid_request(conf):
    loaded = policies.load_migration_policies(conf)
    with pytest.raises(exception.InvalidRequest, match="'nope'"):
        loaded.policy_for("rack-a", requested="nope")


def _action_at(path_items, value):
    policy = _policy("bad")
    target = policy
    for key in path_items[:-1]:
        target = target[key]
    target[path_items[-1]] = value
    return policy


@pytest.mark.parametrize("policy, field, problem", [
    (_policy("bad", maxMigrations="2"), "$[1].maxMigrations",
     "is not of type 'integer'"),
    (_policy("bad", autoConvergence="yes"), "$[1].autoConvergence",
     "is not of type 'boolean'"),
    (_action_at(["config", "lastItems", 0], _item("pause")),
     "$[1].config.lastItems[0].action", "is not one of"),
    (_action_at(["config", "convergenceItems", 0, "stallingLimit"], -1),
     "$[1].config.convergenceItems[0].stallingLimit",
     "less than the minimum of 0"),
    (_action_at(["config", "convergenceItems", 2, "stallingLimit"], 2),
     "$[1].config.convergenceItems[2].stallingLimit",
     "not greater than the previous limit 2"),
    (_action_at(["config", "initialItems", 0], _item("abort")),
     "$[1].config.initialItems[0].action", "'setDowntime' was expected"),
    (_action_at(["config", "convergenceItems", 0, "convergenceItem"],
                _item("setDowntime")),
     "$[1].config.convergenceItems[0].convergenceItem.params",
     "should be non-empty"),
    (_action_at(["config", "convergenceItems", 0, "convergenceItem"],
                _item("setDowntime", "soon")),
     "$[1].config.convergenceItems[0].convergenceItem.params[0]",
     "is not valid under any of the given schemas"),
    (_action_at(["config", "convergenceItems", 4, "convergenceItem"],
                _item("abort")),
     "$[1].config.convergenceItems[4].convergenceItem.action",
     "nothing can follow 'abort'"),
    (_policy("good"), "$[1].id", "is used by an earlier policy"),
    (_policy("minimal_downtime"), "$[1].id", "is a built-in policy"),
    (_policy("bad", colour="red"), "$[1]",
     "Additional properties are not allowed ('colour'"),
])
def test_bad_policy_stops_start_up_naming_file_policy_and_field(
        conf, policies_file, policy, field, problem):
    path = policies_file([_policy("good"), policy])
    with pytest.raises(exception.ConfigError) as info:
        policies.load_migration_policies(conf)
    message = str(info.value)
    assert message.startswith(
        f"invalid value {path!r} for [migration] policies_file: "
        f"policy {policy['id']!r}: {field}: ")
    assert problem in message


@pytest.mark.parametrize("document, problem", [
    ("{not json", "not JSON"),
    ({"policies": []}, "$: {'policies': []} is not of type 'array'"),
])
def test_unusable_file_stops_start_up(conf, policies_file, document,
                                      problem):
    policies_file(document)
    with pytest.raises(exception.ConfigError, match="policies_file") as info:
        policies.load_migration_policies(conf)
    assert problem in str(info.value)


def test_missing_file_stops_start_up(conf, tmp_path):
    conf.set_override("policies_file", str(tmp_path / "absent.json"),
                      group="migration")
    with pytest.raises(exception.ConfigError, match="cannot read the file"):
        policies.load_migration_policies(conf)


def test_cluster_mapped_to_unknown_policy_stops_start_up(conf):
    conf.set_override("cluster_policies", "rack-a:fastest",
                      group="migration")
    with pytest.raises(exception.ConfigError) as info:
        policies.load_migration_policies(conf)
    assert str(info.value).startswith(
        "invalid value 'rack-a:fastest' for [migration] cluster_policies: "
        "unknown migration policy, expected one of legacy, ")


def test_unknown_default_policy_stops_start_up(conf):
    conf.set_override("default_policy", "fastest", group="migration")
    with pytest.raises(exception.ConfigError, match=r"default_policy"):
        policies.load_migration_policies(conf)


def test_at_runtime_a_bad_policy_only_affects_its_clusters(
        conf, policies_file):
    bad = _policy("broken", maxMigrations=0)
    policies_file([bad, _policy("fine")])
    conf.set_override("cluster_policies", "rack-a:broken, rack-b:fine",
                      group="migration")
    loaded = policies.read_migration_policies(conf)
    assert loaded.policy_for("rack-b").id == "fine"
    assert loaded.policy_for("rack-c").id == "minimal_downtime"
    with pytest.raises(policies.UnusableMigrationPolicy,
                       match=r"'broken' of cluster 'rack-a'.*"
                       r"\$\[0\]\.maxMigrations"):
        loaded.policy_for("rack-a")
    assert set(loaded.errors) == {"broken"}


def test_at_runtime_an_unreadable_file_leaves_the_builtins(
        conf, policies_file):
    policies_file("[")
    conf.set_override("cluster_policies", "rack-a:fine", group="migration")
    loaded = policies.read_migration_policies(conf)
    assert loaded.policy_for("rack-b").id == "minimal_downtime"
    assert "not JSON" in loaded.errors[None]
    with pytest.raises(policies.UnusableMigrationPolicy,
                       match="unknown migration policy"):
        loaded.policy_for("rack-a")


@pytest.mark.parametrize("setting, link, hypervisor, policy_id, expected", [
    ("auto", 10000, None, "minimal_downtime", 5000),
    ("auto", 10000, None, "suspend_workload_if_needed", 10000),
    ("auto", None, 256, "minimal_downtime", 256),
    ("auto", None, None, "minimal_downtime", None),
    ("hypervisor_default", 10000, 256, "minimal_downtime", 256),
    ("hypervisor_default", 10000, None, "minimal_downtime", None),
    ("1000", None, None, "minimal_downtime", 500),
    ("1000", 10000, None, "legacy", 1000),
    ("1", None, None, "minimal_downtime", 1),
])
def test_bandwidth_per_migration(conf, setting, link, hypervisor, policy_id,
                                 expected):
    conf.set_override("bandwidth", setting, group="migration")
    policy = policies.BUILTIN_POLICIES[policy_id]
    assert policies.bandwidth_per_migration(
        conf, policy, link_speed_mbps=link,
        hypervisor_default_mbps=hypervisor) == expected


@pytest.mark.parametrize("value", ["0", "-5", "fast", "1.5"])
def test_bad_bandwidth_is_rejected(tmp_path, value):
    path = tmp_path / "s.conf"
    path.write_text(f"[migration]\nbandwidth = {value}\n")
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    conf(["--config-file", str(path)])
    with pytest.raises(cfg.ConfigFileValueError,
                       match="auto, hypervisor_default or a whole number"):
        _ = conf.migration.bandwidth


@pytest.mark.parametrize("value", [0, -5])
def test_bad_bandwidth_override_is_rejected(conf, value):
    with pytest.raises(ValueError, match="greater than 0"):
        conf.set_override("bandwidth", value, group="migration")


def test_schema_is_valid_and_packaged():
    schema = policies.policies_schema()
    assert schema["type"] == "array"
