"""Handing the allocator's free memory back to the system."""

import ctypes.util

from scheduler.common import heap


def test_free_memory_is_released_where_the_c_library_can():
    heap._malloc_trim.cache_clear()
    assert heap.release_free_memory() is (heap._malloc_trim() is not None)


def test_without_malloc_trim_nothing_is_done(monkeypatch):
    heap._malloc_trim.cache_clear()
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    try:
        assert heap.release_free_memory() is False
    finally:
        heap._malloc_trim.cache_clear()
