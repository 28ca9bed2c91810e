"""The shared pieces of the tests that run a real ``scheduler-service``
over the local RabbitMQ: the ``broker_url`` and ``service_config``
fixtures (and ``fleet``, of the scheduler-manage tests; ``conftest``
registers them), a small fleet, waiting for a log line, the client an
API node has.

RabbitMQ defaults to ``rabbit://guest:guest@127.0.0.1:5672/``; point the
tests elsewhere with ``SCHEDULER_TEST_RABBIT_URL``. An unreachable broker
skips these tests, except in CI where it fails them. Every service gets
an exchange, topics and host name of its own (``BusNames``), and its
queues are deleted afterwards, so parallel runs on one broker do not see
each other.
"""

import contextlib
import json
import os
import re
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from oslo_config import cfg
from prometheus_client import parser

from scheduler import conf as scheduler_conf
from scheduler.conf import messaging as messaging_conf
from scheduler.db import models
from scheduler.db import schema
from scheduler.rpc import rpcapi
from tools.service_harness import BusNames
from tools.service_harness import kombu_connection

RABBIT_ENV = "SCHEDULER_TEST_RABBIT_URL"
DEFAULT_RABBIT_URL = "rabbit://guest:guest@127.0.0.1:5672/"
GIB = 2**30
#: Seconds a started service may take to import, connect and log that it
#: serves.
START_TIMEOUT = 60

SPEC = {"flavor": {"name": "m1.small", "vcpus": 1, "memory_mb": 1024,
                   "root_gb": 1}}
FLEET = ("big", "mid", "small")
SERVING = r"Serving topic "


def node(name: str, memory_mb: int, metrics: dict | str, **extra) -> dict:
    """A compute_nodes row: 8 vCPUs, ``memory_mb``, 100 GB, ``metrics``
    (a name-to-value dict, or text written as it is)."""
    now = models.utcnow()
    return {"uuid": f"00000000-0000-0000-0000-{abs(hash(name)) % 10**12:012d}",
            "host": name, "hypervisor_hostname": name, "cluster": "c1",
            "availability_zone": "nova", "vcpus": 8, "memory_mb": memory_mb,
            "local_gb": 100, "memory_mb_used": 0, "local_gb_used": 0,
            "cpu_info": json.dumps({"arch": "x86_64"}),
            "networks": json.dumps(["public"]),
            "metrics": metrics if isinstance(metrics, str) else json.dumps([
                {"name": k, "value": v, "source": "test",
                 "timestamp": now.isoformat() + "Z"}
                for k, v in metrics.items()]),
            "metrics_updated_at": now, "disabled": False, "generation": 0,
            "created_at": now, "updated_at": now, "changed_at": now,
            "ram_allocation_ratio": 1.0, **extra}


# Broker


def rabbit_url() -> str:
    return os.environ.get(RABBIT_ENV) or DEFAULT_RABBIT_URL


@pytest.fixture(scope="session")
def broker_url() -> str:
    """URL of the RabbitMQ the tests use; skips (fails in CI) when it
    cannot be reached."""
    url = rabbit_url()
    try:
        with kombu_connection(url) as connection:
            connection.ensure_connection(max_retries=1)
    except Exception as e:
        message = (f"RabbitMQ at {url} is unreachable ({e}); start it or "
                   f"set {RABBIT_ENV}")
        from tests.functional import conftest  # imports this module
        if conftest.in_ci():
            pytest.fail(f"CI=true: {message}", pytrace=False)
        pytest.skip(message)
    return url


# Database


def make_fleet(url: str) -> None:
    """Schema plus three enabled nodes and a disabled one."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    schema.db_sync(engine)
    with engine.begin() as connection:
        connection.execute(models.ComputeNode.__table__.insert(), [
            node("big", 65536, {"memory.free": 60 * GIB}),
            node("mid", 32768, {"memory.free": 30 * GIB}),
            node("small", 4096, {"memory.free": 3 * GIB}),
            node("off", 65536, {"memory.free": 60 * GIB}, disabled=True),
        ])
    engine.dispose()


def claims_of(url: str) -> int:
    """Rows in the allocations table: the claims held."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            return connection.execute(sa.select(sa.func.count()).select_from(
                models.Allocation.__table__)).scalar_one()
    finally:
        engine.dispose()


# Processes and clients


def wait_for_log(read, pattern: str, timeout: float = START_TIMEOUT,
                 process: subprocess.Popen | None = None,
                 count: int = 1) -> str:
    """Wait until ``read()`` matches ``pattern`` ``count`` times; fails
    with the log when it does not in time or the process exits."""
    deadline = time.monotonic() + timeout
    while True:
        text = read()
        if len(re.findall(pattern, text)) >= count:
            return text
        if process is not None and process.poll() is not None:
            pytest.fail(f"process exited with {process.returncode} before "
                        f"logging {pattern!r}:\n{text}", pytrace=False)
        if time.monotonic() > deadline:
            pytest.fail(f"no {pattern!r} after {timeout} s:\n{text}",
                        pytrace=False)
        time.sleep(0.1)



def client_conf(config_file: os.PathLike) -> cfg.ConfigOpts:
    """What an API node has: its own ConfigOpts read from the same file."""
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    messaging_conf.register_messaging_opts(conf)
    conf(["--config-file", os.fspath(config_file)])
    return conf


@contextlib.contextmanager
def scheduler_api(config_file: os.PathLike, timeout: float = 30,
                  **kwargs) -> Iterator[rpcapi.SchedulerAPI]:
    api = rpcapi.SchedulerAPI(client_conf(config_file), timeout=timeout,
                              **kwargs)
    try:
        yield api
    finally:
        api.close()


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """Every sample of ``/metrics``, by name and sorted labels."""
    url = f"http://127.0.0.1:{port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))):
            sample.value
            for family in parser.text_string_to_metric_families(text)
            for sample in family.samples}


def new_uuid() -> str:
    return str(uuid.uuid4())


@pytest.fixture
def service_config(broker_url, sqlite_url, write_config):
    """A function writing a config for a service of the test's own (fleet
    in a fresh SQLite database), returning its path; extra sections are
    merged in."""
    make_fleet(sqlite_url)
    created: list[BusNames] = []

    def write(extra: dict | None = None, name: str = "scheduler.conf"):
        names = BusNames()
        created.append(names)
        sections = names.sections(broker_url)
        sections["database"] = {"connection": sqlite_url}
        for section, options in (extra or {}).items():
            sections.setdefault(section, {}).update(options)
        return write_config(sections, name=name)

    yield write
    for names in created:
        names.delete(broker_url)


@pytest.fixture
def fleet(db_url, write_config):
    """The scheduler-manage tests' fleet (big, mid, small, a node with
    garbled metrics and a disabled one) in ``db_url``; the path of a
    config file on it."""
    engine = sa.create_engine(db_url, poolclass=sa.pool.NullPool)
    schema.db_sync(engine)
    with engine.begin() as connection:
        connection.execute(models.ComputeNode.__table__.insert(), [
            node("big", 65536, {"memory.free": 60 * GIB,
                                 "network.rx.bps": 90e6}),
            node("mid", 32768, {"memory.free": 30 * GIB,
                                 "network.rx.bps": 10e6}),
            node("small", 2048, {"memory.free": 1 * GIB,
                                  "network.rx.bps": 1e6}),
            # Garbage metrics: still scheduled on for what it has.
            node("garbled", 16384, "{not json"),
            node("off", 65536, {"memory.free": 60 * GIB}, disabled=True),
        ])
    engine.dispose()
    return write_config({"database": {"connection": db_url}})
