""""Did you mean" for misspelt names: options, groups, plugins, metrics."""

import difflib
from collections.abc import Iterable


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name ``name`` is most likely a misspelling of, if any."""
    matches = difflib.get_close_matches(name, sorted(set(known)), n=1,
                                        cutoff=0.6)
    return matches[0] if matches else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` to end a problem line with, or ``""``."""
    match = closest(name, known)
    return f"; did you mean {match!r}?" if match and match != name else ""
