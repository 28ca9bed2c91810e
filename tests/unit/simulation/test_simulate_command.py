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
