"""Id strings -> dense row numbers, in flat arrays: the importers' per-file tables.

A Claude Code file's uuid index, resume chain, open tool calls and response part counters hold
one entry per line (or per call, per response) until the file is done, so they set how the
import's memory grows with the file. As Python strings in dicts and sets an id costs ~90 bytes
for the string alone and ~50-100 more per table it is a key of; here a row costs its UTF-8
bytes and ~20 bytes of arrays, and the chain and the uuid index share one row per uuid.

The table is open addressing over an `array` of rows, probed by a 64-bit hash of the key bytes
(linear probing, load <= 1/2). A hash only picks where to look: a row matches when its stored
key bytes equal the looked-up id's, so two ids whose hashes collide stay two rows and can never
be taken for each other (a test forces the collision).

Keys are the ids' own UTF-8 (lone surrogates kept), whatever the id: a UUID packed into its 16
raw bytes would save 20 bytes a uuid, but checking that a string is a canonical UUID and
converting it cost ~1% more instructions on the import of a file with real UUIDs (callgrind),
where the brief was no slower.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator


def key_of(s: str) -> bytes:
    """The bytes an id is stored as (its UTF-8, lone surrogates kept, so any str reads back)."""
    return s.encode("utf-8", "surrogatepass")


def id_of(key: bytes | bytearray) -> str:
    """The id string `key_of` made `key` from."""
    return bytes(key).decode("utf-8", "surrogatepass")


class IdTable:
    """id string -> row (0, 1, 2, ... in the order ids were first added); rows are never
    removed. `hash` is the hash of the key bytes (a test passes a colliding one)."""

    __slots__ = ("_blob", "_ends", "_slots", "_mask", "_hash", "_memo", "_miss")

    def __init__(self, hash: Callable[[bytes], int] = hash, expect: int = 0) -> None:
        """`expect`: about how many ids will be added (slots for them from the start: each
        doubling places every row again, ~2 placements a row over a table's life)."""
        size = 16
        while size < 2 * min(expect, 1 << 26):
            size *= 2
        self._blob = bytearray()  # every row's key bytes, back to back
        self._ends = array("Q", [0])  # row r's key is _blob[_ends[r]:_ends[r + 1]]
        self._slots = array("i", [-1]) * size  # the row at each probe position, -1 for none
        self._mask = size - 1
        self._hash = hash
        #: the last two ids found or added and their rows (rows never change, so they stay
        #: right): a string compare instead of a probe
        self._memo: tuple = (None, -1, None, -1)
        #: the last id `find` missed, its key and the empty slot it ended on: `add` of it
        #: right after needs no second probe
        self._miss: tuple = (None, b"", -1, 0)

    def __len__(self) -> int:
        return len(self._ends) - 1

    def find(self, s: str) -> int:
        """The row of id `s`, or -1."""
        m = self._memo
        if m[0] == s:  # a line looks its uuid and its parent's up more than once, and its
            return m[1]  # parent is mostly the line before's uuid
        if m[2] == s:
            return m[3]
        k = s.encode("utf-8", "surrogatepass")  # key_of, inline
        n = len(k)
        slots, mask, ends, blob = self._slots, self._mask, self._ends, self._blob
        i = self._hash(k) & mask
        while True:  # linear probing; a row matches on its stored key, not on a hash
            r = slots[i]
            if r < 0:
                self._miss = (s, k, i, mask)
                return -1
            start = ends[r]
            if ends[r + 1] - start == n and blob.startswith(k, start):
                self._memo = (s, r, m[0], m[1])
                return r
            i = (i + 1) & mask

    def __contains__(self, s: object) -> bool:
        return isinstance(s, str) and self.find(s) >= 0

    def add(self, s: str) -> int:
        """The row of id `s`, added as the next row if it is new."""
        m = self._memo
        if m[0] == s:
            return m[1]
        if m[2] == s:
            return m[3]
        slots, mask, ends, blob = self._slots, self._mask, self._ends, self._blob
        miss = self._miss
        if miss[0] == s and miss[3] == mask and slots[miss[2]] < 0:
            k, i = miss[1], miss[2]  # still the empty slot its probe ended on: still absent
        else:
            k = s.encode("utf-8", "surrogatepass")  # key_of, inline
            n = len(k)
            i = self._hash(k) & mask
            while True:
                r = slots[i]
                if r < 0:
                    break
                start = ends[r]
                if ends[r + 1] - start == n and blob.startswith(k, start):
                    self._memo = (s, r, m[0], m[1])
                    return r
                i = (i + 1) & mask
        r = len(ends) - 1
        blob += k
        ends.append(len(blob))
        slots[i] = r
        self._memo = (s, r, m[0], m[1])
        if 2 * (r + 1) > mask + 1:
            self._grow()
        return r

    def _grow(self) -> None:
        """Twice the slots, every row placed again (its hash taken again from its key: ~2
        hashes a row over the table's life, where keeping them would cost 8 bytes a row)."""
        size = 2 * (self._mask + 1)
        slots, mask = array("i", [-1]) * size, size - 1
        ends, blob, hash_ = self._ends, self._blob, self._hash
        for r in range(len(ends) - 1):
            i = hash_(bytes(blob[ends[r]:ends[r + 1]])) & mask
            while slots[i] >= 0:
                i = (i + 1) & mask
            slots[i] = r
        self._slots, self._mask = slots, mask

    def id_at(self, row: int) -> str:
        """The id string of `row`."""
        if not 0 <= row < len(self._ends) - 1:
            raise IndexError(row)
        return id_of(self._blob[self._ends[row]:self._ends[row + 1]])

    def __iter__(self) -> Iterator[str]:
        return (self.id_at(r) for r in range(len(self)))


class IdCounts:
    """id -> int: the `get(id, default)` / `[id] = n` of a per-file counter (Claude Code's
    response parts), one IdTable row and 8 bytes an id."""

    __slots__ = ("_table", "_values")

    def __init__(self, hash: Callable[[bytes], int] = hash, expect: int = 0) -> None:
        self._table = IdTable(hash, expect)
        self._values = array("q")

    def __len__(self) -> int:
        return len(self._values)

    def get(self, s: str, default: int | None = None) -> int | None:
        r = self._table.find(s)
        return default if r < 0 else self._values[r]

    def __setitem__(self, s: str, value: int) -> None:
        r = self._table.add(s)
        if r == len(self._values):
            self._values.append(value)
        else:
            self._values[r] = value


class CallTable:
    """tool call id -> (requesting event id, tool name): an importer's table of the calls a
    result may still answer. A call costs an IdTable row, its event id as 32 raw bytes and a
    4-byte index into the file's few tool names, instead of a tuple, a 64-character string
    and the dict entry (~300 bytes)."""

    __slots__ = ("_table", "_events", "_names", "_name_list", "_name_pos")

    def __init__(self, hash: Callable[[bytes], int] = hash, expect: int = 0) -> None:
        self._table = IdTable(hash, expect)
        self._events = bytearray()  # 32 raw bytes a row
        self._names = array("I")  # row -> position in _name_list
        self._name_list: list[str] = []
        self._name_pos: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._names)

    def get(self, tcid: str, default: tuple[str, str] | None = None) -> tuple[str, str] | None:
        r = self._table.find(tcid)
        if r < 0:
            return default
        return self._events[32 * r:32 * r + 32].hex(), self._name_list[self._names[r]]

    def __setitem__(self, tcid: str, value: tuple[str, str]) -> None:
        event, name = value
        raw = bytes.fromhex(event)
        if len(raw) != 32:
            raise ValueError(f"not an event id: {event!r}")
        n = self._name_pos.get(name)
        if n is None:
            n = self._name_pos[name] = len(self._name_list)
            self._name_list.append(name)
        r = self._table.add(tcid)
        if r == len(self._names):
            self._names.append(n)
            self._events += raw
        else:
            self._names[r] = n
            self._events[32 * r:32 * r + 32] = raw
