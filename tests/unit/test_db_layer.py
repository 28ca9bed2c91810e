"""The data-access layer: IN lists split into chunks; scheduler.db imports
nothing above it."""

import ast
import pathlib

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


# import-linter does not see scheduler.db (a namespace package), so the
# data-access layer's own rule is checked here: it builds on nothing
# above it, or every layer that reads the database would import upwards.
_BELOW_DB = {"scheduler.clock", "scheduler.exception"}


def _scheduler_imports(path: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            # ``from scheduler import clock`` imports scheduler.clock.
            names.update(f"{node.module}.{alias.name}"
                         for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name.startswith("scheduler")}


def test_the_data_access_layer_imports_no_higher_layer():
    db = pathlib.Path(tables.__file__).parent
    upward = {
        f"{path.name}: {name}" for path in db.glob("*.py")
        for name in _scheduler_imports(path)
        if not name.startswith("scheduler.db") and name not in _BELOW_DB}
    assert not upward
