"""The compute-monitor agent as operators run it: a real process writing
real measurements into a real database."""

import json
import signal
import socket
import time

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from scheduler.db import models
from tests.functional.tcp_proxy import TcpProxy

BUILT_IN = {"cpu.percent", "cpu.user.percent", "cpu.idle.time",
            "memory.total", "memory.free", "memory.percent",
            "network.rx.bps", "network.tx.bps", "disk.read.bps",
            "disk.write.bps", "disk.iops"}


def _reported(url: str, host: str = "node-f1"):
    """The node's row once a report has written metrics into it."""
    row = _row(url, host)
    return row if row is not None and json.loads(row.metrics) else None


def _row(url: str, host: str = "node-f1"):
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            return connection.execute(
                sa.select(models.ComputeNode.__table__).where(
                    models.ComputeNode.host == host)).mappings().first()
    finally:
        engine.dispose()


def _wait_for(predicate, timeout: float, what: str, process=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    logs = f"\nagent stderr:\n{process.stderr}" if process else ""
    pytest.fail(f"timed out after {timeout}s waiting for {what}{logs}",
                pytrace=False)


@pytest.fixture
def synced(run_console_script, write_config):
    """Syncs the schema of ``url``; returns an agent config file that
    points at ``agent_url`` (default: the same database)."""
    def sync(url: str, agent_url: str | None = None, **compute_monitor):
        options = {"monitors": "cpu,memory,network,disk", "interval": 1}
        options.update(compute_monitor)

        def config(connection: str):
            return write_config({
                "DEFAULT": {"host": "node-f1"},
                "database": {"connection": connection,
                             "max_retry_interval": 2, "connect_timeout": 2},
                "compute_monitor": options,
            })

        result = run_console_script("scheduler-manage", "db", "sync",
                                    config_file=config(url))
        assert result.returncode == 0, result.stderr
        return config(agent_url or url)
    return sync


def test_once_writes_real_metrics(db_url, synced, run_console_script):
    config = synced(db_url, cluster="rack-a", networks="public,storage")
    result = run_console_script("compute-monitor", "--once",
                                config_file=config)
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    names = {m["name"] for m in printed["metrics"]}
    assert names >= BUILT_IN
    row = _row(db_url)
    assert row.cluster == "rack-a" and row.vcpus >= 1 and row.memory_mb > 0
    assert json.loads(row.networks) == ["public", "storage"]
    stored = {m["name"]: m for m in json.loads(row.metrics)}
    assert stored.keys() == names
    assert stored["memory.total"]["value"] > 0
    assert 0 <= stored["cpu.percent"]["value"] <= 100
    assert stored["memory.free"]["source"] == "psutil.memory"


@pytest.mark.parametrize("section, option, value", [
    ("compute_monitor", "monitors", "cpu,gpu_temp"),
    ("compute_monitor", "interval", "0"),
    ("database", "connection", "notadb://x"),
])
def test_config_errors_exit_2_with_one_line(write_config, run_console_script,
                                            section, option, value):
    config = write_config({section: {option: value}})
    result = run_console_script("compute-monitor", "--once",
                                config_file=config)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"[{section}] {option}" in lines[0]
    assert ("gpu_temp" if option == "monitors" else value) in lines[0]


def test_bad_metrics_file_keeps_agent_running(sqlite_url, synced, tmp_path,
                                             start_console_script):
    metrics_file = tmp_path / "metrics.json"
    metrics_file.write_text("{not json")
    config = synced(sqlite_url, monitors="file,memory",
                    file_path=str(metrics_file))
    agent = start_console_script("compute-monitor", config_file=config)
    # Registering writes the row before its first report: wait for metrics.
    row = _wait_for(lambda: _reported(sqlite_url), 20, "the first report",
                    agent)
    assert {m["name"] for m in json.loads(row.metrics)} >= {"memory.free"}
    metrics_file.write_text(json.dumps({"rack.power.watts": 512.5}))
    _wait_for(lambda: "rack.power.watts" in _row(sqlite_url).metrics, 20,
              "the operator metric after the file was fixed", agent)
    assert agent.popen.poll() is None
    assert str(metrics_file) in agent.stderr
    agent.popen.send_signal(signal.SIGTERM)
    assert agent.wait(15).returncode == 0


def _proxied(url: str, proxy: TcpProxy) -> str:
    return make_url(url).set(host="127.0.0.1", port=proxy.port
                             ).render_as_string(hide_password=False)


def test_database_outage_is_retried(postgresql_url, synced,
                                    start_console_script):
    target = make_url(postgresql_url)
    proxy = TcpProxy(target.host or "127.0.0.1", target.port or 5432)
    # The agent only sees the proxy, which starts closed: the database is
    # down when the agent starts.
    config = synced(postgresql_url, _proxied(postgresql_url, proxy))
    agent = start_console_script("compute-monitor", config_file=config)
    try:
        _wait_for(lambda: "unreachable" in agent.stderr, 30,
                  "the agent to report the database down", agent)
        assert _row(postgresql_url) is None
        proxy.restore()
        first = _wait_for(lambda: _row(postgresql_url), 30,
                          "the first report once the database is up", agent)

        proxy.cut()
        outage_start = agent.stderr.count("unreachable")
        _wait_for(lambda: agent.stderr.count("unreachable") > outage_start,
                  30, "the agent to notice the outage", agent)
        assert agent.popen.poll() is None, "the agent died in the outage"

        proxy.restore()
        cut_seen = _row(postgresql_url).updated_at
        _wait_for(lambda: _row(postgresql_url).updated_at > cut_seen, 30,
                  "a report after the database came back", agent)
        assert _row(postgresql_url).uuid == first.uuid
    finally:
        proxy.cut()


def test_database_down_is_one_clean_line_per_retry_and_sigterm_says_stopped(
        write_config, start_console_script):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = write_config({
        "database": {"connection": f"postgresql+psycopg://u@127.0.0.1:"
                                   f"{port}/x", "max_retry_interval": 1},
        "compute_monitor": {"monitors": "cpu", "interval": 1}})
    agent = start_console_script("compute-monitor", config_file=config)
    _wait_for(lambda: agent.stderr.count(" unreachable ") >= 2, 30,
              "two retries", agent)
    agent.popen.send_signal(signal.SIGTERM)
    assert agent.wait(15).returncode == 0
    lines = agent.stderr.splitlines()
    retries = [line for line in lines if " unreachable " in line]
    for line in retries:
        # oslo.log appended the exception's text to the line again.
        assert line.count("Connection refused") == 1, line
        assert line.endswith("; retrying in 1 s"), line
    assert lines[-2].endswith("compute_monitor.cmd.agent [-] Caught "
                              "SIGTERM, stopping")
    assert lines[-1].endswith("compute_monitor.cmd.agent [-] "
                              "compute-monitor stopped")
