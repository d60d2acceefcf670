"""Issue 30 item 10: gc's `objects_removed` counts objects, not records. Two processes that
store one object at once leave two records of it (in two packs); when it becomes garbage,
one object leaves the store and gc must say 1. store/repack.py used to add up
the dead records of each pack, so it said 2 (and tests/test_gc.py's concurrent re-import
test had to bound the count); it counts distinct ids now."""

from __future__ import annotations

import pytest

from ctxstore import codec
from ctxstore.maintenance import gc as pm
from ctxstore.repo import Repository


def _two_records_of_one_garbage_object(repo) -> set[str]:
    """A blob nothing names, stored as a record in each of two sealed packs (what two
    writers racing on one object leave: the second did not see the first's record), and the
    other blob that started the second pack; returns both ids, all of it garbage."""
    store = repo.objects
    oid, body = codec.encode_object("blob", b"written by two processes at once")
    store._store_body(oid, "blob", body)
    store.flush()
    store.seal_active()
    other = store.put("blob", b"the second writer's own object")  # starts the second pack
    store._store_body(oid, "blob", body)  # the racing writer's copy
    store.flush()
    store.seal_active()
    records = sum(1 for pack in store.packs() for i in pack.ids() if i == oid)
    assert records == 2, records  # the case to count: one object, two records
    return {oid, other}


@pytest.mark.parametrize("dry_run", [False, True])
def test_objects_removed_counts_each_object_once(tmp_path, dry_run):
    repo = Repository.init(tmp_path)
    try:
        garbage = _two_records_of_one_garbage_object(repo)
        before = set(repo.objects)
        res = pm.gc(repo, prune="now", dry_run=dry_run)
        gone = garbage | set(res.operations_expired)
        if not dry_run:
            assert before - set(repo.objects) == gone  # what left the store: 2 blobs, 1 record each
        assert res.objects_removed == len(gone), res
    finally:
        repo.close()
