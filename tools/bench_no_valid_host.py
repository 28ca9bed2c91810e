#!/usr/bin/env python3
"""What a NoValidHost costs beside a placement, when the fleet is full.

``bench_engine``'s fleet and filters on a scratch SQLite file, per
``--hosts`` size, in one process with Python's default garbage collector
settings (as ``scheduler-service`` runs): after a first decision that
loads the host cache and a first refusal (which builds the free RAM's
column), CPU time per call of

- ``placed_ms``: a decision that places ``bench_engine``'s request;
- ``no_valid_host_ms``: one whose flavor no host has the RAM for, its
  NoValidHost message counted from the reasons the capacity filters
  read from the host table (``rejection_reasons``);
- ``asked_each_host_ms``: the same with those reasons switched off, so
  that each host is asked ``why_rejected`` (a state built and a detail
  worded per host): the code before the reasons were read from the
  table, measured in the same run.

The refusals read from the table run first: the host states that
asking each host builds stay in the cache until their hosts change, and
would make every later garbage collection longer. One line per size::

    no_valid_host hosts=20000 placed_ms=1.0 no_valid_host_ms=2.0 \
asked_each_host_ms=177.1 asked_over_read=88.7

Usage: ``tools/bench_no_valid_host.py [--hosts N]... [--calls N]``.
"""

import argparse
import contextlib
import copy
import random
import sys
import tempfile
import time
from collections.abc import Callable
from collections.abc import Iterator
from unittest import mock

try:
    # tools/ is sys.path[0] when this file runs as a script.
    import bench_engine
except ImportError:  # python -m tools.bench_no_valid_host
    from tools import bench_engine

from scheduler import exception
from scheduler.db import api as db_api
from scheduler.db import schema
from scheduler.engine import filter_scheduler
from scheduler.filters.capacity import CapacityFilter
from scheduler.request.spec import RequestSpec

#: A flavor no host of the fleet has the RAM for.
TOO_LARGE = copy.deepcopy(bench_engine.REQUEST)
TOO_LARGE["flavor"]["memory_mb"] = 10 ** 9


@contextlib.contextmanager
def asked_each_host() -> Iterator[None]:
    """The capacity filters without their reasons read from the table."""
    with mock.patch.object(CapacityFilter, "rejection_reasons",
                           lambda self, table, rows, spec: None):
        yield


def _cpu_ms(call: Callable[[], object], calls: int) -> float:
    began = time.process_time()
    for _ in range(calls):
        call()
    return 1000 * (time.process_time() - began) / calls


def _refused(scheduler: filter_scheduler.FilterScheduler) -> None:
    try:
        scheduler.select(RequestSpec.from_dict(TOO_LARGE))
    except exception.NoValidHost:
        return
    raise AssertionError("a host took a flavor larger than every host")


def bench(hosts: int, calls: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        conf = bench_engine.make_conf(f"sqlite:///{tmp}/bench.sqlite")
        engine = db_api.get_engine(conf)
        schema.db_sync(engine)
        bench_engine.build_fleet(engine, hosts, random.Random(hosts))
        scheduler = filter_scheduler.FilterScheduler(conf)
        place = RequestSpec.from_dict(bench_engine.REQUEST)
        # Out of the counts: the first load, and the first refusal's
        # column of free RAM (a placement that every host has room for
        # reads the column's maximum only).
        scheduler.select(place)
        _refused(scheduler)
        placed = _cpu_ms(lambda: scheduler.select(
            RequestSpec.from_dict(bench_engine.REQUEST)), calls)
        read = _cpu_ms(lambda: _refused(scheduler), calls)
        # After the others: the states it builds stay in the cache (and
        # in every garbage collection) until their hosts change.
        with asked_each_host():
            asked = _cpu_ms(lambda: _refused(scheduler), calls)
        db_api.dispose_engines()
    return {"placed_ms": placed, "no_valid_host_ms": read,
            "asked_each_host_ms": asked}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, action="append")
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    for hosts in args.hosts or [1000, 20000]:
        print(f"{hosts} hosts...", file=sys.stderr)
        found = bench(hosts, args.calls)
        print(f"no_valid_host hosts={hosts} "
              + " ".join(f"{key}={value:.1f}" for key, value in found.items())
              + " asked_over_read="
              f"{found['asked_each_host_ms'] / found['no_valid_host_ms']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
