"""Prefix search in pack indexes (`ctx show 3fa2…`, ambiguous-prefix errors), against a plain
filter of the sorted ids: sealed indexes (mapped, bisected) and partial ones (pread), with ids
crowded around fan-out boundaries and sharing long prefixes, and prefixes of every length."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore.store.packindex import PackIndex, PartialIndex, build_index

#: first bytes at the fan-out's edges and a crowded middle, ids sharing up to 31 bytes
_FIRST = st.sampled_from([0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff])
_ID = st.builds(lambda first, shared, tail: bytes([first]) + shared + tail,
                _FIRST, st.sampled_from([b"", b"\xab", b"\xab\xcd\x00", b"\xab" * 30]),
                st.binary(min_size=31, max_size=31)).map(lambda b: b[:32])


def _index(tmp_path, ids, partial):
    path = os.path.join(tmp_path, "p.pidx" if partial else "p.idx")
    with open(path, "wb") as f:
        f.write(build_index([(raw, 16 + 8 * i) for i, raw in enumerate(sorted(ids))], 10**6))
    return (PartialIndex if partial else PackIndex)(path)


@settings(max_examples=60, deadline=None)
@given(ids=st.sets(_ID, min_size=1, max_size=40), picks=st.lists(st.integers(0, 10**6),
       min_size=1, max_size=8), lengths=st.lists(st.integers(1, 64), min_size=1, max_size=8),
       partial=st.booleans())
def test_with_prefix_is_the_sorted_ids_that_start_with_it(tmp_path_factory, ids, picks, lengths,
                                                          partial):
    tmp = tmp_path_factory.mktemp("idx")
    index = _index(tmp, ids, partial)
    hexes = sorted(raw.hex() for raw in ids)
    prefixes = {hexes[p % len(hexes)][:n] for p in picks for n in lengths}
    # and prefixes of no id: just before and after an id, and past every id of a first byte
    prefixes |= {h[:-1] + format((int(h[-1], 16) + 1) % 16, "x") for h in hexes[:3]}
    prefixes |= {"00", "ff", "7f", "80", "0", "f", "abcd"}
    for prefix in prefixes:
        assert list(index.with_prefix(prefix)) == [h for h in hexes if h.startswith(prefix)], prefix


def test_with_prefix_the_full_id_and_neighbours(tmp_path):
    ids = [bytes([0x80]) + bytes([0xab] * 30) + bytes([n]) for n in (0, 1, 2, 0xff)]
    for partial in (False, True):
        index = _index(tmp_path, ids, partial)
        hexes = sorted(raw.hex() for raw in ids)
        for h in hexes:
            assert list(index.with_prefix(h)) == [h]
        assert list(index.with_prefix(hexes[0][:62])) == hexes
        assert list(index.with_prefix(hexes[0][:63])) == hexes[:3]  # ..00, ..01, ..02
        assert list(index.with_prefix("7f")) == [] and list(index.with_prefix("81")) == []


def test_a_pack_store_answers_every_prefix_length_from_both_kinds_of_index(tmp_path):
    """300 objects (then 301) read back through an active pack's partial index (after a reopen), then
    through a sealed pack's index: one-digit prefixes too (`ids_with_prefix` is public)."""
    from ctxstore.store.packstore import PackStore

    with PackStore(tmp_path, dict_samples=0) as s:
        ids = sorted(s.put("value", i) for i in range(300))
    prefixes = ["", *"0123456789abcdef", ids[7][:2], ids[7][:3], ids[7][:33], ids[7]]
    for sealed in (False, True):
        with PackStore(tmp_path) as s:
            if sealed:  # take the pack over with one more object, and seal it
                ids = sorted([*ids, s.put("value", 300)])
                s.seal_active()
            assert [p.sealed for p in s.packs()] == [sealed]
            for prefix in prefixes:
                assert sorted(s.ids_with_prefix(prefix)) == \
                    [i for i in ids if i.startswith(prefix)], (sealed, prefix)
