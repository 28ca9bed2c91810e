"""Fakes shared by the tests: host states built without a database, and
a scheduler manager over a test database with the helpers that fill it.

``make_host`` is the one way the unit tests build a ``HostState``: a
compute node named ``name`` (its node ``<name>.local``) with 8 vCPUs, 16 GiB
of RAM and 100 GB of disk, a heartbeat and metric reports ``age``
seconds before ``scheduler.db.models.utcnow()`` (which tests freeze to
their own ``NOW``); any ``HostState`` field may be given instead.

``make_manager`` builds a ``SchedulerManager`` with a seeded decision
engine; ``add_node`` inserts a compute node row, ``spec`` a minimal
request, ``uuids`` fresh instance uuids, and ``allocations``,
``used_vcpus`` and ``fill_secretly`` read or fill the claims table behind
the caches' back; ``reading_threads`` keeps readers busy while a test
changes what they read. The ``conf`` and ``mgr`` fixtures that go with them are
in ``tests/unit/conftest.py``.
"""

import contextlib
import datetime
import importlib.util
import logging
import random
import sys
import threading
import uuid
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa
from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler import manager
from scheduler.db import models
from scheduler.engine import filter_scheduler
from scheduler.hosts.state import HostState
from scheduler.hosts.state import Metric


def make_host(name: str = "node-1", metrics: dict[str, float] | None = None,
              age: float = 0.0, **fields) -> HostState:
    """A HostState named ``name`` whose metrics (name -> value) were
    reported ``age`` seconds ago; ``fields`` override any default."""
    stamp = models.utcnow() - datetime.timedelta(seconds=age)
    values = {
        "node_id": 1, "uuid": f"uuid-{name}", "host": name,
        "nodename": f"{name}.local", "vcpus": 8, "memory_mb": 16384,
        "disk_gb": 100, "updated_at": stamp,
        "metrics": {key: Metric(float(value), stamp, "test")
                    for key, value in (metrics or {}).items()},
    }
    values.update(fields)
    return HostState(**values)


NODES = models.ComputeNode.__table__
ALLOCATIONS = models.Allocation.__table__


def make_manager(conf, seed=1) -> manager.SchedulerManager:
    return manager.SchedulerManager(conf, filter_scheduler.FilterScheduler(
        conf, rng=random.Random(seed)))


def add_node(engine, host: str, *, vcpus=2, memory_mb=8192, local_gb=100,
             reported: datetime.datetime | None = None, **values) -> int:
    now = models.utcnow()
    row = {"uuid": str(uuid.uuid4()), "host": host,
           "hypervisor_hostname": f"{host}.example.org", "cluster": "c1",
           "availability_zone": "nova", "vcpus": vcpus,
           "memory_mb": memory_mb, "local_gb": local_gb,
           "metrics_updated_at": reported or now, "changed_at": now,
           "updated_at": now}
    row.update(values)
    with engine.begin() as connection:
        return connection.execute(
            NODES.insert().values(**row)).inserted_primary_key[0]


def fill_secretly(engine, node_id: int, vcpus: int) -> None:
    """Claims the host caches cannot see: no generation bump."""
    with engine.begin() as connection:
        connection.execute(ALLOCATIONS.insert().values(
            uuid=str(uuid.uuid4()), instance_uuid=str(uuid.uuid4()),
            compute_node_id=node_id, vcpus=vcpus, memory_mb=0, disk_gb=0,
            created_at=models.utcnow()))


def allocations(engine) -> list:
    with engine.connect() as connection:
        return connection.execute(sa.select(ALLOCATIONS)).all()


def used_vcpus(engine) -> dict[str, int]:
    with engine.connect() as connection:
        rows = connection.execute(
            sa.select(NODES.c.host, sa.func.sum(ALLOCATIONS.c.vcpus))
            .join_from(NODES, ALLOCATIONS)
            .group_by(NODES.c.host)).all()
    return dict(rows)


def uuids(count: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(count)]


def spec(vcpus=1, ram=512, disk=1, **extra) -> dict:
    return {"flavor": {"name": "m1", "vcpus": vcpus, "memory_mb": ram,
                       "root_gb": disk}, **extra}


@contextlib.contextmanager
def reading_threads(read: Callable[[], None], count: int,
                    timeout: float = 10.0) -> Iterator[None]:
    """``read()`` called again and again by ``count`` threads while the
    ``with`` block runs; the first exception a reader raised is raised
    when the block ends (the readers stop at the first one)."""
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                read()
        except BaseException as e:  # raised in the test's own thread
            errors.append(e)
            stop.set()

    threads = [threading.Thread(target=reader) for _ in range(count)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout)
    if errors:
        raise errors[0]


def conf_from_text(path: Path, text: str,
                   *register: Callable[[cfg.ConfigOpts], None],
                   project: str | None = None) -> cfg.ConfigOpts:
    """A private ConfigOpts with the scheduler's options (and those
    ``register`` adds), parsed from ``text`` written to ``path``."""
    path.write_text(text)
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    for add_opts in register:
        add_opts(conf)
    conf(["--config-file", str(path)], project=project)
    return conf


def host_with_cpu_history(values: list[float], name: str = "node-1",
                          **fields) -> HostState:
    """A host (``make_host``) whose cpu.percent reports, one a minute,
    were ``values``, the last one now, held in its metric history."""
    from scheduler.hosts import history

    host = make_host(name, metrics={"cpu.percent": values[-1]}, **fields)
    stamp = host.metrics["cpu.percent"].timestamp
    held = history.EMPTY
    for index, value in enumerate(values):
        when = stamp - datetime.timedelta(minutes=len(values) - 1 - index)
        held = held.appended({"cpu.percent": Metric(value, when)}, 3600.0)
    host.metric_history = held
    return host


@contextlib.contextmanager
def exceptions_at_warnings(logger: str) -> Iterator[list]:
    """The exception being handled (or None) when each WARNING or worse
    of ``logger`` was emitted: oslo.log appends that exception's text to
    the line, a second time where the message already gives it."""
    seen: list = []

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(sys.exc_info()[1])

    handler = Handler(logging.WARNING)
    logging.getLogger(logger).addHandler(handler)
    try:
        yield seen
    finally:
        logging.getLogger(logger).removeHandler(handler)


#: The repository's tools/ directory (benchmarks, run as scripts).
TOOLS = Path(__file__).resolve().parent.parent / "tools"


def load_tool(monkeypatch, name: str):
    """The module of ``tools/<name>.py``, with tools/ on ``sys.path`` for
    the tool's own imports of its neighbours (as when run as a script)."""
    monkeypatch.syspath_prepend(str(TOOLS))
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
