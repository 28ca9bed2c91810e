"""Where ``scheduler-manage simulate`` keeps each run's database."""

from scheduler.cmd import simulate


def _config(tmp_path, text: str):
    path = tmp_path / "run.conf"
    path.write_text(text)
    return simulate.load_config(str(path))


def test_scratch_database_commits_without_waiting_for_the_disk(tmp_path):
    conf = _config(tmp_path, "")
    simulate._use_database(conf, str(tmp_path), 3)
    assert conf.database.connection == f"sqlite:///{tmp_path}/run3.sqlite"
    assert conf.database.sqlite_synchronous is False


def test_a_configured_database_keeps_its_settings(tmp_path):
    url = f"sqlite:///{tmp_path}/own.sqlite"
    conf = _config(tmp_path, f"[database]\nconnection = {url}\n")
    simulate._use_database(conf, str(tmp_path), 0)
    assert conf.database.connection == url
    assert conf.database.sqlite_synchronous is True


def test_the_oracle_config_has_no_policy_and_no_random_pick(tmp_path):
    path = tmp_path / "run.conf"
    path.write_text("[scheduler]\ndefault_policy = evenly_distributed\n"
                    "[filter_scheduler]\nhost_subset_size = 3\n"
                    "cpu_allocation_ratio = 2.5\n")
    conf = simulate.load_config(str(path))
    oracle_conf = simulate.oracle_config(conf)
    assert oracle_conf.scheduler.default_policy is None
    assert oracle_conf.filter_scheduler.host_subset_size == 1
    assert oracle_conf.filter_scheduler.cpu_allocation_ratio == 2.5
    assert conf.filter_scheduler.host_subset_size == 3
