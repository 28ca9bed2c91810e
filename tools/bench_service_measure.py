"""``tools/bench_service.py``'s measurement: calls timed from T client
threads, a case's result line and verdicts against the issue 4 targets,
the claim conflict rate read from the service's Prometheus exporter, and
the closing table."""

import dataclasses
import os
import statistics
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from prometheus_client import parser as prometheus_parser

from scheduler.common import text_table

#: (hosts, minimum ratio of the echo's calls/s, maximum p50 - echo p50).
TARGETS = {1000: (0.7, 2.0), 5000: (0.5, None)}
#: Timeout of a scrape of the exporter.
SCRAPE_TIMEOUT = 30.0

#: The exporter's counters conflict_rate is computed from.
CLAIMS_SAMPLE = "scheduler_claims_total"
CONFLICTS_SAMPLE = "scheduler_claim_conflicts_total"


def claim_counters(port: int) -> tuple[float, float]:
    """(claims made, claims that conflicted) since the service started,
    from its Prometheus exporter (the sums of all its workers)."""
    url = f"http://127.0.0.1:{port}/metrics"
    with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT) as response:
        text = response.read().decode()
    totals = {CLAIMS_SAMPLE: 0.0, CONFLICTS_SAMPLE: 0.0}
    for family in prometheus_parser.text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in totals:
                totals[sample.name] += sample.value
    return totals[CLAIMS_SAMPLE], totals[CONFLICTS_SAMPLE]


def conflict_rate(before: tuple[float, float],
                  after: tuple[float, float]) -> float:
    """Conflicts over claim attempts (claims made plus conflicts) between
    two ``claim_counters`` readings."""
    claims = after[0] - before[0]
    conflicts = after[1] - before[1]
    attempts = claims + conflicts
    return conflicts / attempts if attempts else 0.0


@dataclasses.dataclass
class Timing:
    calls: int
    errors: int
    samples_ms: list[float]
    wall_s: float
    first_error: str | None = None

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def p99_ms(self) -> float:
        ordered = sorted(self.samples_ms)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]

    @property
    def per_s(self) -> float:
        return len(self.samples_ms) / self.wall_s


def run_calls(call: Callable[[], Any], calls: int, threads: int,
              stop: threading.Event) -> Timing:
    """``calls`` calls spread over ``threads`` threads started together;
    successful calls are timed, failed ones counted."""
    shares = [calls // threads + (index < calls % threads)
              for index in range(threads)]
    samples: list[list[float]] = [[] for _ in range(threads)]
    errors: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(threads + 1)

    def work(index: int) -> None:
        mine = samples[index]
        barrier.wait()
        for _ in range(shares[index]):
            if stop.is_set():
                return
            started = time.perf_counter()
            try:
                call()
            except Exception as e:
                first_line = (str(e).splitlines() or [""])[0]
                with lock:
                    errors.append(f"{type(e).__name__}: {first_line}")
                continue
            mine.append((time.perf_counter() - started) * 1000)

    workers = [threading.Thread(target=work, args=(index,), daemon=True,
                                name=f"bench-client-{index}")
               for index in range(threads)]
    for worker in workers:
        worker.start()
    barrier.wait()
    began = time.perf_counter()
    for worker in workers:
        # Short joins: Ctrl-C reaches the main thread meanwhile.
        while worker.is_alive():
            worker.join(0.2)
    wall = time.perf_counter() - began
    if stop.is_set():
        raise KeyboardInterrupt
    flat = [sample for per_thread in samples for sample in per_thread]
    return Timing(calls=calls, errors=len(errors), samples_ms=flat,
                  wall_s=wall, first_error=errors[0] if errors else None)


@dataclasses.dataclass
class Result:
    kind: str
    hosts: int | None
    threads: int
    timing: Timing
    server_cpu_ms: float
    load1: float
    echo: "Result | None" = None
    #: select cases: claims that conflicted over claim attempts.
    conflict_rate: float | None = None
    #: select cases: the database backends' CPU ms per call.
    db_cpu_ms: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.echo is None:
            return None
        return self.timing.per_s / self.echo.timing.per_s

    @property
    def p50_delta_ms(self) -> float | None:
        if self.echo is None:
            return None
        return self.timing.p50_ms - self.echo.timing.p50_ms

    def line(self) -> str:
        fields = [f"kind={self.kind}"]
        if self.hosts is not None:
            fields.append(f"hosts={self.hosts}")
        fields += [f"threads={self.threads}",
                   f"p50_ms={self.timing.p50_ms:.2f}",
                   f"p99_ms={self.timing.p99_ms:.2f}",
                   f"per_s={self.timing.per_s:.0f}"]
        ratio, delta = self.ratio, self.p50_delta_ms
        if ratio is not None and delta is not None:
            fields += [f"ratio_per_s={ratio:.2f}",
                       f"p50_delta_ms={delta:.2f}"]
        fields += [f"errors={self.timing.errors}",
                   f"server_cpu_ms={self.server_cpu_ms:.2f}"]
        if self.conflict_rate is not None:
            fields.append(f"conflict_rate={self.conflict_rate:.4f}")
        if self.db_cpu_ms is not None:
            fields.append(f"db_cpu_ms={self.db_cpu_ms:.2f}")
        fields.append(f"load1={self.load1:.2f}")
        return " ".join(fields)

    def verdicts(self) -> list[str]:
        """The issue 4 targets this case is held to, met or missed."""
        target = TARGETS.get(self.hosts or 0)
        ratio, delta = self.ratio, self.p50_delta_ms
        if target is None or ratio is None or delta is None:
            return []
        min_ratio, max_delta = target
        verdicts = [f"per_s >= {min_ratio}x echo: "
                    f"{'met' if ratio >= min_ratio else 'MISSED'}"]
        if max_delta is not None:
            met = delta <= max_delta
            verdicts.append(f"p50 <= echo + {max_delta:g} ms: "
                            f"{'met' if met else 'MISSED'}")
        return verdicts



def print_table(echo: list[Result], selects: list[Result]) -> None:
    rows = [("case", "p50 ms", "p99 ms", "per s", "ratio", "p50 delta",
             "srv cpu ms", "conflicts", "load", "targets")]
    for result in echo + selects:
        case = (f"{result.kind} threads={result.threads}"
                if result.hosts is None else
                f"{result.kind} hosts={result.hosts} "
                f"threads={result.threads}")
        rows.append((
            case, f"{result.timing.p50_ms:.2f}",
            f"{result.timing.p99_ms:.2f}", f"{result.timing.per_s:.0f}",
            "" if result.ratio is None else f"{result.ratio:.2f}x",
            "" if result.p50_delta_ms is None
            else f"{result.p50_delta_ms:+.2f} ms",
            f"{result.server_cpu_ms:.2f}",
            "" if result.conflict_rate is None
            else f"{result.conflict_rate:.2%}",
            f"{result.load1:.2f}", "; ".join(result.verdicts())))
    print()
    print(text_table.render(rows, right=range(1, len(rows[0]) - 1)))
    verdicts = [verdict for result in selects
                for verdict in result.verdicts()]
    missed = sum("MISSED" in verdict for verdict in verdicts)
    if verdicts:
        print(f"\nissue 4 targets: {len(verdicts) - missed} met, "
              f"{missed} missed (on {os.cpu_count()} CPUs; load is the "
              "1-minute load average when each case started)")


