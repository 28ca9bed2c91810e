"""The private servers the fault tests stop and start: each serves on a
port of its own, survives a stop and a start, and leaves neither a
process nor a file behind; the machine's servers never notice."""

from pathlib import Path

import psutil
import pytest
import sqlalchemy as sa

from tests.functional import private_servers
from tools.service_harness import kombu_connection


def _gone(pids: list[int], root: Path) -> None:
    alive = [pid for pid in pids if psutil.pid_exists(pid)
             and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert alive == []
    assert not root.exists()


def _listeners(port: int) -> set[int]:
    return {c.pid for c in psutil.net_connections("tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == port
            and c.pid is not None}


def _connects(url: str) -> bool:
    with kombu_connection(url) as connection:
        try:
            connection.ensure_connection(max_retries=1)
        except Exception:
            return False
        return True


def test_private_rabbitmq_stops_and_starts_alone():
    shared = _listeners(5672)
    server = private_servers.PrivateRabbitMQ()
    try:
        server.start()
        assert server.port != 5672
        assert _connects(server.url)
        pids = [server.server.pid, server.epmd.pid,
                *(p.pid for p in psutil.Process(server.server.pid)
                  .children(recursive=True))]
        server.stop_app()
        assert not _connects(server.url)
        server.start_app()
        assert _connects(server.url)
    finally:
        server.close()
    _gone(pids, server.root)
    assert _listeners(5672) == shared


def _select_one(url: str) -> int:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool,
                              connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as connection:
            return connection.execute(sa.text("SELECT 1")).scalar_one()
    finally:
        engine.dispose()


@pytest.mark.parametrize("kind", [private_servers.PrivatePostgreSQL,
                                  private_servers.PrivateMariaDB])
def test_private_database_stops_and_starts_alone(kind):
    shared = {port: _listeners(port) for port in (5432, 3306)}
    server = kind()
    try:
        server.start()
        assert _select_one(server.url) == 1
        pid = (server.postmaster_pid()
               if isinstance(server, private_servers.PrivatePostgreSQL)
               else server.server.pid)
        server.stop()
        assert not psutil.pid_exists(pid) or psutil.Process(
            pid).status() == psutil.STATUS_ZOMBIE
        with pytest.raises(sa.exc.OperationalError):
            _select_one(server.url)
        server.start()
        assert _select_one(server.url) == 1
        pid = (server.postmaster_pid()
               if isinstance(server, private_servers.PrivatePostgreSQL)
               else server.server.pid)
    finally:
        server.close()
    _gone([pid], server.root)
    assert {port: _listeners(port) for port in shared} == shared
