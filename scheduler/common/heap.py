"""Handing the C allocator's free memory back to the system.

A full load of the host cache decodes every node's row: at 100,000 hosts
hundreds of megabytes of temporaries (rows, report texts, parsed
entries) that are freed once the cache is built. glibc keeps freed
memory in its heaps for reuse, in the arena of the thread that freed it
(the background refresher's, in a worker), so a process's resident
memory stays at the load's peak: a quarter more than the cache itself
holds at 1,000 hosts (``tools/bench_engine.py``'s ``bytes_per_host``,
14.2 KB against 10.8 KB a host). ``malloc_trim`` returns the free pages
of every arena. Elsewhere than on glibc it does nothing.
"""

import ctypes
import ctypes.util
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return None


def release_free_memory() -> bool:
    """Return the allocator's free pages to the system; False where the
    C library cannot (not glibc). Call it after freeing much at once:
    it walks every heap, taking each one's lock meanwhile (9 ms after a
    thread freed 450 MB; ctypes releases the GIL for the call)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
