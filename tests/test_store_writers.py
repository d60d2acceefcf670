"""Pack writers at the edges the everyday tests never reach: active packs orphaned by writers
that ran side by side and exited, and writes the OS accepts only in part.

Both used to be reached only from crash tests in child processes (or not at all), so a broken
`seal_orphans` or a short-write loop that gave up early failed no test in this process."""

from __future__ import annotations

import os
import types

import pytest

from ctxstore.store import fsck, packwriter
from ctxstore.store.packstore import PackStore
from tests.test_store_pack import event, put_events


def _packs(path):
    names = sorted(os.listdir(os.path.join(path, "packs")))
    return {n[:-5]: f"{n[:-5]}.idx" in names for n in names if n.endswith(".pack")}


def test_orphaned_active_packs_are_sealed_by_the_next_writer(tmp_path):
    """Two writers at once each write their own active pack (the other's is locked); both
    exit. The next writer takes over the larger one and seals the other, so that readers stop
    scanning it: every object stays readable and fsck is clean."""
    a = PackStore(tmp_path, dict_samples=0)
    b = PackStore(tmp_path, dict_samples=0)
    ids = put_events(a, 30) + put_events(b, 10, start=30)
    a.close()
    b.close()
    before = _packs(tmp_path)
    assert len(before) == 2 and not any(before.values())  # two active packs, no index
    sizes = {n: os.path.getsize(tmp_path / "packs" / f"{n}.pack") for n in before}
    larger, smaller = sorted(sizes, key=sizes.get, reverse=True)
    with PackStore(tmp_path, dict_samples=0) as c:
        ids += put_events(c, 1, start=40)
        assert [p.name for p in c.packs() if not p.sealed] == [larger]
    after = _packs(tmp_path)
    assert after == {larger: False, smaller: True}
    with PackStore(tmp_path) as s:
        assert [s.get(i) for i in ids] == [event(i) for i in range(41)]
        assert list(fsck.verify(s, workers=1)) == []


@pytest.fixture
def short_writes(monkeypatch):
    """The pack writer's os.write accepts at most 7 bytes a call (a pipe, a full disk
    recovering, a signal): the writer must finish every record itself."""
    calls = []

    def write(fd, data):
        n = os.write(fd, bytes(data)[:7])
        calls.append(n)
        return n

    proxy = types.SimpleNamespace(**{k: getattr(os, k) for k in dir(os) if not k.startswith("__")})
    proxy.write = write
    monkeypatch.setattr(packwriter, "os", proxy)
    return calls


@pytest.mark.parametrize("in_transaction", [False, True], ids=["one-by-one", "buffered"])
def test_short_writes_are_finished(tmp_path, short_writes, in_transaction):
    with PackStore(tmp_path, dict_samples=0, durability="never") as s:
        if in_transaction:
            s.begin_transaction()  # records are buffered and written together
        ids = put_events(s, 20)
        s.flush()
    assert short_writes and max(short_writes) == 7 and len(short_writes) > 20
    with PackStore(tmp_path) as s:
        assert [s.get(i) for i in ids] == [event(i) for i in range(20)]
        assert list(fsck.verify(s, workers=1)) == []
