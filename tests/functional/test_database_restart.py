"""A database server stopped and started again under a running
``scheduler-service``: requests fail with a scheduler error naming the
database while it is down, the same workers serve again once it is back,
and every instance placed holds exactly one claim.

The server is a private one (``private_postgresql``, ``private_mariadb``):
a test never stops the machine's databases. ``test_service_faults`` cuts
the connection instead (a TcpProxy); this stops the server itself, which
ends every session it holds.
"""

import time

import pytest
import sqlalchemy as sa

from scheduler import rpc
from tests.functional.fault_harness import FAULT_WORKERS
from tests.functional.fault_harness import RECOVERY_TIMEOUT
from tests.functional.fault_harness import ROOMY_VCPUS
from tests.functional.fault_harness import call
from tests.functional.fault_harness import check_claims_match
from tests.functional.fault_harness import make_fleet
from tests.functional.fault_harness import retry_until_placed
from tests.functional.fault_harness import running_service
from tests.functional.fault_harness import single
from tests.functional.rpc_harness import scheduler_api

#: Short calls: the database being down is answered at once.
RPC_TIMEOUT = 30


def _database(server) -> str:
    """URL of a database of its own on the private server."""
    if server.url.startswith("mysql"):
        engine = sa.create_engine(server.url, isolation_level="AUTOCOMMIT")
        with engine.connect() as connection:
            connection.execute(sa.text(
                "CREATE DATABASE scheduler CHARACTER SET utf8mb4"))
        engine.dispose()
        return server.url.rstrip("/") + "/scheduler"
    return server.url


@pytest.fixture(params=["postgresql", "mariadb"])
def server(request):
    return request.getfixturevalue(f"private_{request.param}")


def test_database_server_restarted(server, broker_url,
                                   write_config, start_console_script):
    url = _database(server)
    make_fleet(url, vcpus=ROOMY_VCPUS)
    with running_service(broker_url, url, write_config,
                         start_console_script, FAULT_WORKERS) as service, \
            scheduler_api(service.config, timeout=RPC_TIMEOUT,
                          retry=1) as api:
        before = call(api, *single())
        assert before.ok, before.error
        server.stop()
        during = call(api, *single())
        server.start()
        deadline = time.monotonic() + RECOVERY_TIMEOUT
        after = call(api, *single())
        while not after.ok and time.monotonic() < deadline:
            time.sleep(0.5)
            after = call(api, *single())
        assert after.ok, after.error
        retried = retry_until_placed(api, [during])
        assert service.worker_pids() == service.workers
    assert type(during.error) is rpc.SchedulerInternalError
    assert "database error" in str(during.error)
    check_claims_match(url, [before, after] + retried)
