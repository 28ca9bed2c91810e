"""The client examples of the README and the operator guide, run as
written (only the config path substituted) against a real
scheduler-service over RabbitMQ."""

import subprocess
import sys

import pytest

from tests.functional.test_rpc_service import broker_url  # noqa: F401
from tests.functional.test_rpc_service import shared_service  # noqa: F401
from tests.unit.test_docs import client_examples

README_CONFIG = '"/etc/scheduler/scheduler.conf"'


@pytest.mark.parametrize("page, code", client_examples(),
                         ids=[page for page, _ in client_examples()])
def test_client_example_places_and_releases(page, code, shared_service,  # noqa: F811
                                            tmp_path):
    script = tmp_path / "client.py"
    script.write_text(code.replace(README_CONFIG, "sys.argv[1]")
                      if "import sys" in code else
                      "import sys\n" + code.replace(README_CONFIG,
                                                    "sys.argv[1]"))
    result = subprocess.run(
        [sys.executable, str(script), str(shared_service.config)],
        capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-2].startswith("chosen: "), result.stdout
    assert lines[-1] == "released: True", result.stdout
