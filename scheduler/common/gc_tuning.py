"""Garbage collector settings of the long-running processes.

The host cache keeps tens of thousands of long-lived objects (a host
state, its metrics and claims per node), and every refresh allocates a
few dozen per changed row. Under CPython's default threshold (a
collection of the youngest generation every 700 allocations) the
scheduler collected every few rows and regularly scanned the whole heap:
15 % of a simulated hour's CPU at 1,000 nodes. Almost nothing the cache
makes is cyclic (refcounting frees it), so collecting less often costs
little memory: the collector counts objects allocated and not yet
freed, so the acyclic ones a refresh replaces never reach the
threshold. At 20,000 collections still took 2.4 % of a simulated
day's first 6 hours (0.23 s of 9.4, timed with ``gc.callbacks``); at
200,000 a simulated day at 1,000 nodes took 1.5-3.3 % less CPU
(three alternating pairs, 2026-12-01).

Used by ``simulate`` and the benchmarks that drive the host cache as it
does (``tools/bench_quality.py``, where it was measured, and others).
``scheduler-service`` keeps Python's defaults: tuned the same
way after its start-up, ``tools/bench_service.py`` at 1,000 hosts could
not tell it from them (server CPU a decision 4.47-5.62 ms tuned against
4.41-5.99 ms, 1 and 8 client threads, two alternating runs each,
2026-11-29), a request there allocating far less than a refresh of
reports does.
"""

import gc

#: Allocations between two collections of the youngest generation.
YOUNG_THRESHOLD = 200_000


def tune() -> None:
    """Collect young objects every ``YOUNG_THRESHOLD`` allocations, and
    leave what start-up made (modules, configuration, plugins) out of
    every later collection: call it once start-up is done (before a
    fork, that also keeps the copied pages shared)."""
    gc.collect()
    gc.freeze()
    _young, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
