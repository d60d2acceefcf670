"""A reader sees what another process committed, also when packs vanish under it (issue 30).

Eight `ctx append --batch` writers on one branch used to lose 2-3 writers to "no object <id>":
the rebase read the tip another writer had just committed, and the reader, meeting a sealed
pack that consolidation had removed before it mapped it, re-listed the directory and gave up
without reading the new tails of the other writers' active packs. The multi-process race is
in tests/test_concurrency.py; this is the same sequence made deterministic in one process."""

from __future__ import annotations

import os

from ctxstore.store.packconsolidate import consolidate
from ctxstore.store.packstore import PackStore
from tests.test_store_pack import event, put_events


def _sealed(path) -> list[str]:
    names = os.listdir(os.path.join(path, "packs"))
    return sorted(n for n in names if n.endswith(".idx"))


def test_a_reader_finds_a_new_tail_record_after_a_pack_vanished(tmp_path):
    # three sealed packs (written one writer at a time) and a fourth writer's active pack
    for start in (0, 100, 200):
        w = PackStore(tmp_path, dict_samples=0, seal_size=1024)
        put_events(w, 40, start=start)
        w.close()
    assert len(_sealed(tmp_path)) >= 3
    writer = PackStore(tmp_path, dict_samples=0)
    first = writer.put("value", event(1000))
    writer.flush()
    reader = PackStore(tmp_path, dict_samples=0)
    assert reader.get(first) == event(1000)  # maps the sealed indexes, scans the active tail
    other = PackStore(tmp_path, dict_samples=0, seal_size=1024, max_packs=100)  # more sealed
    put_events(other, 40, start=300)
    other.close()
    reader._list_packs()  # packs, that the reader lists (as after a transaction), never maps
    merged = consolidate(os.path.join(tmp_path, "packs"), 1)  # and that vanishes
    assert merged
    later = writer.put("value", event(1001))
    writer.flush()  # committed: a ref may name it now
    assert reader.get(later) == event(1001)
    reader.close()
    writer.close()
