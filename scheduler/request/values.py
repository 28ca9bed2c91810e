"""Values of a request that pass its schema but that nothing can use.

The published schema bounds types and lengths; two kinds of value pass it
and then fail deep inside a decision, as SchedulerInternalError with a
traceback, instead of InvalidRequest naming the field:

* Strings holding a NUL (PostgreSQL refuses it in text) or a lone
  surrogate (``"x\\ud800y"``, which JSON can carry but no encoding can
  write: every database driver, log file and notification fails on it).
  Such strings reach the database (``scheduler_hints.group`` is stored
  with the claim, ``cluster`` names a database lock); every string of a
  request is held to the same rule, so that whether a value is refused
  never depends on which filters run.
* Numbers that are not finite (``NaN``, ``Infinity``: JSON decoders
  accept them), which compare false with everything.

Everything else is stored as it came, on every backend (MariaDB tables
are ``utf8mb4``: migration 0003).
"""

import math
from collections.abc import Sequence

from scheduler import exception
from scheduler.common.abridge import abridged


def field(root: str, path: Sequence) -> str:
    """``request_spec.flavor.extra_specs.hw:x`` or ``names[2]``: where a
    value is, for error messages; long keys are shortened."""
    text = root
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            part = str(part)
            text += "." + abridged(part, 64)
    return text


def text_problem(text: str) -> str | None:
    """Why no database can store ``text``, or None."""
    if "\0" in text:
        return (f"holds a NUL character at position {text.index(chr(0))}, "
                "which no database can store")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            return (f"holds a lone surrogate U+{ord(text[e.start]):04X} at "
                    f"position {e.start}, which is not Unicode text and "
                    "which no database can store")
    return None


def _shown(value: object) -> str:
    # ascii(): the message itself must be printable and encodable.
    return abridged(ascii(value), 80)


def check(value: object, root: str) -> None:
    """InvalidRequest naming the first string (key or value) of
    ``value`` that no database can store, or its first non-finite
    number."""
    # Iterative: the schema bounds sizes, not the depth of a query list.
    stack: list[tuple[object, tuple]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        problem = None
        if isinstance(node, str):
            problem = text_problem(node)
        elif isinstance(node, float):
            if not math.isfinite(node):
                problem = "is not a finite number"
        elif isinstance(node, dict):
            for key, item in node.items():
                if isinstance(key, str) and (why := text_problem(key)):
                    raise exception.InvalidRequest(
                        f"{field(root, path)}: key {_shown(key)} {why}")
                stack.append((item, (*path, key)))
        elif isinstance(node, list | tuple):
            stack.extend((item, (*path, i)) for i, item in enumerate(node))
        if problem is not None:
            raise exception.InvalidRequest(
                f"{field(root, path)}: {_shown(node)} {problem}")


def check_text(value: object, name: str) -> None:
    """``check`` of one string argument (None passes)."""
    if isinstance(value, str) and (why := text_problem(value)):
        raise exception.InvalidRequest(f"{name}: {_shown(value)} {why}")
