"""``scheduler-manage migration-policy list|show`` as operators run it:
the built-in policies and one of [migration] policies_file, a schedule
played step by step, an unknown id."""

import json

MANAGE = "scheduler-manage"


def test_list_and_show(write_config, run_console_script):
    config = write_config({"migration": {"default_policy": "post_copy"}})
    listed = run_console_script(MANAGE, "migration-policy", "list",
                                "--format", "json", config_file=config)
    assert listed.returncode == 0, listed.stderr
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    assert {"legacy", "minimal_downtime", "post_copy",
            "suspend_workload_if_needed"} <= set(rows)
    assert rows["post_copy"]["clusters"] == "(default)"
    shown = run_console_script(MANAGE, "migration-policy", "show",
                               "post_copy", config_file=config)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[-1].split() == ["stalled", "7",
                                                     "postcopy"]
    unknown = run_console_script(MANAGE, "migration-policy", "show",
                                 "nope", config_file=config)
    assert unknown.returncode == 1
    assert "no migration policy 'nope'" in unknown.stderr
