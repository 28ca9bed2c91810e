"""``migration-agent`` refuses a configuration it cannot work with: exit
2 and one line naming the option, the value and what is expected."""

import pytest


@pytest.mark.parametrize(("section", "expected"), [
    ({"migration_agent": {"destination_uri": "qemu+tls://node/system"}},
     "migration-agent: error: invalid value 'qemu+tls://node/system' for "
     "[migration_agent] destination_uri: a libvirt URI naming the "
     "destination as {host}"),
    ({"migration_agent": {"lease": "1"}},
     "migration-agent: error: invalid value '1' for [migration_agent] "
     "lease: Should be greater than or equal to 2"),
    ({"migration_agent": {"lease": "5", "poll_interval": "2"}},
     "migration-agent: error: invalid value 5 for [migration_agent] "
     "lease: at least 3 x [migration_agent] poll_interval (2.0), so that "
     "a live agent keeps its moves"),
])
def test_a_bad_option_exits_2_with_one_line(section, expected, write_config,
                                            run_console_script, tmp_path):
    config = write_config({"database": {
        "connection": f"sqlite:///{tmp_path}/x.sqlite"}, **section})
    result = run_console_script("migration-agent", config_file=config)
    assert result.returncode == 2
    line, = result.stderr.strip().splitlines()
    assert line == expected
