"""The load of the fault tests: client threads calling a running service
through a fault (``Load``), what their calls and the service log say
afterwards, and the warm-up and the burst around it."""

import collections
import dataclasses
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from scheduler.rpc import rpcapi
from tests.functional import processes
from tests.functional.rpc_harness import new_uuid

FLAVOR = {"name": "tiny", "vcpus": 1, "memory_mb": 64, "root_gb": 1}


SPEC = {"flavor": FLAVOR}


@dataclasses.dataclass
class Running:
    config: Path
    process: processes.ScriptProcess
    workers: list[int]

    @property
    def pid(self) -> int:
        return self.process.popen.pid

    def worker_pids(self) -> list[int]:
        return sorted(child.pid for child in
                      psutil.Process(self.pid).children())


@dataclasses.dataclass
class Call:
    """One select_destinations call and how it ended."""

    spec: dict
    uuids: list[str]
    started: float
    ended: float
    result: list[list[dict]] | None = None
    error: BaseException | None = None

    @property
    def duration(self) -> float:
        return self.ended - self.started

    @property
    def ok(self) -> bool:
        return self.error is None

    def claims(self) -> dict[str, tuple[str, str]]:
        assert self.result is not None
        return {instance: (entries[0]["allocation_id"], entries[0]["host"])
                for instance, entries in zip(self.uuids, self.result,
                                             strict=True)}


def call(api: rpcapi.SchedulerAPI, spec: dict, uuids: list[str]) -> Call:
    started = time.monotonic()
    try:
        result = api.select_destinations(spec, uuids)
    except Exception as e:
        return Call(spec, uuids, started, time.monotonic(), error=e)
    return Call(spec, uuids, started, time.monotonic(), result=result)


def single() -> tuple[dict, list[str]]:
    return SPEC, [new_uuid()]


#: Client side: every call ends within RPC_TIMEOUT x (RPC_RETRY + 1) plus
#: CALL_SLACK seconds, whatever the broker does.
RPC_TIMEOUT = 10


RPC_RETRY = 1


CALL_SLACK = 5


CALL_BOUND = RPC_TIMEOUT * (RPC_RETRY + 1) + CALL_SLACK


#: oslo.log's default format: date, time, pid, level, logger.
ANSWERED = re.compile(
    r"^\S+ \S+ (\d+) DEBUG scheduler\.rpc\.endpoint \[[^\]]*\] "
    r"select_destinations \(request", re.MULTILINE)


TRACEBACK = re.compile(
    r"^\S+ \S+ \d+ [A-Z]+ (\S+) Traceback \(most recent call last\)",
    re.MULTILINE)


def oslo_messaging_module():
    # After scheduler.rpc selected the threading backend
    # (docs/architecture.md).
    import oslo_messaging
    return oslo_messaging


class Load:
    """Client threads sending requests from ``start()`` until ``stop()``
    (or the end of the with block), each request for new instances;
    ``requests()`` makes (spec, instance uuids)."""

    def __init__(self, api: rpcapi.SchedulerAPI, threads: int,
                 requests: Callable[[], tuple[dict, list[str]]] = single,
                 pause: float = 0.05):
        self.api = api
        self.requests = requests
        self.pause = pause
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True)
                         for _ in range(threads)]

    def __enter__(self) -> "Load":
        return self

    def __exit__(self, *exc_info: object) -> None:
        # A failed test must not leave clients calling.
        self._stop.set()
        for thread in self._threads:
            if thread.ident is not None:
                thread.join(CALL_BOUND + 5)

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            spec, uuids = self.requests()
            done = call(self.api, spec, uuids)
            with self._lock:
                self.calls.append(done)
            self._stop.wait(self.pause)

    def snapshot(self) -> list[Call]:
        with self._lock:
            return list(self.calls)

    def wait_for(self, what: str, predicate: Callable[[list[Call]], bool],
                 timeout: float) -> float:
        """Seconds until ``predicate(calls so far)``; fails after
        ``timeout``."""
        started = time.monotonic()
        while not predicate(self.snapshot()):
            if time.monotonic() - started > timeout:
                pytest.fail(f"no {what} within {timeout} s: "
                            f"{summary(self.snapshot())}", pytrace=False)
            time.sleep(0.1)
        return time.monotonic() - started

    def stop(self) -> list[Call]:
        self._stop.set()
        for thread in self._threads:
            # A call in progress ends within its own bound.
            thread.join(CALL_BOUND + 5)
        assert not any(thread.is_alive() for thread in self._threads), \
            "a client call outlived its bound"
        return self.snapshot()


def summary(calls: list[Call]) -> str:
    errors = collections.Counter(type(c.error).__name__ for c in calls
                                 if not c.ok)
    longest = max((c.duration for c in calls), default=0.0)
    return (f"{len(calls)} calls, {sum(c.ok for c in calls)} ok, errors "
            f"{dict(errors)}, longest {longest:.1f} s")


def traceback_loggers(stderr: str) -> collections.Counter:
    """Loggers that logged a traceback, with how many."""
    return collections.Counter(TRACEBACK.findall(stderr))


def answering_workers(stderr: str) -> set[int]:
    """Pids of the workers that logged answering select_destinations."""
    return {int(pid) for pid in ANSWERED.findall(stderr)}


def warm_and_load(api: rpcapi.SchedulerAPI, load: "Load") -> Call:
    """One call placed, then the load started until 20 of its calls
    placed; the first call."""
    warmup = call(api, *single())
    assert warmup.ok, warmup.error
    load.start()
    load.wait_for("load", lambda calls: sum(c.ok for c in calls) >= 20,
                  timeout=30)
    return warmup


def burst_answered(api: rpcapi.SchedulerAPI, service: Running,
                   log_offset: int) -> tuple[list[Call], set[int]]:
    """Every worker consumes again: a burst of 20 new requests, all
    placed; the burst and the workers that answered since ``log_offset``
    of the service's log (the same worker processes as at the start)."""
    burst = [call(api, *single()) for _ in range(20)]
    assert all(c.ok for c in burst), summary(burst)
    answered = answering_workers(service.process.stderr[log_offset:])
    assert service.worker_pids() == service.workers
    return burst, answered
