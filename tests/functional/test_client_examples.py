"""The client examples of the README and the operator guide, run as
written (only the config path substituted) against a real
scheduler-service over RabbitMQ."""

import subprocess
import sys

import pytest
import sqlalchemy as sa

from scheduler.db import models
from scheduler.db import schema
from tests.functional.rpc_harness import GIB
from tests.functional.rpc_harness import SERVING
from tests.functional.rpc_harness import node
from tests.functional.rpc_harness import wait_for_log
from tests.unit.docs.fakes import client_examples
from tools.service_harness import BusNames

README_CONFIG = '"/etc/scheduler/scheduler.conf"'


@pytest.fixture
def service(broker_url, sqlite_url, write_config,
            start_console_script):
    """A service on a fleet reporting the metrics the examples' extra
    specs constrain; its config file's path."""
    engine = sa.create_engine(sqlite_url, poolclass=sa.pool.NullPool)
    schema.db_sync(engine)
    with engine.begin() as connection:
        connection.execute(models.ComputeNode.__table__.insert(), [
            node(f"compute-{i}", 65536, {"memory.free": 60 * GIB,
                                          "cpu.percent": 10.0 * i,
                                          "network.rx.bps": 1e6 * i})
            for i in (1, 2)])
    engine.dispose()
    names = BusNames()
    sections = names.sections(broker_url)
    sections["database"] = {"connection": sqlite_url}
    config = write_config(sections)
    process = start_console_script("scheduler-service", config_file=config)
    try:
        wait_for_log(lambda: process.stderr, SERVING, process=process.popen)
        yield config
    finally:
        process.stop()
        names.delete(broker_url)


@pytest.mark.parametrize("page, code", client_examples(),
                         ids=[page for page, _ in client_examples()])
def test_client_example_places_and_releases(page, code, service, tmp_path):
    code = code.replace(README_CONFIG, "sys.argv[1]")
    if "import sys" not in code:
        code = "import sys\n" + code
    script = tmp_path / "client.py"
    script.write_text(code)
    result = subprocess.run([sys.executable, str(script), str(service)],
                            capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-2].startswith("chosen: "), result.stdout
    assert lines[-1] == "released: True", result.stdout
