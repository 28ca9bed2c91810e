"""scheduler.db.tables: IN lists split into chunks."""

from scheduler.db import tables


def test_chunks_split_at_the_in_list_size():
    values = list(range(2 * tables.IN_CHUNK + 1))
    parts = list(tables.chunks(values))
    assert [len(part) for part in parts] == [tables.IN_CHUNK,
                                              tables.IN_CHUNK, 1]
    assert [value for part in parts for value in part] == values


def test_chunks_of_nothing_is_no_statement():
    assert list(tables.chunks([])) == []


def test_a_short_list_is_one_chunk():
    assert list(tables.chunks(["a", "b"])) == [["a", "b"]]
