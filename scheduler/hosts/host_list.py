"""The hosts of a host table (``HostList``): held in chunks that the
table's versions share, some of them built when first read
(``DeferredHost``)."""

import itertools
import operator
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler.hosts.state import HostState

#: Hosts per chunk of a HostList: 2 ** _CHUNK_BITS.
_CHUNK_BITS = 10
_CHUNK = 1 << _CHUNK_BITS
_CHUNK_MASK = _CHUNK - 1


class DeferredHost:
    """A host whose ``HostState`` is built when first read.

    The host cache hands a table the host of a report-only change in
    this form (``scheduler.hosts.cache.build.ReportedHost``): most are
    replaced by the node's next report before anything reads them, and
    the table's columns a report moves mostly read attributes that
    ``light`` answers without the state being built (``LIGHT``).
    ``HostList`` builds the state when it hands the host out: plugins
    only ever see ``HostState`` objects.
    """

    __slots__ = ("_state", "light")

    #: The attributes ``light`` answers as the state would (a table gives
    #: it to the column functions that read only these:
    #: ``column_functions.light()``).
    LIGHT = frozenset(("host", "updated_at", "metrics_updated_at",
                       "generation", "changed_at"))

    def __init__(self, light: object) -> None:
        self._state: HostState | None = None
        #: An object whose ``LIGHT`` attributes are the state's.
        self.light = light

    def built(self) -> "HostState":
        """The host's state, built once (two threads building it at once
        build equal states, either of which is kept)."""
        state = self._state
        if state is None:
            state = self._state = self._build()
        return state

    def _build(self) -> "HostState":
        raise NotImplementedError


def built(host: "HostState | DeferredHost") -> "HostState":
    """``host`` as a ``HostState``: built when deferred."""
    return host.built() if isinstance(host, DeferredHost) else host


class HostList(Sequence):
    """The hosts of a table, held in chunks of 1,024 that the table's next
    versions share.

    Every refresh makes a new table version with the changed hosts
    replaced. A plain list was copied, and the old one freed, whole: at
    100,000 hosts that was nearly a third of each decision. Here a version
    copies the chunks of the hosts it replaces and shares the others.

    A host may be held as a ``DeferredHost``: its state is built when the
    list first hands it out, and kept in the chunk in its place (the
    versions sharing the chunk hold that same host).
    """

    __slots__ = ("_chunks", "_length", "_deferred")

    def __init__(self, hosts: Iterable["HostState | DeferredHost"] = ()):
        hosts = list(hosts)
        self._length = len(hosts)
        self._chunks = [hosts[start:start + _CHUNK]
                        for start in range(0, len(hosts), _CHUNK)]
        #: The chunks that may hold deferred hosts, by number.
        self._deferred = frozenset(
            index >> _CHUNK_BITS for index, host in enumerate(hosts)
            if isinstance(host, DeferredHost))

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index):
        if isinstance(index, slice):
            return list(self)[index]
        index = operator.index(index)
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("host index out of range")
        chunk = self._chunks[index >> _CHUNK_BITS]
        host = chunk[index & _CHUNK_MASK]
        if isinstance(host, DeferredHost):
            host = chunk[index & _CHUNK_MASK] = host.built()
        return host

    def __iter__(self) -> Iterator["HostState"]:
        if self._deferred:
            self._build_deferred()
        return itertools.chain.from_iterable(self._chunks)

    def _build_deferred(self) -> None:
        """Build every deferred host, in the chunks in place."""
        chunks, deferred = self._chunks, self._deferred
        for number in deferred:
            chunk = chunks[number]
            for index, host in enumerate(chunk):
                if isinstance(host, DeferredHost):
                    chunk[index] = host.built()
        self._deferred = frozenset()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HostList | list | tuple):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"HostList({list(self)!r})"

    def take(self, rows: Iterable[int]) -> list["HostState"]:
        """The hosts at ``rows``, in that order."""
        # Read before the chunks: a builder writes every state before it
        # clears it, so an empty set means built hosts.
        deferred = self._deferred
        chunks = self._chunks
        hosts = [chunks[row >> _CHUNK_BITS][row & _CHUNK_MASK]
                 for row in rows]
        if deferred:
            hosts = [built(host) for host in hosts]
        return hosts

    def replaced(self, rows: Mapping[int, "HostState | DeferredHost"]
                 ) -> "HostList":
        """A copy with the host at each position of ``rows`` replaced."""
        # Read before the chunks are copied (see take()).
        held = self._deferred
        chunks = list(self._chunks)
        copied: set[int] = set()
        deferred: set[int] = set()
        for index, host in rows.items():
            number = index >> _CHUNK_BITS
            if number not in copied:
                chunks[number] = list(chunks[number])
                copied.add(number)
            chunks[number][index & _CHUNK_MASK] = host
            if isinstance(host, DeferredHost):
                deferred.add(number)
        new = HostList.__new__(HostList)
        new._chunks, new._length = chunks, self._length
        new._deferred = held | deferred if deferred else held
        return new
