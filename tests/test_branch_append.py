"""`BranchAppend.add`/`extend` and the transaction's generation cache, checked call by call.

The bulk path skips the store's presence check for an event whose parent the store lacked a
moment ago (its id names that parent, so it cannot be stored yet). Getting that chain wrong is
invisible to a reader while it errs towards checking (only slower) and writes a duplicate
record when it errs the other way; so these tests watch which store call each event takes,
and count records. The generation cache is bounded (an import writes millions of events) and
must answer for what the transaction just wrote without reading the store."""

from __future__ import annotations

import pytest

from ctxstore.repo import Repository
from ctxstore.repo import transaction as txmod
from tests.test_bulk_append import _records, _session

TS = "2026-01-01T00:00:00.000Z"


def _spy(monkeypatch, store):
    """Record, per event put, which store call it took: "new" (checked) or "absent" (not)."""
    calls: list[tuple[str, str]] = []
    put_new, put_absent = store.put_new, store.put_absent

    def new(obj_id, type_name, body):
        calls.append(("new", obj_id))
        return put_new(obj_id, type_name, body)

    def absent(obj_id, type_name, body):
        calls.append(("absent", obj_id))
        return put_absent(obj_id, type_name, body)

    monkeypatch.setattr(store, "put_new", new)
    monkeypatch.setattr(store, "put_absent", absent)
    return calls


def _maps(n, start=0):
    return [{"type": "x.test.Step", "actor": "agent", "payload": {"i": i}, "ts": TS,
             "causality": {}} for i in range(start, start + n)]


def _add(tx, br, i):
    return br.add(tx.event_fields("x.test.Step", "agent", {"i": i}, (br.tip,), None, TS))


def test_add_checks_only_until_an_event_proves_new(tmp_path, monkeypatch):
    repo = _session(tmp_path, "r")
    calls = _spy(monkeypatch, repo.objects)
    with repo.transaction(message="adds") as tx:
        br = tx.branch()
        ids = [_add(tx, br, i) for i in range(4)]
    assert calls == [("new", ids[0]), ("absent", ids[1]), ("absent", ids[2]),
                     ("absent", ids[3])]
    repo.close()


def test_add_of_events_the_store_has_keeps_checking_and_writes_no_duplicate(tmp_path,
                                                                           monkeypatch):
    """The same events on the same base again (a reset, then the same appends): each one is
    present, so each is checked; then the first new one ends the checks."""
    repo = _session(tmp_path, "r")
    base = repo.current().tip
    branch = repo.head_branch()
    with repo.transaction(message="first") as tx:
        br = tx.branch()
        first = [_add(tx, br, i) for i in range(3)]
    with repo.transaction(message="reset") as tx:
        tx.set_ref(branch, base)
    calls = _spy(monkeypatch, repo.objects)
    with repo.transaction(message="again") as tx:
        br = tx.branch()
        again = [_add(tx, br, i) for i in range(5)]
    assert again[:3] == first
    assert [c for c, _ in calls] == ["new", "new", "new", "new", "absent"]
    records = _records(repo.objects)
    assert len(records) == len(set(records))
    repo.close()


def test_extend_then_add_continue_the_chain(tmp_path, monkeypatch):
    """After an extend whose events were new, the next add is not checked; after an extend
    whose events were all present, it is (and the record is not written twice)."""
    repo = _session(tmp_path, "r")
    base = repo.current().tip
    branch = repo.head_branch()
    calls = _spy(monkeypatch, repo.objects)
    with repo.transaction(message="bulk") as tx:
        br = tx.branch()
        br.extend(_maps(3))
        ids = list(br.appended)
        last = _add(tx, br, 99)
    assert calls == [("new", ids[0]), ("absent", ids[1]), ("absent", ids[2]), ("absent", last)]
    assert br.appended == [*ids, last]
    assert br.fields[:3] == [{**m, "parents": [p], "generation": g}
                             for m, p, g in zip(_maps(3), [base, *ids[:2]], [2, 3, 4], strict=True)]

    with repo.transaction(message="reset") as tx:
        tx.set_ref(branch, base)
    calls.clear()
    with repo.transaction(message="bulk again") as tx:
        br = tx.branch()
        br.extend(_maps(3))  # all present
        again = _add(tx, br, 99)  # present too: must be checked
    assert again == last
    assert [c for c, _ in calls] == ["new", "new", "new", "new"]
    records = _records(repo.objects)
    assert len(records) == len(set(records))
    repo.close()


def test_add_then_extend_checks_nothing_after_the_first_new_event(tmp_path, monkeypatch):
    repo = _session(tmp_path, "r")
    calls = _spy(monkeypatch, repo.objects)
    with repo.transaction(message="one, then bulk") as tx:
        br = tx.branch()
        first = _add(tx, br, 0)
        br.extend(_maps(3, start=1))
        ids = list(br.appended)
    assert ids[0] == first
    assert calls == [("new", first), *[("absent", i) for i in ids[1:]]]
    repo.close()


def test_extend_on_a_branch_of_no_session_marks_nothing(tmp_path):
    """Refs outside refs/sessions/ have no session to mark, however many generations pass."""
    repo = _session(tmp_path, "r")
    tip = repo.current().tip
    with repo.transaction(message="scratch") as tx:
        tx.create_ref("refs/heads/scratch", tip)
    with repo.transaction(message="bulk", ref="refs/heads/scratch") as tx:
        br = tx.branch()
        assert br.session is None
        br.extend(_maps(txmod.SESSION_MARK_EVERY + 10))
        end = br.tip
    assert repo.graph.generation(end) == txmod.SESSION_MARK_EVERY + 11
    fresh = Repository.open(tmp_path / "r")
    marked = end
    for _ in range(11):  # back to generation SESSION_MARK_EVERY
        marked = fresh.objects.get(marked).parents[0]
    assert fresh.graph.generation(marked) == txmod.SESSION_MARK_EVERY
    assert fresh.session_marks.get(marked) is None
    assert not fresh.session_marks._path(marked).exists()  # no file either (not even "None")
    fresh.close()
    repo.close()


def test_extend_answers_generations_without_reading_the_store(tmp_path, monkeypatch):
    repo = _session(tmp_path, "r")
    with repo.transaction(message="bulk") as tx:
        br = tx.branch()
        br.extend(_maps(5))

        def no_reads(eid):
            raise AssertionError(f"read the store for {eid}")

        monkeypatch.setattr(repo.graph, "generation", no_reads)
        assert [tx.generation(e) for e in br.appended] == [2, 3, 4, 5, 6]
        br.extend(_maps(2, start=5))  # its first generation comes from the cache too
        assert tx.generation(br.tip) == 8
    repo.close()


@pytest.mark.parametrize("how", ["append", "extend"])
def test_generation_cache_keeps_the_newest_half_once_over(tmp_path, monkeypatch, how):
    """At most GENERATION_CACHE entries; once over, the newest GENERATION_CACHE // 2 stay."""
    monkeypatch.setattr(txmod, "GENERATION_CACHE", 8)
    repo = _session(tmp_path, "r")
    with repo.transaction(message="many") as tx:
        br = tx.branch()
        if how == "append":
            for i in range(8):
                _add(tx, br, i)
            assert list(tx._gen) == br.appended  # exactly at the bound: all kept
            _add(tx, br, 8)
        else:
            br.extend(_maps(8))
            assert list(tx._gen) == br.appended
            br.extend(_maps(1, start=8))
        assert list(tx._gen) == br.appended[-4:]  # over: the newest half
        assert [tx._gen[e] for e in br.appended[-4:]] == [7, 8, 9, 10]
        assert tx.generation(br.appended[0]) == 2  # forgotten ones come from the store
    repo.close()
