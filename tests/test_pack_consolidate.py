"""Consolidation (store/packconsolidate.py) piece by piece: which packs it picks, what it
merges and leaves, what it copies record by record, and what it leaves after damage.

test_store_pack.py checks the outcome through a PackStore (few packs, every object readable);
these check each step against what docs/format.md and the module docstring say, so that a
merge that picks the wrong packs, copies a record twice, keeps a damaged pack's half or
forgets a file fails here."""

from __future__ import annotations

import os

import pytest

from ctxstore import codec
from ctxstore.store import packconsolidate as pc
from ctxstore.store.fsck import verify
from ctxstore.store.pack import HEADER, HEADER_SIZE, IDX_SUFFIX, PIDX_SUFFIX, Pack
from ctxstore.store.packindex import PackIndex, build_index
from ctxstore.store.packstore import PackStore
from tests.test_store_pack import event


@pytest.mark.parametrize("sizes, k", [
    ([], 0), ([5], 0), ([1, 1], 2), ([1, 1, 1], 3), ([1, 10], 0), ([1, 1, 10], 2),
    ([2, 3], 2), ([2, 4], 0), ([2, 5], 0), ([4, 5, 6, 100], 3), ([1, 4, 16], 0),
    ([3, 1, 1], 3),  # a later small pack still counts against all before it
    ([1, 1, 3], 3), ([2, 2, 2, 7], 4),  # against all before it together, not the last one
])
def test_choose_merges_the_smallest_run_that_leaves_a_geometric_rest(sizes, k):
    """k smallest packs: the longest prefix whose last member is < twice all before it."""
    assert pc.choose(sizes) == k


def _sealed_store(path, n_packs, per_pack=12):
    """A store of about `n_packs` sealed packs (no consolidation) and its ids."""
    ids = []
    with PackStore(path, seal_size=2048, max_packs=1000, dict_samples=0) as s:
        while len(pc.sealed_packs(os.path.join(path, "packs"))) < n_packs:
            for _ in range(per_pack):
                ids.append(s.put("value", event(len(ids))))
    return ids


def test_sealed_packs_lists_sealed_packs_only_smallest_first(tmp_path):
    _sealed_store(tmp_path, 3)
    packs_dir = os.path.join(tmp_path, "packs")
    names = os.listdir(packs_dir)
    sealed = sorted((os.path.getsize(os.path.join(packs_dir, n)), os.path.join(packs_dir, n))
                    for n in names if n.endswith(".pack") and n[:-5] + IDX_SUFFIX in names)
    assert len(sealed) == 3
    # noise: a temporary pack of a merge in progress, a stray file, an index without a pack
    for stray in ("tmp-pack-" + "0" * 40 + ".pack", "notes.pack", "pack-" + "1" * 40 + ".idx"):
        with open(os.path.join(packs_dir, stray), "wb") as f:
            f.write(HEADER)
    open(os.path.join(packs_dir, "tmp-pack-" + "0" * 40 + IDX_SUFFIX), "wb").close()
    assert pc.sealed_packs(packs_dir) == sealed
    assert [s for s, _ in sealed] == sorted(s for s, _ in sealed)


def _six_packs(tmp_path, at_least):
    """(ids, packs dir, its sealed packs, how many consolidation will merge: >= at_least)."""
    ids = _sealed_store(tmp_path, 6)
    packs_dir = os.path.join(tmp_path, "packs")
    before = pc.sealed_packs(packs_dir)
    k = pc.choose([s for s, _ in before])
    assert k >= at_least
    return ids, packs_dir, before, k


def test_consolidate_merges_exactly_the_chosen_packs(tmp_path):
    ids, packs_dir, before, k = _six_packs(tmp_path, 2)
    chosen = [p for _, p in before[:k]]
    chosen_ids = {raw.hex() for p in chosen for raw, _ in PackIndex(p[:-5] + IDX_SUFFIX).entries()}
    for path in chosen[:2]:  # left by a crash between sealing and the partial index's removal
        open(path[:-5] + PIDX_SUFFIX, "wb").close()
    removed = pc.consolidate(packs_dir, max_packs=len(before) - 1)
    assert sorted(removed) == sorted(chosen)
    for path in chosen:
        for suffix in (".pack", IDX_SUFFIX, PIDX_SUFFIX):
            assert not os.path.exists(path[:-5] + suffix)
    after = pc.sealed_packs(packs_dir)
    assert len(after) == len(before) - k + 1
    assert not [n for n in os.listdir(packs_dir) if n.startswith("tmp-")]
    (new,) = {p for _, p in after} - {p for _, p in before}
    merged = [raw.hex() for raw, _ in PackIndex(new[:-5] + IDX_SUFFIX).entries()]
    assert sorted(merged) == sorted(chosen_ids)  # each object of the chosen packs, once
    with PackStore(tmp_path) as s:
        assert [s.get(i) for i in ids] == [event(n) for n in range(len(ids))]
        assert list(verify(s, workers=1)) == []


def test_consolidate_leaves_the_packs_alone_when_it_should(tmp_path):
    _sealed_store(tmp_path, 4)
    packs_dir = os.path.join(tmp_path, "packs")
    before = pc.sealed_packs(packs_dir)
    assert pc.consolidate(packs_dir, max_packs=len(before)) == []  # not more than max_packs
    lock = os.open(os.path.join(packs_dir, pc.LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        assert pc.try_lock(lock)  # another process is consolidating
        assert pc.consolidate(packs_dir, max_packs=1) == []
    finally:
        os.close(lock)
    assert pc.sealed_packs(packs_dir) == before
    old_umask = os.umask(0o022)
    try:
        os.unlink(os.path.join(packs_dir, pc.LOCK_NAME))
        assert pc.consolidate(packs_dir, max_packs=len(before)) == []
    finally:
        os.umask(old_umask)
    assert os.stat(os.path.join(packs_dir, pc.LOCK_NAME)).st_mode & 0o777 == 0o644


def test_consolidate_does_nothing_when_the_sizes_are_already_geometric(tmp_path, monkeypatch):
    _sealed_store(tmp_path, 3)
    packs_dir = os.path.join(tmp_path, "packs")
    before = pc.sealed_packs(packs_dir)
    monkeypatch.setattr(pc, "choose", lambda sizes: 0)
    assert pc.consolidate(packs_dir, max_packs=1) == []
    assert pc.sealed_packs(packs_dir) == before


def _flip_a_record(path):
    """Flip a payload byte of the pack's first record: its crc fails."""
    with open(path, "r+b") as f:
        f.seek(HEADER_SIZE + codec.RECORD_HEAD_SIZE + 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x10]))


def test_a_damaged_pack_is_left_out_of_the_merge_and_kept(tmp_path):
    ids, packs_dir, before, k = _six_packs(tmp_path, 3)
    damaged = before[1][1]
    _flip_a_record(damaged)
    removed = pc.consolidate(packs_dir, max_packs=len(before) - 1)
    assert sorted(removed) == sorted(p for _, p in before[:k] if p != damaged)
    assert os.path.exists(damaged) and os.path.exists(damaged[:-5] + IDX_SUFFIX)
    with PackStore(tmp_path) as s:
        readable = 0
        for n, i in enumerate(ids):
            try:
                assert s.get(i) == event(n)
                readable += 1
            except codec.CorruptObject:
                assert Pack(damaged, True).index.find(bytes.fromhex(i)) >= 0
        assert readable == len(ids) - 1


def test_fewer_than_two_packs_left_to_merge_is_no_merge(tmp_path, monkeypatch):
    _sealed_store(tmp_path, 3)
    packs_dir = os.path.join(tmp_path, "packs")
    before = pc.sealed_packs(packs_dir)
    files = sorted(os.listdir(packs_dir))
    monkeypatch.setattr(pc, "choose", lambda sizes: 2)
    _flip_a_record(before[0][1])
    assert pc.consolidate(packs_dir, max_packs=1) == []
    assert pc.sealed_packs(packs_dir) == before
    # no new pack and no temporary file left (only the lock file is new)
    assert sorted(set(os.listdir(packs_dir)) - {pc.LOCK_NAME}) == files


# -- copy_records ---------------------------------------------------------------------------

def _records(pack):
    """[(raw id, record bytes)] of a sealed pack, in offset order."""
    data = pack.data()
    out = []
    for raw, off in sorted(pack.index.entries(), key=lambda e: e[1]):
        size = codec.read_record_header(data, off).size
        out.append((raw, bytes(data[off:off + size])))
    return out


@pytest.fixture
def one_pack(tmp_path):
    ids = _sealed_store(tmp_path / "store", 1, per_pack=40)
    (_, path), = pc.sealed_packs(os.path.join(tmp_path, "store", "packs"))[:1]
    out = os.open(tmp_path / "out", os.O_RDWR | os.O_CREAT)
    os.write(out, HEADER)
    yield Pack(path, True), out, ids
    os.close(out)


def _out(fd):
    os.lseek(fd, 0, os.SEEK_SET)
    return os.read(fd, 1 << 24)


@pytest.mark.parametrize("chunk", [pc._CHUNK, 300])
def test_copy_records_copies_in_offset_order_and_notes_each_offset(one_pack, monkeypatch, chunk):
    pack, fd, _ = one_pack
    monkeypatch.setattr(pc, "_CHUNK", chunk)  # flushed many times on the way, or once
    records = _records(pack)
    written = {}
    end, total, dead = pc.copy_records(pack, fd, HEADER_SIZE, written)
    data = _out(fd)
    assert data == HEADER + b"".join(r for _, r in records)
    assert (end, total, dead) == (len(data), len(records), 0)
    pos = HEADER_SIZE
    for raw, record in records:
        assert written[raw] == pos
        pos += len(record)


def test_copy_records_skips_written_present_and_dead_records(one_pack):
    pack, fd, _ = one_pack
    records = _records(pack)
    already = {records[0][0]: 4242}
    present = {records[1][0]}
    dead = {records[2][0].hex(), records[3][0].hex()}
    written = dict(already)
    end, total, n_dead = pc.copy_records(pack, fd, HEADER_SIZE, written,
                                         live=lambda h: h not in dead,
                                         present=lambda raw: raw in present)
    kept = records[4:]
    assert _out(fd) == HEADER + b"".join(r for _, r in kept)
    assert (end, total, n_dead) == (HEADER_SIZE + sum(len(r) for _, r in kept), len(records), 2)
    assert written[records[0][0]] == 4242  # what was written before stays as it was
    assert set(written) == {records[0][0]} | {raw for raw, _ in kept}


def test_copy_records_writes_what_transform_returns(one_pack):
    pack, fd, _ = one_pack
    records = _records(pack)
    seen = []

    def transform(data, info, where):
        seen.append((info.id, where))
        return b"<" + info.id.encode() + b">"

    end, total, _ = pc.copy_records(pack, fd, HEADER_SIZE, {}, transform=transform)
    assert _out(fd) == HEADER + b"".join(b"<" + raw.hex().encode() + b">" for raw, _ in records)
    assert seen == [(raw.hex(), pack.where) for raw, _ in records]
    assert end == HEADER_SIZE + sum(66 for _ in records) and total == len(records)


def test_copy_records_rolls_a_damaged_pack_back_entirely(one_pack):
    """A bad record halfway: nothing of the pack stays in the output (truncated back to where
    it started, the file position too) and `written` is as before the call."""
    pack, fd, _ = one_pack
    records = _records(pack)
    os.write(fd, b"kept")  # what an earlier pack contributed
    start = HEADER_SIZE + 4
    written = {b"\x01" * 32: HEADER_SIZE}
    victim = sorted(pack.index.entries(), key=lambda e: e[1])[len(records) // 2][1]
    with open(pack.path, "r+b") as f:
        f.seek(victim + codec.RECORD_HEAD_SIZE + 1)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x01]))
    assert pc.copy_records(Pack(pack.path, True), fd, start, written) is None
    assert written == {b"\x01" * 32: HEADER_SIZE}
    assert _out(fd) == HEADER + b"kept"
    assert os.lseek(fd, 0, os.SEEK_CUR) == start
    assert pc._copy(Pack(pack.path, True), fd, start, written) == -1


def test_copy_records_of_an_index_that_disagrees_with_its_pack(one_pack):
    pack, fd, _ = one_pack
    entries = sorted(pack.index.entries(), key=lambda e: e[1])
    (a, off_a), (b, off_b) = entries[3], entries[4]
    swapped = dict(entries)
    swapped[a], swapped[b] = off_b, off_a
    with open(pack.path[:-5] + IDX_SUFFIX, "wb") as f:
        f.write(build_index(list(swapped.items()), os.path.getsize(pack.path)))
    assert pc.copy_records(Pack(pack.path, True), fd, HEADER_SIZE, {}) is None
    assert _out(fd) == HEADER


def test_copy_records_of_a_vanished_pack(one_pack):
    pack, fd, _ = one_pack
    fresh = Pack(pack.path, True)
    os.unlink(pack.path)
    assert pc.copy_records(fresh, fd, HEADER_SIZE, {}) is None
    assert _out(fd) == HEADER


# -- _merge: the files a merge leaves --------------------------------------------------------

def test_a_merge_of_two_packs_leaves_one_named_and_indexed_pack(tmp_path, monkeypatch, renames):
    """Two packs merged: one new sealed pack named `pack-<40 hex>` with its index, mode 0644
    (under the usual umask), nothing written outside packs/ (not in the working directory),
    no temporary file, and the two packs and their indexes gone."""
    ids = _sealed_store(tmp_path / "store", 2)
    packs_dir = os.path.join(tmp_path, "store", "packs")
    before = pc.sealed_packs(packs_dir)
    assert len(before) == 2
    files = set(os.listdir(packs_dir))
    held = sorted(raw for _, p in before for raw, _ in PackIndex(p[:-5] + IDX_SUFFIX).entries())
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    old_umask = os.umask(0o022)
    try:
        removed = pc._merge([p for _, p in before], packs_dir)
    finally:
        os.umask(old_umask)
    # written under a temporary name in the packs directory itself, then renamed into place
    src, dst = next((a, b) for a, b in renames if b.endswith(".pack"))
    assert os.path.dirname(src) == packs_dir and os.path.basename(src) == "tmp-" + os.path.basename(dst)
    assert sorted(removed) == sorted(p for _, p in before)
    assert os.listdir(cwd) == []
    gone = {os.path.basename(p)[:-5] + suffix for _, p in before for suffix in (".pack", IDX_SUFFIX)}
    new = set(os.listdir(packs_dir)) - files
    assert set(os.listdir(packs_dir)) == (files - gone) | new
    (pack,) = [n for n in new if n.endswith(".pack")]
    stem = pack[:-len(".pack")]
    assert new == {pack, stem + IDX_SUFFIX}
    assert stem.startswith("pack-") and len(stem) == len("pack-") + 40
    int(stem[len("pack-"):], 16)  # hex
    assert oct(os.stat(os.path.join(packs_dir, pack)).st_mode & 0o777) == oct(0o644)
    index = PackIndex(os.path.join(packs_dir, stem + IDX_SUFFIX))
    assert sorted(raw for raw, _ in index.entries()) == held
    with open(os.path.join(packs_dir, pack), "rb") as f:
        assert f.read(HEADER_SIZE) == HEADER
    with PackStore(tmp_path / "store") as s:
        assert [s.get(i) for i in ids] == [event(n) for n in range(len(ids))]
        assert list(verify(s, workers=1)) == []


def test_a_merge_that_fails_keeps_every_pack_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    """The disk fails while the merged pack is made durable: the error reaches the caller,
    the temporary pack is removed, and every old pack and index stays."""
    _sealed_store(tmp_path, 3)
    packs_dir = os.path.join(tmp_path, "packs")
    files = sorted(os.listdir(packs_dir))
    before = pc.sealed_packs(packs_dir)

    def fdatasync(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(pc.os, "fdatasync", fdatasync)
    with pytest.raises(OSError, match="Input/output error"):
        pc._merge([p for _, p in before], packs_dir)
    assert sorted(os.listdir(packs_dir)) == files
    assert pc.sealed_packs(packs_dir) == before


def test_a_merge_writes_records_once_even_if_two_packs_hold_them(tmp_path):
    """An object in two packs (a crash between a merge's rename and its deletes leaves such
    duplicates) is copied once; the index names it once, at its first copy."""
    _sealed_store(tmp_path, 2)
    packs_dir = os.path.join(tmp_path, "packs")
    (_, a), (_, b) = pc.sealed_packs(packs_dir)
    twin = os.path.join(packs_dir, "pack-" + "7" * 40 + ".pack")
    with open(a, "rb") as src, open(twin, "wb") as dst:
        dst.write(src.read())
    with open(a[:-5] + IDX_SUFFIX, "rb") as src, open(twin[:-5] + IDX_SUFFIX, "wb") as dst:
        dst.write(src.read())
    unique = {raw for p in (a, b) for raw, _ in PackIndex(p[:-5] + IDX_SUFFIX).entries()}
    removed = pc._merge([a, twin, b], packs_dir)
    assert sorted(removed) == sorted([a, twin, b])
    ((size, new),) = pc.sealed_packs(packs_dir)
    entries = PackIndex(new[:-5] + IDX_SUFFIX).entries()
    assert sorted(raw for raw, _ in entries) == sorted(unique)
    records = _records(Pack(new, True))
    assert size == HEADER_SIZE + sum(len(r) for _, r in records)
    assert len(records) == len(unique)


def test_sealed_packs_goes_on_past_a_pack_that_vanishes_while_listed(tmp_path, monkeypatch):
    """A pack deleted between the listing and its stat (another consolidation) is left out;
    the packs after it are still listed."""
    _sealed_store(tmp_path, 3)
    packs_dir = os.path.join(tmp_path, "packs")
    before = pc.sealed_packs(packs_dir)
    real_stat, gone = os.stat, []

    def stat(path, *a, **kw):
        if not gone:  # the first pack looked at has just been deleted
            gone.append(path)
            raise FileNotFoundError(path)
        return real_stat(path, *a, **kw)

    monkeypatch.setattr(pc.os, "stat", stat)
    assert pc.sealed_packs(packs_dir) == [(s, p) for s, p in before if p != gone[0]]


def test_copy_records_writes_in_chunks_of_about_chunk_bytes(one_pack, monkeypatch):
    """Records go out in writes of at least `_CHUNK` bytes each (the last: the rest), so a
    copy holds about one chunk in memory, whatever the pack's size."""
    pack, fd, _ = one_pack
    monkeypatch.setattr(pc, "_CHUNK", 600)
    writes = []
    real = pc._write
    monkeypatch.setattr(pc, "_write", lambda fd, data: writes.append(len(data)) or real(fd, data))
    records = _records(pack)
    biggest = max(len(r) for _, r in records)
    pc.copy_records(pack, fd, HEADER_SIZE, {})
    assert sum(writes) == sum(len(r) for _, r in records)
    assert len(writes) >= sum(writes) // (600 + biggest)
    assert all(600 <= n < 600 + biggest for n in writes[:-1]) and writes[-1] < 600 + biggest


def test_a_merge_finishes_writes_the_os_accepts_only_in_part(tmp_path, monkeypatch):
    ids = _sealed_store(tmp_path, 3)
    packs_dir = os.path.join(tmp_path, "packs")
    before = pc.sealed_packs(packs_dir)
    real_write, sizes = os.write, []

    def write(fd, data):
        n = real_write(fd, bytes(data)[:7])
        sizes.append(n)
        return n

    monkeypatch.setattr(pc.os, "write", write)
    removed = pc._merge([p for _, p in before], packs_dir)
    monkeypatch.undo()
    assert sorted(removed) == sorted(p for _, p in before) and max(sizes) == 7
    with PackStore(tmp_path) as s:
        assert [s.get(i) for i in ids] == [event(n) for n in range(len(ids))]
        assert list(verify(s, workers=1)) == []
