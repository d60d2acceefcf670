"""Look-ups in pack indexes against a plain dict: sealed (mapped) and partial (pread) indexes,
along each of their search paths — interpolation over the ids, bisection of the last few, and
the array of 8-byte prefixes a busy index builds — on ids spread evenly, crowded into one
fan-out bucket, skewed to one end of it, and sharing whole 8-byte prefixes (where only a
comparison of whole ids tells them apart). And what opening checks: the messages a damaged
index gets, word for word."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore.errors import CorruptStore
from ctxstore.store import packindex
from ctxstore.store.packindex import (
    IDS_START,
    TRAILER_SIZE,
    PackIndex,
    PartialIndex,
    build_index,
    merge_index,
)

KINDS = [PackIndex, PartialIndex]


def _ids(kind: str, n: int, seed: int = 1) -> list[bytes]:
    rnd = random.Random(seed)
    if kind == "uniform":
        return [rnd.randbytes(32) for _ in range(n)]
    if kind == "one-bucket":  # every id in the fan-out bucket 0x80
        return [b"\x80" + rnd.randbytes(31) for _ in range(n)]
    if kind == "skewed":  # crowded at the low end of their bucket: interpolation guesses badly
        return [b"\x42" + bytes([0] * 3) + rnd.randbytes(28) for _ in range(n // 2)] + \
               [b"\x42" + rnd.randbytes(31) for _ in range(n - n // 2)]
    if kind == "shared-prefixes":  # groups of ids equal in their first 8 (and more) bytes
        heads = [rnd.randbytes(8) for _ in range(max(1, n // 6))]
        return [rnd.choice(heads) + (bytes(23) + rnd.randbytes(1) if rnd.random() < 0.3
                                     else rnd.randbytes(24)) for _ in range(n)]
    raise ValueError(kind)


def _write(tmp_path, ids, cls, name="x"):
    entries = [(raw, 8 + 97 * i) for i, raw in enumerate(ids)]
    path = os.path.join(tmp_path, name + (".pidx" if cls is PartialIndex else ".idx"))
    with open(path, "wb") as f:
        f.write(build_index(entries, 10**9))
    return path, dict(entries)


def _probes(ids: list[bytes]) -> list[bytes]:
    """Every id, and keys next to ids (which must miss): last byte or 8-byte head +-1,
    the smallest and largest keys of their bucket."""
    out = list(ids)
    for raw in ids[::3]:
        n = int.from_bytes(raw, "big")
        out += [(n + 1) % 2**256, (n - 1) % 2**256, (n + 2**192) % 2**256,
                (n - 2**192) % 2**256]
        out[-4:] = [x.to_bytes(32, "big") for x in out[-4:]]
        out += [raw[:1] + b"\x00" * 31, raw[:1] + b"\xff" * 31]
    return out


@pytest.mark.parametrize("cls", KINDS, ids=["sealed", "partial"])
@pytest.mark.parametrize("kind", ["uniform", "one-bucket", "skewed", "shared-prefixes"])
@pytest.mark.parametrize("n", [1, 9, 70, 700, 3000])
def test_find_answers_like_a_dict_on_every_search_path(tmp_path, cls, kind, n):
    ids = _ids(kind, n)
    path, oracle = _write(tmp_path, ids, cls)
    probes = _probes(ids)
    # a fresh index per probe: fewer look-ups than count/256, so no prefix array (search path)
    for key in probes[:: max(1, len(probes) // 300)]:
        index = cls(path)
        assert index.find(key) == oracle.get(key, -1), key.hex()
        assert (index._prefixes is None) == (n >= 256)  # below 256 ids: the array at once
        index.close()
    # one index looked up again and again: past count/256 look-ups it builds the prefix array
    index = cls(path)
    answers = [index.find(key) for key in probes]
    assert index._prefixes is not None
    assert answers == [oracle.get(key, -1) for key in probes]
    assert list(index._prefixes) == sorted(int.from_bytes(raw[:8], "big") for raw in oracle)
    index.close()


@settings(max_examples=40, deadline=None)
@given(heads=st.lists(st.binary(min_size=8, max_size=8), min_size=1, max_size=4),
       tails=st.lists(st.binary(min_size=24, max_size=24), min_size=1, max_size=120),
       picks=st.lists(st.integers(0, 10**6), max_size=40), cls=st.sampled_from(KINDS),
       warm=st.booleans())
def test_find_among_ids_sharing_eight_byte_heads(tmp_path_factory, heads, tails, picks, cls, warm):
    ids = sorted({heads[i % len(heads)] + t for i, t in enumerate(tails)})
    path, oracle = _write(tmp_path_factory.mktemp("idx"), ids, cls)
    index = cls(path)
    if warm:  # as a busy index has it: the prefix array, not interpolation
        index._prefixes = index._load_prefixes(index._open()) if cls is PackIndex \
            else (len(index), index._read_prefixes())[1]
    keys = [ids[p % len(ids)] for p in picks] + \
           [heads[p % len(heads)] + bytes(24) for p in picks[:5]] + \
           [heads[p % len(heads)] + b"\xff" * 24 for p in picks[:5]]
    for key in keys:
        assert index.find(key) == oracle.get(key, -1)
    index.close()


@pytest.mark.parametrize("cls", KINDS, ids=["sealed", "partial"])
def test_entries_ids_len_and_pack_length(tmp_path, cls):
    ids = _ids("uniform", 50)
    path, oracle = _write(tmp_path, ids, cls)
    index = cls(path)
    assert len(index) == 50
    assert index.pack_length_checked() == 10**9
    assert list(index.entries()) == sorted(oracle.items())
    assert list(index.ids()) == sorted(raw.hex() for raw in ids)
    assert index.verify_checksum()
    index.close()
    index.close()  # twice is fine


@pytest.mark.parametrize("cls", KINDS, ids=["sealed", "partial"])
def test_a_flipped_byte_anywhere_fails_the_checksum(tmp_path, cls):
    path, _ = _write(tmp_path, _ids("uniform", 20), cls)
    good = open(path, "rb").read()
    for at in (0 + 9, IDS_START + 5, len(good) - TRAILER_SIZE - 1, len(good) - 1):
        data = bytearray(good)
        data[at] ^= 0x04
        with open(path, "wb") as f:
            f.write(data)
        index = cls(path)
        assert index.verify_checksum() is False, at
        index.close()


def _damaged(tmp_path, cls, data):
    path = os.path.join(tmp_path, "bad.pidx" if cls is PartialIndex else "bad.idx")
    with open(path, "wb") as f:
        f.write(data)
    return path


@pytest.mark.parametrize("cls", KINDS, ids=["sealed", "partial"])
def test_opening_a_damaged_index_says_what_is_wrong(tmp_path, cls):
    good = build_index([(b"\x11" * 32, 8), (b"\x22" * 32, 99)], 500)
    cases = [
        (good[:IDS_START + TRAILER_SIZE - 1], f"is truncated ({IDS_START + TRAILER_SIZE - 1} bytes)"),
        (b"XIDX" + good[4:], "has a bad magic"),
        (good[:4] + (2).to_bytes(4, "little") + good[8:], "has unsupported version 2"),
        (good + b"\x00", f"size {len(good) + 1} does not match 2 entries"),
        (good[:-40], f"size {len(good) - 40} does not match 2 entries"),
    ]
    for data, what in cases:
        path = _damaged(tmp_path, cls, data)
        for call in (len, lambda i: i.find(b"\x11" * 32), lambda i: i.pack_length_checked(),
                     lambda i: list(i.with_prefix("11"))):
            with pytest.raises(CorruptStore) as exc:
                call(cls(path))
            sep = ": " if what.startswith("size") else " "
            assert str(exc.value) == f"index {path}{sep}{what}"
            assert exc.value.details["path"] == path
    # the smallest well-formed index: no entries
    path = _damaged(tmp_path, cls, build_index([], 8))
    assert len(cls(path)) == 0 and cls(path).find(b"\x11" * 32) == -1


def test_a_partial_index_cut_after_opening_is_named(tmp_path):
    path, _ = _write(tmp_path, _ids("uniform", 300), PartialIndex)
    index = PartialIndex(path)
    assert len(index) == 300
    os.truncate(path, IDS_START + 10)
    with pytest.raises(CorruptStore, match=f"^index {path} is shorter than it says$") as exc:
        list(index.ids())
    assert exc.value.details["path"] == path
    index.close()


def test_merge_index_keeps_the_earlier_offset_of_an_id_and_counts_buckets(tmp_path):
    """New entries spliced into a base: an id the base has keeps the base's offset; an id twice
    among the new ones keeps its first (earliest) offset; the result is what build_index makes
    of the same set, byte for byte (fan-out, order, checksum)."""
    rnd = random.Random(3)
    base = [(bytes([b]) + rnd.randbytes(31), 8 + i) for i, b in enumerate((0, 0, 5, 200, 255))]
    path = os.path.join(tmp_path, "b.pidx")
    with open(path, "wb") as f:
        f.write(build_index(base, 1000))
    new_id = b"\x05" + rnd.randbytes(31)
    new = [(base[2][0], 5000), (new_id, 6000), (new_id, 7000), (b"\xff" * 32, 8000),
           (b"\x00" * 32, 9000)]
    for cls in KINDS:
        merged = merge_index(cls(path), new, 10_000)
        want = dict(base)
        want.update({new_id: 6000, b"\xff" * 32: 8000, b"\x00" * 32: 9000})
        assert merged == build_index(list(want.items()), 10_000)
        out = os.path.join(tmp_path, "m.idx")
        with open(out, "wb") as f:
            f.write(merged)
        assert dict(PackIndex(out).entries()) == want
    # no base (the first partial index of a pack): the same rule, the earliest offset wins
    first = {b"\x00" * 32: 9000, new_id: 6000, b"\xff" * 32: 8000, base[2][0]: 5000}
    assert merge_index(None, new, 10) == build_index(list(first.items()), 10)
    empty = os.path.join(tmp_path, "e.idx")
    with open(empty, "wb") as f:
        f.write(build_index([], 10))
    assert merge_index(PackIndex(empty), new, 10) == build_index(list(first.items()), 10)


def test_prefix_bounds():
    assert packindex._prefix_bounds("3") == (bytes([0x30]) + bytes(31), 0x3f)
    assert packindex._prefix_bounds("3a") == (bytes([0x3a]) + bytes(31), 0x3a)
    assert packindex._prefix_bounds("3a7") == (bytes([0x3a, 0x70]) + bytes(30), 0x3a)
    full = "ab" * 32
    assert packindex._prefix_bounds(full) == (bytes.fromhex(full), 0xab)


def test_bytes_of_an_index_not_opened_yet(tmp_path):
    """merge_index reads a base's ids and offsets through `_bytes`, which opens the index if
    nothing has yet."""
    for cls in KINDS:
        path, _ = _write(tmp_path, _ids("uniform", 3), cls)
        index = cls(path)
        assert index._bytes(0, 4) == b"CIDX"
        assert index._bytes(0, 4) == b"CIDX"  # and again, opened
        index.close()


class _Counting(bytes):
    """An index's bytes that count the ids a look-up reads (each slice of the mapping)."""

    reads = 0

    def __getitem__(self, key):
        _Counting.reads += 1
        return bytes.__getitem__(self, key)


def _reads_per_lookup(tmp_path, cls, monkeypatch):
    rnd = random.Random(5)
    ids = [rnd.randbytes(32) for _ in range(20_000)]
    keys = rnd.sample(ids, 40) + [rnd.randbytes(32) for _ in range(38)]  # hits and misses
    path, oracle = _write(tmp_path, ids, cls)
    index = cls(path)
    len(index)
    counts = []
    if cls is PackIndex:
        index._mm.close()
        index._mm = _Counting(open(path, "rb").read())
        for key in keys:
            _Counting.reads = 0
            assert index.find(key) == oracle.get(key, -1)
            counts.append(_Counting.reads)
    else:
        real = PartialIndex._bytes
        reads = []
        monkeypatch.setattr(PartialIndex, "_bytes", lambda self, s, e: reads.append(1) or real(self, s, e))
        for key in keys:
            reads.clear()
            assert index.find(key) == oracle.get(key, -1)
            counts.append(len(reads))
    assert index._prefixes is None  # 78 look-ups of 20,000 ids: interpolation all along
    return sum(counts) / len(counts), max(counts)


@pytest.mark.parametrize("cls, mean, most", [(PackIndex, 4.0, 6), (PartialIndex, 3.0, 5)],
                         ids=["sealed", "partial"])
def test_interpolation_finds_an_id_in_a_few_reads(tmp_path, monkeypatch, cls, mean, most):
    """find's docstring: interpolation on the ids' first 8 bytes needs ~3 probes where
    bisection needs ~log2(N/256). Counted over 78 look-ups among 20,000 uniform ids (the
    data and keys are fixed, so the counts are too): a mis-scaled estimate still answers
    right, but reads 6 to 40 ids a look-up instead of ~3."""
    got_mean, got_most = _reads_per_lookup(tmp_path, cls, monkeypatch)
    assert got_mean < mean and got_most <= most, (got_mean, got_most)


@pytest.mark.parametrize("cls", KINDS, ids=["sealed", "partial"])
def test_the_prefix_array_comes_after_count_over_256_lookups(tmp_path, cls):
    """Built at the first look-up past count/256 (it costs ~10 ms per million ids: paid for
    by then), not before; below 256 ids, at the first."""
    path, _ = _write(tmp_path, _ids("uniform", 3000), cls)  # 3000 >> 8 == 11
    index = cls(path)
    for _ in range(11):
        index.find(b"\x00" * 32)
    assert index._prefixes is None
    index.find(b"\x00" * 32)
    assert index._prefixes is not None
    index.close()


@pytest.mark.parametrize("cls", KINDS, ids=["sealed", "partial"])
def test_an_index_closed_and_used_again_answers_as_before(tmp_path, cls):
    """A store closes its indexes (gc, close) while an object may still hold one: the next
    look-up opens it again, prefix array and all."""
    ids = _ids("uniform", 40)
    path, oracle = _write(tmp_path, ids, cls)
    index = cls(path)
    assert [index.find(k) for k in ids] == [oracle[k] for k in ids]
    assert index._prefixes is not None
    index.close()
    assert [index.find(k) for k in ids] == [oracle[k] for k in ids]
    assert list(index.with_prefix(ids[0].hex()[:6])) == sorted(
        k.hex() for k in ids if k.hex().startswith(ids[0].hex()[:6]))
    index.close()
