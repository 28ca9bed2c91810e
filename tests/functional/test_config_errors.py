"""Bad cluster and migration policies stop the real console scripts at
start-up: exit status 2 and one line naming the group, the option (or
parameter, or field of the policies file) and what is allowed."""

import json

import pytest

from tests.functional import api_server

GOOD_POLICY = {
    "id": "patient", "name": "Patient", "description": "Waits longer.",
    "maxMigrations": 1, "autoConvergence": True,
    "migrationCompression": False, "enableGuestEvents": True,
    "config": {
        "initialItems": [{"action": "setDowntime", "params": ["100"]}],
        "convergenceItems": [
            {"stallingLimit": 5,
             "convergenceItem": {"action": "setDowntime",
                                 "params": ["1000"]}}],
        "lastItems": [{"action": "abort", "params": []}],
    },
}


def _one_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("sections, expected", [
    ({"scheduler": {"cluster_policies": "rack-a:fastest"}},
     "scheduler-manage: error: invalid value 'rack-a:fastest' for "
     "[scheduler] cluster_policies: unknown policy, expected one of "),
    ({"scheduler": {"cluster_policies": "rack-a:none, rack-a:packed"}},
     "[scheduler] cluster_policies: cluster 'rack-a' is mapped twice"),
    ({"scheduler": {"default_policy": "packed"},
      "policy:packed": {"balancer": "power_saving",
                        "balancer_parameters": "LowUtilization:75"}},
     "invalid value 'LowUtilization=75' for [policy:packed] "
     "balancer_parameters: an integer from 0 to 49"),
    ({"policy:packed": {"balancer": "even_distribution",
                        "balancer_parameters": "HighUtilization:40"}},
     "invalid value 'HighUtilization=40' for [policy:packed] "
     "balancer_parameters: an integer from 50 to 99"),
    ({"policy:evenly_distributed": {
        "balancer_parameters": "CpuOverCommitDurationMinutes:0"}},
     "[policy:evenly_distributed] balancer_parameters: an integer >= 1"),
    ({"policy:packed": {"weighers": "CPUWeigher:high"}},
     "invalid value 'CPUWeigher:high' for [policy:packed] weighers: "
     "expected Name:factor with an integer factor"),
    ({"policy:packed": {"filters": "RamFilter, GpuFilter:first"}},
     "invalid value 'GpuFilter' for [policy:packed] filters: expected "
     "entry-point names of scheduler.filters"),
    ({"policy:packed": {"balancer": "round_robin"}},
     "invalid value 'round_robin' for [policy:packed] balancer: expected "
     "an entry-point name of scheduler.balancers or none"),
    ({"migration": {"cluster_policies": "rack-a:fastest"}},
     "invalid value 'rack-a:fastest' for [migration] cluster_policies: "
     "unknown migration policy"),
    ({"migration": {"bandwidth": "0"}},
     "[migration] bandwidth: '0' is not auto, hypervisor_default or a "
     "whole number of Mbps greater than 0"),
    # Non-finite numbers (issue 18 item 9): a NaN ratio would remove every
    # host, an infinite one send everything to one host.
    ({"metrics": {"weight_setting": "memory.free=1, cpu.percent=nan"}},
     "invalid value 'memory.free=1, cpu.percent=nan' for [metrics] "
     "weight_setting: ratio 'nan' of cpu.percent is not a finite number"),
    ({"filter_scheduler": {"ram_allocation_ratio": "1e999"}},
     "invalid value '1e999' for [filter_scheduler] ram_allocation_ratio: "
     "expected a finite number"),
])
def test_bad_policy_config_exits_2_with_one_line(
        write_config, run_console_script, sections, expected):
    config = write_config(sections)
    result = run_console_script("scheduler-manage", "db", "version",
                                config_file=config)
    assert result.returncode == 2, result
    assert expected in _one_line(result)


@pytest.mark.parametrize("change, expected", [
    ({"maxMigrations": "2"},
     "policy 'patient': $[0].maxMigrations: '2' is not of type 'integer'"),
    ({"config": {**GOOD_POLICY["config"], "lastItems": [
        {"action": "pause", "params": []}]}},
     "policy 'patient': $[0].config.lastItems[0].action: 'pause' is not "
     "one of ['setDowntime', 'postcopy', 'abort']"),
    ({"config": {**GOOD_POLICY["config"], "convergenceItems": [
        {"stallingLimit": -1, "convergenceItem": {"action": "abort",
                                                  "params": []}}]}},
     "policy 'patient': $[0].config.convergenceItems[0].stallingLimit: -1 "
     "is less than the minimum of 0"),
    ({"id": "legacy"},
     "policy 'legacy': $[0].id: 'legacy' is a built-in policy"),
])
def test_bad_policies_file_exits_2_naming_file_policy_and_field(
        write_config, run_console_script, tmp_path, change, expected):
    path = tmp_path / "policies.json"
    path.write_text(json.dumps([{**GOOD_POLICY, **change}]))
    config = write_config({"migration": {"policies_file": path}})
    result = run_console_script("scheduler-manage", "db", "version",
                                config_file=config)
    assert result.returncode == 2, result
    line = _one_line(result)
    assert f"invalid value '{path}' for [migration] policies_file: " in line
    assert expected in line


def test_duplicate_ids_in_the_policies_file_exit_2(
        write_config, run_console_script, tmp_path):
    path = tmp_path / "policies.json"
    path.write_text(json.dumps([GOOD_POLICY, GOOD_POLICY]))
    config = write_config({"migration": {"policies_file": path}})
    result = run_console_script("scheduler-manage", "db", "version",
                                config_file=config)
    assert result.returncode == 2, result
    assert ("policy 'patient': $[1].id: 'patient' is used by an earlier "
            "policy") in _one_line(result)


def test_scheduler_service_refuses_a_bad_policy(write_config,
                                                run_console_script):
    config = write_config({"scheduler": {"default_policy": "vm_evenly"
                                                           "_distributed"},
                           "policy:vm_evenly_distributed": {
                               "balancer_parameters": "MigrationThreshold:1"}})
    result = run_console_script("scheduler-service", config_file=config)
    assert result.returncode == 2, result
    assert ("scheduler-service: error: invalid value 'MigrationThreshold=1' "
            "for [policy:vm_evenly_distributed] balancer_parameters: an "
            "integer >= 2") in _one_line(result)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_good_policies_start(write_config, run_console_script, tmp_path,
                             db_url):
    path = tmp_path / "policies.json"
    path.write_text(json.dumps([GOOD_POLICY]))
    config = write_config({
        "database": {"connection": db_url},
        "scheduler": {"cluster_policies": "rack-a:packed, "
                                          "rack-b:evenly_distributed",
                      "default_policy": "none"},
        "policy:packed": {
            "filters": "PinToHostFilter:first, ComputeFilter, RamFilter",
            "weighers": "CPUWeigher:-2, RAMWeigher:-1",
            "normalization": "rank", "balancer": "power_saving",
            "balancer_parameters": "HighUtilization:85, LowUtilization:15"},
        "migration": {"policies_file": path,
                      "cluster_policies": "rack-a:patient",
                      "bandwidth": 1000},
    })
    result = run_console_script("scheduler-manage", "db", "sync",
                                config_file=config)
    assert result.returncode == 0, result.stderr


# scheduler-api checks its configuration as strictly as scheduler-service
# (issue: an unknown auth_type ended in a traceback, a missing policy file
# or a malformed rule went unnoticed until requests were denied).
@pytest.mark.parametrize("sections, policy, expected", [
    ({"api": {"auth_strategy": "keystone"},
      "keystone_authtoken": {"auth_type": "passwrd"}}, None,
     "scheduler-api: error: invalid value 'passwrd' for "
     "[keystone_authtoken] auth_type: expected the name of an installed "
     "keystoneauth1 plugin: "),
    ({"api": {"auth_strategy": "keystone"},
      "keystone_authtoken": {"auth_type": "password",
                             "username": "scheduler"}}, None,
     "scheduler-api: error: invalid value None for [keystone_authtoken] "
     "auth_url: required by auth_type password"),
    ({"oslo_policy": {"enforce_new_defaults": "sure"}}, None,
     "scheduler-api: error: invalid value 'sure' for [oslo_policy] "
     "enforce_new_defaults: Unexpected boolean value 'sure'"),
    ({"oslo_policy": {"policy_file": "/nonexistent/policy.yaml"}}, None,
     "scheduler-api: error: invalid value '/nonexistent/policy.yaml' for "
     "[oslo_policy] policy_file: no such file; remove the option to use "
     "the rules in code"),
    ({}, '"scheduler:read": "role:admin or"\n',
     "policy_file: rule 'scheduler:read': 'role:admin or' cannot be "
     "parsed (Failed to understand rule role:admin or); oslo.policy would "
     "deny every request it guards"),
])
def test_scheduler_api_refuses_bad_library_options(
        write_config, run_console_script, tmp_path, sqlite_url, sections,
        policy, expected):
    sections = {"database": {"connection": sqlite_url},
                "api": {"auth_strategy": "noauth"}, **sections}
    if policy is not None:
        path = tmp_path / "policy.yaml"
        path.write_text(policy)
        sections["oslo_policy"] = {"policy_file": path}
    result = run_console_script("scheduler-api",
                                config_file=write_config(sections))
    assert result.returncode == 2, result
    line = _one_line(result)
    assert line.startswith("scheduler-api: error: ")
    assert expected in line


def test_scheduler_api_warns_about_misspelt_options(
        write_config, start_console_script, tmp_path, sqlite_url):
    api_server.sync(sqlite_url)
    api = api_server.start(
        tmp_path, write_config, start_console_script, sqlite_url,
        strategy="noauth", extra={"api": {"auth_stratgy": "keystone"},
                                  # Read by no oslo.policy of today.
                                  "oslo_policy": {"enforce_scope": "sure"}})
    assert api.process.stop() == 0
    stderr = api.process.stderr
    assert ("Unknown option auth_stratgy in [api] of "
            f"{tmp_path / 'api.conf'}, ignored; did you mean "
            "'auth_strategy'?") in stderr, stderr
    assert "Unknown option enforce_scope in [oslo_policy]" in stderr


@pytest.mark.parametrize("script", ["scheduler-manage", "scheduler-service",
                                    "scheduler-api", "compute-monitor"])
def test_config_file_naming_a_directory_exits_2(script, run_console_script,
                                                tmp_path):
    # oslo.config let IsADirectoryError out as a 40-line traceback.
    args = ("db", "version") if script == "scheduler-manage" else ()
    result = run_console_script(script, *args, config_file=tmp_path)
    assert result.returncode == 2, result
    assert _one_line(result) == (
        f"{script}: error: --config-file {tmp_path}: is a directory; "
        "expected a file (use --config-dir for a directory)")


@pytest.mark.parametrize("script", ["compute-monitor", "scheduler-manage"])
def test_a_database_driver_not_installed_exits_2(script, write_config,
                                                 run_console_script):
    # compute-monitor let ModuleNotFoundError out as a traceback.
    config = write_config({"database": {
        "connection": "postgresql+pg8000://scheduler:secret@db/scheduler"}})
    args = ("hosts", "list") if script == "scheduler-manage" else ("--once",)
    result = run_console_script(script, *args, config_file=config)
    assert result.returncode == 2, result
    line = _one_line(result)
    assert line.startswith(f"{script}: error: invalid value "
                           "'postgresql+pg8000://scheduler:***@db/scheduler'"
                           " for [database] connection: the pg8000 driver "
                           "is not installed"), line


def test_scheduler_api_without_an_htpasswd_file_says_how_to_try_it(
        write_config, run_console_script, tmp_path, sqlite_url):
    # The default auth_strategy: oslo.middleware's message was a literal
    # "Invalid configuration file. %(error_msg)s".
    missing = tmp_path / "htpasswd"
    config = write_config({"database": {"connection": sqlite_url},
                           "oslo_middleware": {
                               "http_basic_auth_user_file": missing}})
    result = run_console_script("scheduler-api", config_file=config)
    assert result.returncode == 2, result
    assert _one_line(result) == (
        f"scheduler-api: error: invalid value '{missing}' for "
        "[oslo_middleware] http_basic_auth_user_file: no such file; create "
        f"it with 'htpasswd -c -B {missing} USER' (docs/api.md), or for a "
        "trial on this machine without authentication, run "
        "'scheduler-manage --config-file examples/api/noauth.conf db sync', "
        "then start with --config-file examples/api/noauth.conf")
