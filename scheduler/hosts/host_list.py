"""The hosts of a host table (``HostList``): held in chunks that the
table's versions share."""

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


class HostList(Sequence):
    """The hosts of a table, held in chunks of 1,024 that the table's next
    versions share.

    Every refresh makes a new table version with the changed hosts
    replaced. A plain list was copied, and the old one freed, whole: at
    100,000 hosts that was nearly a third of each decision. Here a version
    copies the chunks of the hosts it replaces and shares the others.
    """

    __slots__ = ("_chunks", "_length")

    def __init__(self, hosts: Iterable["HostState"] = ()):
        hosts = list(hosts)
        self._length = len(hosts)
        self._chunks = [hosts[start:start + _CHUNK]
                        for start in range(0, len(hosts), _CHUNK)]

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
        return self._chunks[index >> _CHUNK_BITS][index & _CHUNK_MASK]

    def __iter__(self) -> Iterator["HostState"]:
        return itertools.chain.from_iterable(self._chunks)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HostList | list | tuple):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"HostList({list(self)!r})"

    def take(self, rows: Iterable[int]) -> list["HostState"]:
        """The hosts at ``rows``, in that order."""
        chunks = self._chunks
        return [chunks[row >> _CHUNK_BITS][row & _CHUNK_MASK]
                for row in rows]

    def replaced(self, rows: Mapping[int, "HostState"]) -> "HostList":
        """A copy with the host at each position of ``rows`` replaced."""
        chunks = list(self._chunks)
        copied: set[int] = set()
        for index, host in rows.items():
            number = index >> _CHUNK_BITS
            if number not in copied:
                chunks[number] = list(chunks[number])
                copied.add(number)
            chunks[number][index & _CHUNK_MASK] = host
        new = HostList.__new__(HostList)
        new._chunks, new._length = chunks, self._length
        return new
