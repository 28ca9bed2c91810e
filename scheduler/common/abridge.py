"""Client values in messages and log lines, bounded: the one place that
shortens them (reprlib abbreviates inside containers and strings)."""

import reprlib

#: Characters of a value in a message unless a caller needs more.
LIMIT = 60

_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = LIMIT
_repr.maxlist = _repr.maxtuple = _repr.maxset = _repr.maxdict = 5
_repr.maxlevel = 3


def abridged(text: str, limit: int = LIMIT) -> str:
    """``text`` cut to at most ``limit`` characters, ``...`` marking the
    cut."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def short(value: object, limit: int = LIMIT) -> str:
    """``value``'s repr, abbreviated inside (long strings, deep or long
    containers) and at most ``limit`` characters."""
    return abridged(_repr.repr(value), limit)
