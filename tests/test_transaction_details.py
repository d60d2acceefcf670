"""What the transaction and operation-log contracts leave implicit, pinned down (each check
kills mutants that survived `python -m tests.mutation transaction`): the API's messages,
which branch an append goes to, rebases that keep extra parents, adopted appends (the
LangGraph saver's path), roll-forward that never logs a move twice, and the operation log's
lookups, ages and undo/restore results."""

from __future__ import annotations

import pytest

from ctxstore.errors import AmbiguousId, BadRevision, CorruptStore, InvalidInput, RefConflict
from ctxstore.objects import Event, Operation
from ctxstore.porcelain import branches as pb
from ctxstore.porcelain import sessions as ps
from ctxstore.refs import HEAD, branch_ref
from ctxstore.repo import Repository, operations
from ctxstore.repo.transaction import Journal, Move


@pytest.fixture
def repo(tmp_path):
    r = Repository.init(tmp_path, durability="never")
    yield r
    r.close()


@pytest.fixture
def session(repo):
    sid, root = repo.new_session(title="t")
    return sid, root, branch_ref(sid, "main")


def _prompt(text="hi"):
    return ("UserPromptSubmitted", "user", {"text": text})


# --- which branch, and what the API refuses ---------------------------------------------------

def test_append_goes_to_the_transaction_branch_else_heads(repo, session):
    sid, root, main = session
    pb.create_branch(repo, "side")
    side = branch_ref(sid, "side")
    with repo.transaction(side) as tx:
        eid = tx.append(*_prompt())
        assert tx.appended == [eid] and tx.base == root and tx.tip == eid
        assert tx.read(side) == eid and tx.read(main) == root
    assert repo.refs.read(side) == eid and repo.refs.read(main) == root
    with repo.transaction() as tx:
        e2 = tx.append(*_prompt())
        e3 = tx.append(*_prompt("again"), ref=side)
    assert repo.refs.read(main) == e2 and repo.refs.read(side) == e3
    ev = repo.objects.get_typed(e3, Event)
    with repo.transaction() as tx:  # append_event goes to the named branch, not HEAD's
        made = repo.make_event("UserPromptSubmitted", "user", {"text": "x"}, (e3,))
        e4 = tx.append_event(made, ref=side)
    assert repo.refs.read(side) == e4 and repo.refs.read(main) == e2
    with pytest.raises(InvalidInput, match="^an appended event must name the branch tip as a parent$"):
        with repo.transaction() as tx:
            tx.append_event(ev)


def test_appends_to_a_ref_outside_the_sessions(repo, session):
    _sid, root, _main = session
    other = "refs/langgraph/thread"
    with repo.transaction() as tx:
        tx.create_ref(other, root)
    with repo.transaction(other) as tx:
        eid = tx.append(*_prompt())
    assert repo.refs.read(other) == eid


def test_transaction_api_messages(repo, session):
    sid, root, main = session
    tx = repo.transaction()
    tx.set_ref(main, root)
    with pytest.raises(InvalidInput, match=f"^{main}: a transaction cannot both move and append to a ref$"):
        tx.append(*_prompt())
    with pytest.raises(BadRevision, match=f"^branch {branch_ref(sid, 'nope')} does not exist$"):
        tx.branch(branch_ref(sid, "nope"))
    with pytest.raises(InvalidInput, match="^set_head needs exactly one of ref and detached$"):
        tx.set_head()
    with pytest.raises(InvalidInput, match="^set_head needs exactly one of ref and detached$"):
        tx.set_head(ref=main, detached=root)
    with pytest.raises(InvalidInput, match=f"^{main}: already part of this transaction$"):
        tx.adopt(main, root, [])
    tx.abort()
    with pytest.raises(InvalidInput, match="^the transaction was aborted$"):
        tx.commit()


def test_set_head_defaults_and_detaching(repo, session):
    _sid, root, main = session
    with repo.transaction() as tx:
        tx.set_head(detached=root)
    assert repo.refs.read_head_value() == root
    assert repo.refs.reflog(HEAD)[-1].message == ""  # no message given, none made up
    with repo.transaction(message="back") as tx:
        tx.set_head(ref=main)
        tx.set_head(ref=main, message="twice")  # the second call keeps the first's expectation
    assert repo.refs.read_head_value() == f"ref: {main}"
    assert repo.refs.reflog(HEAD)[-1].message == "twice"


def test_head_reflog_names_the_events_of_a_checkout(repo, session):
    sid, root, main = session
    pb.create_branch(repo, "side")
    e1 = ps.append(repo, *_prompt())
    side = branch_ref(sid, "side")
    with repo.transaction(message="co") as tx:
        tx.set_head(ref=side)
    last = repo.refs.reflog(HEAD)[-1]
    assert (last.old, last.new, last.message) == (e1, root, "co")
    with repo.transaction(message="new branch and checkout") as tx:
        tx.create_ref(branch_ref(sid, "third"), e1)
        tx.set_head(ref=branch_ref(sid, "third"))
    last = repo.refs.reflog(HEAD)[-1]
    assert (last.old, last.new) == (root, e1)
    assert main != side


def test_set_head_with_a_bad_branch_name_is_refused(repo, session):
    from ctxstore.errors import InvalidRefName

    tx = repo.transaction()
    with pytest.raises(InvalidRefName):
        tx.set_head(ref="refs/sessions/x/../y")
    tx.abort()


def test_a_branch_without_rebase_conflicts_when_it_moved(repo, session, tmp_path):
    _sid, _root, main = session
    for rebase_arg in ({"rebase": False}, {}):
        tx = repo.transaction(rebase=True)
        br = tx.branch(main, **rebase_arg)
        br.add(tx.event_fields(*_prompt(), parents=(br.tip,)))
        other = Repository.open(tmp_path)
        ps.append(other, *_prompt("meanwhile"))
        other.close()
        if rebase_arg:
            with pytest.raises(RefConflict) as err:
                tx.commit()
            assert err.value.details == {"ref": main, "expected": br.base,
                                         "actual": repo.refs.read(main)}
        else:
            tx.commit()
            assert br.rebased


def test_an_append_to_a_branch_deleted_meanwhile_is_a_conflict(repo, session, tmp_path):
    sid, root, _main = session
    pb.create_branch(repo, "side")
    side = branch_ref(sid, "side")
    tx = repo.transaction(side)
    tx.append(*_prompt())
    other = Repository.open(tmp_path)
    with other.transaction() as otx:
        otx.delete_ref(side, message="gone")
    assert other.refs.reflog(side)[-1].message == "gone"
    other.close()
    with pytest.raises(RefConflict):
        tx.commit()
    assert repo.refs.read(side) is None


def test_a_rebase_keeps_extra_parents_and_renumbers_generations(repo, session, tmp_path):
    sid, root, main = session
    pb.create_branch(repo, "side")
    side_tip = ps.append(repo, *_prompt("on main"))  # main moves; side stays at root
    side = branch_ref(sid, "side")
    with repo.transaction(side) as tx:
        s1 = tx.append(*_prompt("on side"))
    tx = repo.transaction(main)
    merge = tx.append("UserPromptSubmitted", "user", {"text": "merge"}, extra_parents=(s1,))
    after = tx.append(*_prompt("after"))
    other = Repository.open(tmp_path)
    moved = ps.append(other, *_prompt("meanwhile"))
    other.close()
    tx.commit()
    new_merge, new_after = tx.appended
    assert (new_merge, new_after) != (merge, after)
    m = repo.objects.get_typed(new_merge, Event)
    a = repo.objects.get_typed(new_after, Event)
    assert m.parents == (moved, s1) and a.parents == (new_merge,)
    assert m.generation == 4 and a.generation == 5  # root 1, side_tip 2, moved 3
    assert repo.refs.read(main) == new_after and side_tip != moved
    assert repo.refs.reflog(main)[-1].old == moved  # the move starts at the new tip


# --- events stored without a branch -------------------------------------------------------------

def test_put_new_event_tells_whether_the_store_lacked_it_and_marks_sessions(repo, session):
    sid, root, _main = session
    with repo.transaction() as tx:
        fields = tx.event_fields(*_prompt(), parents=(root,))
        fields["generation"] = 256  # a session mark is due at every 256th generation
        eid, new = tx.put_new_event(fields, sid)
        assert (eid, new) == (tx.put_new_event(fields, sid)[0], True)
        assert tx.put_new_event(fields, sid) == (eid, False)
        assert tx.generation(eid) == 256
    assert repo.objects.get_typed(eid, Event).payload == {"text": "hi"}
    assert repo.session_marks.get(eid) == sid


# --- adopted appends (group-committing writers) ------------------------------------------------

def _stored_chain(repo, base, n):
    """n events chained on base, stored but named by no ref (as the LangGraph saver does)."""
    out = []
    with repo.transaction() as tx:
        parent = base
        for i in range(n):
            eid = tx.event("UserPromptSubmitted", "user", {"text": f"a{i}"}, (parent,))
            out.append((eid, repo.objects.get_typed(eid, Event)))
            parent = eid
    return out


def test_adopt_moves_the_branch_to_the_adopted_tip(repo, session):
    _sid, root, main = session
    chain = _stored_chain(repo, root, 2)
    with repo.transaction(message="saver") as tx:
        br = tx.adopt(main, root, chain, message="saver: 2 event(s)")
        assert br.appended == [e for e, _ in chain] and br.tip == chain[-1][0]
        assert tx.generation(chain[-1][0]) == 3
    assert not br.rebased and not br.dropped
    assert repo.refs.read(main) == chain[-1][0]
    assert repo.refs.reflog(main)[-1].message == "saver: 2 event(s)"


def test_adopted_appends_rebase_onto_a_moved_branch(repo, session, tmp_path):
    _sid, root, main = session
    chain = _stored_chain(repo, root, 2)
    moved = ps.append(repo, *_prompt("meanwhile"))
    with repo.transaction() as tx:
        br = tx.adopt(main, root, chain)
    assert br.rebased and not br.dropped
    first, second = (repo.objects.get_typed(e, Event) for e in br.appended)
    assert first.parents == (moved,) and second.parents == (br.appended[0],)
    assert [e.payload["text"] for e in (first, second)] == ["a0", "a1"]
    assert br.fields[0]["parents"] == [moved]
    assert repo.refs.read(main) == br.appended[-1]


def test_adopted_appends_to_a_deleted_branch_are_dropped_only_when_asked(repo, session):
    sid, root, _main = session
    pb.create_branch(repo, "side")
    side = branch_ref(sid, "side")
    chain = _stored_chain(repo, root, 1)
    with repo.transaction() as tx:
        tx.delete_ref(side)
    with repo.transaction() as tx:
        br = tx.adopt(side, root, chain, drop_if_deleted=True)
    assert br.dropped and repo.refs.read(side) is None
    with pytest.raises(RefConflict):
        with repo.transaction() as tx:
            tx.adopt(side, root, chain)


# --- the journal and roll-forward --------------------------------------------------------------

def test_a_journal_of_another_version_is_refused_naming_it(tmp_path):
    data = Journal("a" * 64, 1, "ctx", (Move("HEAD", None, "x", "m"),)).encode()
    with pytest.raises(CorruptStore) as err:
        Journal.decode(data.replace(b'"version":1', b'"version":2'))
    assert str(err.value) == ("journal: not a transaction journal (unknown journal version 2); "
                              "the moves of the interrupted transaction cannot be replayed")
    with pytest.raises(CorruptStore, match=r"^x/journal: not a transaction journal"):
        Journal.decode(b"\xff", where="x/journal")


def test_roll_forward_does_not_log_a_move_twice(tmp_path):
    """A process died after writing a move's reflog line but before the ref: replaying the
    journal writes the ref and not the line again, however long the reflog already is."""
    repo = Repository.init(tmp_path, durability="never")
    sid, root = repo.new_session(title="t")
    main = branch_ref(sid, "main")
    e1 = ps.append(repo, *_prompt("one"))
    with repo.transaction() as tx:  # stored, not yet named
        e2 = tx.event("UserPromptSubmitted", "user", {"text": "two"}, (e1,))
    refs = repo.refs
    journal = Journal("f" * 64, 123, "ctx", (Move(main, e1, e2, "append: 1 event(s)"),))
    refs.write_journal(journal.encode())
    from ctxstore.refs import ReflogEntry

    entry = ReflogEntry(e1, e2, 123, "ctx", "append: 1 event(s)")
    refs.append_reflog(main, entry, fsync=False)  # the crash came after this line
    before_main, before_head = len(refs.reflog(main)), len(refs.reflog(HEAD))
    repo.close()
    repo = Repository.open(tmp_path)
    assert repo.refs.read(main) == e2 and not repo.refs.has_journal()
    assert len(repo.refs.reflog(main)) == before_main  # not written twice
    assert len(repo.refs.reflog(HEAD)) == before_head + 1  # HEAD's line was not written yet
    assert repo.refs.read_op_head() == "f" * 64
    repo.close()


# --- the operation log ------------------------------------------------------------------------

def test_logged_operation_to_dict_carries_its_id(repo, session):
    lo = next(operations.walk(repo))
    assert lo.to_dict() == {"id": lo.id, **lo.op.to_dict()}


def test_walk_from_an_older_operation(repo, session):
    ps.append(repo, *_prompt())
    newest, older = list(operations.walk(repo))[:2]
    assert [lo.id for lo in operations.walk(repo, older.id)] == [older.id]
    assert newest.op.parents == (older.id,)


def _chain_ops(repo, times):
    """Operations with the given times, oldest first, chained on op-head; returns their ids."""
    ids = []
    parent = repo.refs.read_op_head()
    for t in times:
        op = Operation(parents=(parent,) if parent else (), time=t, user="u", host="h",
                       command="c", description="d", changes=())
        parent = repo.objects.put_object(op)
        ids.append(parent)
    repo.objects.flush()
    repo.refs.write_op_head(parent, fsync=False)
    return ids


def test_operations_split_by_age_at_the_cutoff(repo):
    old, exact, young, odd = _chain_ops(repo, ["2020-01-01T00:00:00.000Z", "2021-01-01T00:00:00.000Z",
                                               "2022-01-01T00:00:00.000Z", "not a time"])
    from datetime import datetime

    cutoff = datetime.fromisoformat("2021-01-01T00:00:00+00:00").timestamp()
    young_ids, old_ops = operations.split_by_age(repo, cutoff)
    assert young_ids == [odd, young, exact]  # at the cutoff is young; an unreadable time too
    assert [lo.id for lo in old_ops] == [old]
    assert operations.split_by_age(repo, None) == ([odd, young, exact, old], [])
    assert operations.split_by_age(repo, float("inf"))[0] == [odd]


def test_truncated_at_names_the_first_missing_operation(repo):
    assert operations.truncated_at(repo) is None  # no log at all
    gone = "e" * 64
    repo.refs.write_op_head(gone, fsync=False)
    assert operations.truncated_at(repo) == gone  # even the newest is gone
    (kept,) = _chain_ops(repo, ["2022-01-01T00:00:00.000Z"])
    assert operations.truncated_at(repo) == gone
    assert [lo.id for lo in operations.walk(repo)] == [kept]


def test_truncated_at_is_none_for_a_whole_log(repo, session):
    assert operations.truncated_at(repo) is None


def test_resolve_operations_by_position_and_prefix(repo, session):
    ps.append(repo, *_prompt())
    ps.append(repo, *_prompt("2"))
    ids = [lo.id for lo in operations.walk(repo)]
    assert operations.resolve(repo, "@").id == ids[0]
    assert operations.resolve(repo, " @-2 ").id == ids[2]
    assert operations.resolve(repo, ids[1][:4].upper()).id == ids[1]
    with pytest.raises(BadRevision, match=r"^cannot read operation '@-x': use an id, @ or @-N$"):
        operations.resolve(repo, "@-x")
    with pytest.raises(BadRevision, match=r"^no operation @-3: the log is shorter$"):
        operations.resolve(repo, "@-3")
    for bad in (ids[0][:3], "zzzz", "@x"):
        with pytest.raises(BadRevision, match=f"^no operation '{bad}': give at least 4 hex digits of its id$"):
            operations.resolve(repo, bad)
    with pytest.raises(BadRevision, match="^no operation 0000 in the operation log$"):
        operations.resolve(repo, "0000")


def test_an_ambiguous_operation_prefix_lists_the_candidates(repo):
    seen: dict[str, list[str]] = {}
    while True:  # operations until two share their first 4 hex digits (~300 on average)
        (oid,) = _chain_ops(repo, ["2022-01-01T00:00:00.000Z"])  # each has a new parent
        seen.setdefault(oid[:4], []).append(oid)
        if len(seen[oid[:4]]) == 2:
            break
    prefix = oid[:4]
    newest_first = list(reversed(seen[prefix]))
    with pytest.raises(AmbiguousId) as err:
        operations.resolve(repo, prefix)
    assert str(err.value) == (f"operation prefix {prefix} is ambiguous: "
                              f"{newest_first[0][:12]}, {newest_first[1][:12]}")


def test_undo_and_restore_report_what_they_did(repo, session, tmp_path):
    sid, root, main = session
    with pytest.raises(BadRevision, match="^nothing to undo: the operation log is empty$"):
        operations.undo(Repository.init(tmp_path / "empty", durability="never"))
    e1 = ps.append(repo, *_prompt())
    appended = next(operations.walk(repo))
    new_id, undone = operations.undo(repo, command="ctx undo")
    assert undone.id == appended.id and new_id == operations.op_head(repo)
    lo = next(operations.walk(repo))
    msg = f"undo: operation {appended.id[:12]} ({appended.op.description})"
    assert (lo.op.command, lo.op.description) == ("ctx undo", msg)
    assert repo.refs.reflog(main)[-1].message == msg and repo.refs.read(main) == root

    first = list(operations.walk(repo))[-1]
    pb.create_branch(repo, "side")
    with repo.transaction() as tx:
        tx.set_head(detached=root)
    after_first = operations.refs_after(repo, first.id)
    assert after_first == {main: root, branch_ref(sid, "side"): None, HEAD: f"ref: {main}"}
    op_id, diff = operations.restore(repo, first.id, command="ctx op restore")
    assert list(diff) == [branch_ref(sid, "side"), HEAD]  # refs sorted, HEAD last
    assert diff[HEAD] == (root, f"ref: {main}")
    lo = next(operations.walk(repo))
    msg = f"restore: to operation {first.id[:12]}"
    assert op_id == lo.id and (lo.op.command, lo.op.description) == ("ctx op restore",
                                                                     f"{msg} (2 refs)")
    assert repo.refs.reflog(HEAD)[-1].message == msg
    with pytest.raises(BadRevision, match=f"^operation {'0' * 12} is not in the operation log$"):
        operations.refs_after(repo, "0" * 64)
    assert e1


def test_roll_forward_leaves_refs_moved_by_outside_writers_and_logs_head_once(tmp_path):
    repo = Repository.init(tmp_path, durability="never")
    sid, root = repo.new_session(title="t")
    main = branch_ref(sid, "main")
    pb.create_branch(repo, "side")
    side = branch_ref(sid, "side")
    e1 = ps.append(repo, *_prompt("one"))
    with repo.transaction() as tx:
        e2 = tx.event("UserPromptSubmitted", "user", {"text": "two"}, (e1,))
    repo.refs.set_if_equals(side, root, e1)  # a writer outside the transaction moved it
    journal = Journal("f" * 64, 123, "ctx", (Move(main, e1, e2, "m"), Move(side, root, e2, "s")))
    repo.refs.write_journal(journal.encode())
    head_log, side_log = repo.refs.reflog(HEAD), repo.refs.reflog(side)
    repo.close()
    repo = Repository.open(tmp_path)
    assert repo.refs.read(main) == e2 and repo.refs.read(side) == e1
    assert repo.refs.reflog(side) == side_log
    new_head = repo.refs.reflog(HEAD)[len(head_log):]
    assert [(e.old, e.new, e.ts_ms, e.message) for e in new_head] == [(e1, e2, 123, "m")]
    repo.close()


def test_moving_a_branch_head_does_not_name_leaves_heads_reflog_alone(repo, session):
    sid, root, _main = session
    pb.create_branch(repo, "side")
    head_log = repo.refs.reflog(HEAD)
    with repo.transaction(branch_ref(sid, "side")) as tx:
        tx.append(*_prompt())
    assert repo.refs.reflog(HEAD) == head_log
    with repo.transaction() as tx:
        tx.set_head(detached=root, message="detach")
    assert len(repo.refs.reflog(HEAD)) == len(head_log) + 1


def test_the_operation_user_falls_back_to_the_uid(monkeypatch):
    import getpass
    import os

    from ctxstore.repo.transaction import default_user

    def no_user():
        raise KeyError("getpwuid(): uid not found")

    monkeypatch.setattr(getpass, "getuser", no_user)
    assert default_user() == str(os.getuid())


# --- new sessions -------------------------------------------------------------------------------

def test_new_session_records_every_argument(repo):
    with repo.transaction(message="imp") as tx:
        sid, root = tx.new_session(
            "Title", "the goal", config={"model": "m"}, ts="2026-01-02T03:04:05.000Z",
            kind="import", parent_session="p" * 64, spawn_event="e" * 64,
            origin={"format": "claude-code", "id": "x"}, nonce="n1", cwd="/w", repo_root="/r",
            branch="imported", checkout=False)
    s = repo.session(sid)
    assert (s.title, s.created, s.cwd, s.repo_root, s.parent_session, s.spawn_event, s.kind,
            s.nonce) == ("Title", "2026-01-02T03:04:05.000Z", "/w", "/r", "p" * 64, "e" * 64,
                         "import", "n1")
    assert dict(s.origin) == {"format": "claude-code", "id": "x"} and s.config["model"] == "m"
    ev = repo.objects.get_typed(root, Event)
    assert (ev.type, ev.actor, ev.parents, ev.generation, ev.ts) == (
        "SessionStarted", "system", (), 1, "2026-01-02T03:04:05.000Z")
    assert ev.payload == {"session": sid, "title": "Title", "goal": "the goal"}
    ref = branch_ref(sid, "imported")
    assert repo.refs.read(ref) == root and repo.refs.read_head_value() is None  # no checkout
    assert repo.refs.reflog(ref)[-1].message == "session: created"


def test_new_session_defaults(repo):
    with repo.transaction() as tx:
        sid, root = tx.new_session()
    s = repo.session(sid)
    assert (s.title, s.cwd, s.repo_root, s.parent_session, s.spawn_event, s.kind) == (
        "", "", "", "", "", "main")
    assert dict(s.origin) == {} and len(s.nonce) == 16  # 8 random bytes, hex
    assert repo.objects.get_typed(root, Event).payload == {"session": sid}
    main = branch_ref(sid, "main")
    assert repo.refs.read_head_value() == f"ref: {main}"
    assert repo.refs.reflog(HEAD)[-1].message == f"checkout: new session {sid[:12]}"
    assert repo.refs.reflog(main)[-1].actor == "ctx"
    lo = next(operations.walk(repo))
    assert lo.op.command == "api: " and lo.op.description == "session: created (2 refs)"
    assert repo.new_session()[0] != sid  # no nonce: a new session every time


def test_new_session_with_a_nonce_is_the_same_session_and_keeps_its_branch(repo):
    sid, root = repo.new_session("t", nonce="same", ts="2026-01-01T00:00:00.000Z")
    main = branch_ref(sid, "main")
    with repo.transaction(main) as tx:
        tip = tx.append(*_prompt())
    assert repo.new_session("t", nonce="same", ts="2026-01-01T00:00:00.000Z") == (sid, root)
    assert repo.refs.read(main) == tip  # it descends from the root: left as it is
    repo.refs.set_if_equals(main, tip, repo.new_session("other")[1])  # now it does not
    with pytest.raises(RefConflict, match=f"^ref {main} exists and does not descend from this "
                                          f"session's root$"):
        repo.new_session("t", nonce="same", ts="2026-01-01T00:00:00.000Z")


# --- what a transaction records -------------------------------------------------------------------

def test_a_transaction_records_actor_command_and_messages(repo, session):
    sid, root, main = session
    with repo.transaction(actor="agent-7", message="work", command="tool: x") as tx:
        tx.append(*_prompt())
        tx.create_ref(branch_ref(sid, "b"), root)
        tx.set_ref(branch_ref(sid, "c"), root, expected=None)
        tx.set_ref(branch_ref(sid, "c"), root, message="c again")  # expects what the first did
    lo = next(operations.walk(repo))
    assert (lo.op.command, lo.op.description) == ("tool: x", "work (3 refs)")
    assert [(e.actor, e.message) for e in repo.refs.reflog(main)[-1:]] == [
        ("agent-7", "work: 1 event(s)")]
    assert repo.refs.reflog(branch_ref(sid, "b"))[-1].message == "work"
    assert repo.refs.reflog(branch_ref(sid, "c"))[-1].message == "c again"
    with repo.transaction() as tx:
        tx.delete_ref(branch_ref(sid, "b"))
    assert repo.refs.reflog(branch_ref(sid, "b"))[-1].message == ""
    with repo.transaction() as tx:
        pass
    assert tx.commit() is None and tx.op_id is None  # nothing moved: no operation


def test_set_ref_refuses_head_and_refs_it_appends_to(repo, session):
    _sid, root, main = session
    tx = repo.transaction()
    with pytest.raises(InvalidInput, match="^use set_head to move HEAD$"):
        tx.set_ref(HEAD, root)
    tx.append(*_prompt())
    with pytest.raises(InvalidInput, match=f"^{main}: a transaction cannot both append to and move a ref$"):
        tx.set_ref(main, root)
    tx.abort()


def test_events_record_actor_causality_and_session_marks(repo, session):
    sid, root, _main = session
    with repo.transaction() as tx:
        fields = tx.event_fields("UserPromptSubmitted", "user", {"text": "x"}, (root,),
                                 {"message_id": "m"})
        assert fields["generation"] == 2
        eid = tx.event("UserPromptSubmitted", "me", {"text": "y"}, (root,), {"message_id": "m"},
                       session=sid)
        deep = dict(fields, generation=512)
        marked = tx.put_event(deep, sid)
        unmarked = tx.put_event(dict(fields, generation=511), sid)
        no_session = tx.put_event(dict(fields, generation=768))
    ev = repo.objects.get_typed(eid, Event)
    assert (ev.actor, dict(ev.causality)) == ("me", {"message_id": "m"})
    assert repo.session_marks.get(marked) == sid
    assert repo.session_marks.get(unmarked) is None and repo.session_marks.get(no_session) is None
    with pytest.raises(InvalidInput, match="^an event payload must be a JSON object$"):
        with repo.transaction() as tx:
            tx.event_fields("UserPromptSubmitted", "user", ["not", "a", "map"])  # type: ignore


def test_nested_transactions_hold_the_gc_lock_until_the_outermost_ends(repo, session):
    _sid, root, _main = session
    outer = repo.transaction()
    inner = repo.transaction()
    inner.event("UserPromptSubmitted", "user", {"text": "x"}, (root,))
    inner.commit()
    assert repo.objects.gc_lock.held  # gc must not run while the outer one is open
    outer.commit()
    assert not repo.objects.gc_lock.held


def test_the_check_looks_at_every_branch_of_the_transaction(repo, session, tmp_path):
    """A branch with nothing appended, or one whose appends are dropped, does not end the
    check: a later branch that moved is still a conflict, or still rebased."""
    sid, root, main = session
    for name in ("a", "b", "c"):
        pb.create_branch(repo, name)
    a, b, c = (branch_ref(sid, n) for n in ("a", "b", "c"))
    tx = repo.transaction(rebase=False)
    tx.branch(a)  # nothing appended
    tx.append(*_prompt(), ref=b)
    other = Repository.open(tmp_path)
    with other.transaction(b) as otx:
        moved = otx.append(*_prompt("meanwhile"))
    with pytest.raises(RefConflict) as err:
        tx.commit()
    assert err.value.details == {"ref": b, "expected": root, "actual": moved}

    chain = _stored_chain(repo, root, 1)
    tx = repo.transaction()
    tx.adopt(a, root, chain, drop_if_deleted=True)
    tx.append(*_prompt("on c"), ref=c)
    with other.transaction() as otx:
        otx.delete_ref(a)
        c_moved = otx.append(*_prompt("meanwhile"), ref=c)
    other.close()
    tx.commit()
    assert repo.refs.read(a) is None
    assert repo.objects.get_typed(repo.refs.read(c), Event).parents == (c_moved,)


def test_append_reflog_message_defaults_to_append(repo, session):
    _sid, _root, main = session
    with repo.transaction() as tx:
        tx.append(*_prompt())
        tx.append(*_prompt("2"))
    assert repo.refs.reflog(main)[-1].message == "append: 2 event(s)"


# --- reflog expiry through the transaction, and what an operation records ---------------------

def test_expired_reflog_entries_go_and_undo_puts_them_back_in_time_order(repo, session):
    sid, root, main = session
    e1 = ps.append(repo, *_prompt("1"))
    e2 = ps.append(repo, *_prompt("2"))
    log = repo.refs.reflog(main)
    assert len(log) == 3
    with repo.transaction(message="expire") as tx:
        tx.expire_reflog(main, log[:2])
        tx.expire_reflog(HEAD, [])  # nothing to expire: no change recorded
    assert repo.refs.reflog(main) == log[2:]
    lo = next(operations.walk(repo))
    assert [(name, how, len(keys)) for name, how, keys in lo.op.reflogs] == [(main, "expired", 2)]
    assert lo.op.changes == ()
    e3 = ps.append(repo, *_prompt("3"))  # written after the expiry: stays
    with repo.transaction() as tx:  # undo of the expiry, by hand: restore merges by time
        tx.restore_reflog(main, log[:2])
    restored = repo.refs.reflog(main)
    assert restored[:3] == log and restored[3].new == e3
    assert [e.new for e in restored] == [root, e1, e2, e3]
    lo = next(operations.walk(repo))
    assert [(name, how) for name, how, _ in lo.op.reflogs] == [(main, "restored")]
    with repo.transaction() as tx:  # restoring what is there changes nothing
        tx.restore_reflog(main, log[:1])
    assert repo.refs.reflog(main) == restored


def test_an_operation_records_who_where_and_its_parent(repo, session):
    import socket

    from ctxstore.repo.transaction import default_user

    first = operations.op_head(repo)
    ps.append(repo, *_prompt())
    lo = next(operations.walk(repo))
    assert lo.op.parents == (first,)
    assert (lo.op.user, lo.op.host) == (default_user(), socket.gethostname())
    assert lo.op.time.endswith("Z")


def test_a_commit_rolls_an_interrupted_journal_forward_first(repo, session):
    sid, root, main = session
    pb.create_branch(repo, "side")
    side = branch_ref(sid, "side")
    e1 = ps.append(repo, *_prompt())
    head_op = operations.op_head(repo)
    pending = Journal(head_op, 5, "ctx", (Move(side, root, e1, "from a dead process"),))
    repo.refs.write_journal(pending.encode())  # a process died after its commit point
    e2 = ps.append(repo, *_prompt("next"))
    assert repo.refs.read(side) == e1 and repo.refs.read(main) == e2
    assert repo.refs.reflog(side)[-1].message == "from a dead process"
    assert not repo.refs.has_journal()


def test_heads_reflog_is_a_chain_when_one_operation_moves_its_branch_and_head(repo, session):
    """Found by a mutant of apply_journal: restoring to before a checkout moves the checked-out
    branch back (a HEAD reflog line) and HEAD (another): the second starts where the first
    ended, not where the branch was before the operation."""
    sid, root, main = session
    pb.create_branch(repo, "side")
    target = operations.op_head(repo)
    pb.checkout(repo, "side")
    ps.append(repo, *_prompt())
    operations.restore(repo, target)
    log = repo.refs.reflog(HEAD)
    assert all(prev.new == e.old for prev, e in zip(log, log[1:], strict=False)), log
    assert repo.refs.read_head_value() == f"ref: {main}"


def test_undo_is_a_conflict_when_head_moved_outside_the_log(repo, session):
    _sid, root, main = session
    e1 = ps.append(repo, *_prompt())
    with repo.transaction() as tx:
        tx.set_head(detached=e1)
    repo.refs.set_head_detached(root)  # not through a transaction
    with pytest.raises(RefConflict):
        operations.undo(repo)


def test_undo_of_moves_already_taken_back_records_nothing(repo, session):
    _sid, root, main = session
    e1 = ps.append(repo, *_prompt())
    appended = next(operations.walk(repo))
    repo.refs.set_if_equals(main, e1, root)  # taken back outside the log
    assert operations.undo(repo) == ("", appended)
    assert operations.op_head(repo) == appended.id


def test_undo_and_restore_without_a_command_record_the_api_call(repo, session):
    _sid, _root, _main = session
    ps.append(repo, *_prompt())
    first = list(operations.walk(repo))[-1]
    newest = next(operations.walk(repo))
    operations.undo(repo)
    lo = next(operations.walk(repo))
    assert lo.op.command == f"api: undo: operation {newest.id[:12]} ({newest.op.description})"
    assert operations.restore(repo, first.id)[0] is None  # the undo already went back there
    operations.restore(repo, newest.id)  # redo, by restore
    assert next(operations.walk(repo)).op.command == f"api: restore: to operation {newest.id[:12]}"
    assert operations.refs_after(repo, operations.op_head(repo)) == {
        **dict(repo.refs.iter_refs("refs/")), HEAD: repo.refs.read_head_value()}


def test_defaults_of_append_and_set_head_value(repo, session):
    _sid, root, main = session
    with repo.transaction(message="m") as tx:
        eid = tx.append("UserPromptSubmitted", payload={"text": "x"})
        br = tx.branch()
        assert not br.rebased and not br.dropped
    assert repo.objects.get_typed(eid, Event).actor == "system"
    with repo.transaction(message="detach") as tx:
        tx.set_head_value(root)
    assert repo.refs.reflog(HEAD)[-1].message == "detach"
    tx = repo.transaction()
    tx.set_head(ref=main, expected="f" * 64)  # HEAD is not what this transaction expects
    with pytest.raises(RefConflict):
        tx.commit()


def test_a_transaction_made_directly_defaults_to_actor_ctx(repo, session):
    from ctxstore.repo.transaction import Transaction

    _sid, root, main = session
    tx = Transaction(repo)
    eid = tx.append("UserPromptSubmitted", "user", {"text": "x"})
    tx.commit()
    entry = repo.refs.reflog(main)[-1]
    assert (entry.new, entry.actor, entry.message) == (eid, "ctx", "append: 1 event(s)")


def test_event_defaults_and_session_marks_of_stored_events(repo, session):
    sid, root, _main = session
    with repo.transaction() as tx:
        assert tx.event_fields("UserPromptSubmitted")["actor"] == "system"
        deep = tx.put_event(dict(tx.event_fields("UserPromptSubmitted", parents=(root,)),
                                 generation=255))
        marked = tx.event("UserPromptSubmitted", parents=(deep,), session=sid)
    ev = repo.objects.get_typed(marked, Event)
    assert (ev.actor, ev.generation) == ("system", 256)
    assert repo.session_marks.get(marked) == sid


def test_a_ref_moved_twice_in_one_transaction_expects_what_it_held_first(repo, session):
    """The second set_ref of a ref in one transaction keeps the first one's expectation: the
    commit checks the value the ref held before the transaction, and logs one move from it."""
    sid, root, main = session
    e1 = ps.append(repo, *_prompt("one"))
    e2 = ps.append(repo, *_prompt("two"))
    b = branch_ref(sid, "b")
    with repo.transaction() as tx:
        tx.set_ref(b, root, expected=None)
    with repo.transaction() as tx:
        tx.set_ref(b, e1)
        tx.set_ref(b, e2)
    assert repo.refs.read(b) == e2
    assert [(x.old, x.new) for x in repo.refs.reflog(b)] == [(None, root), (root, e2)]


def test_ref_moves_keep_their_first_expectation_and_conflict_with_details(repo, session, tmp_path):
    sid, root, main = session
    e1 = ps.append(repo, *_prompt())
    b = branch_ref(sid, "b")
    with repo.transaction(message="tx message") as tx:
        tx.set_ref(b, root, expected=None)
    assert repo.refs.reflog(b)[-1].message == "tx message"  # no message: the transaction's
    tx = repo.transaction()
    tx.set_ref(b, e1)
    tx.set_ref(b, root)  # still expects what b held when first staged (root): no conflict
    tx.commit()
    assert repo.refs.read(b) == root
    tx = repo.transaction()
    tx.create_ref(b, e1)  # b exists: creating it is a conflict
    with pytest.raises(RefConflict) as err:
        tx.commit()
    assert err.value.details == {"ref": b, "expected": None, "actual": root}
    tx = repo.transaction()
    tx.set_ref(b, e1)
    other = Repository.open(tmp_path)
    with other.transaction() as otx:
        otx.delete_ref(b)
    other.close()
    with pytest.raises(RefConflict) as err:
        tx.commit()
    assert err.value.details == {"ref": b, "expected": root, "actual": None}


def test_a_ref_that_cannot_be_created_fails_before_the_commit_point(repo, session):
    sid, root, main = session
    e1 = ps.append(repo, *_prompt())
    from ctxstore.errors import InvalidRefName

    tx = repo.transaction()
    tx.set_ref(branch_ref(sid, "side"), e1, expected=None)
    tx.set_ref(main + "/sub", root, expected=None)  # main is a branch, not a folder
    with pytest.raises(InvalidRefName):
        tx.commit()
    assert not repo.refs.has_journal() and repo.refs.read(branch_ref(sid, "side")) is None


def test_head_conflicts_name_head_and_a_head_already_there_is_no_conflict(repo, session):
    _sid, root, main = session
    tx = repo.transaction()
    tx.set_head(ref=main, expected="f" * 64)  # HEAD is already there: nothing to do
    tx.commit()
    tx = repo.transaction()
    tx.set_head(detached=root)
    repo.refs.set_head_detached("e" * 64)  # moved outside the transaction
    with pytest.raises(RefConflict) as err:
        tx.commit()
    assert err.value.details == {"ref": HEAD, "expected": f"ref: {main}", "actual": "e" * 64}


def test_journal_text_is_utf8_not_escaped(tmp_path):
    data = Journal("a" * 64, 1, "ctx", (Move("HEAD", None, "x", "café"),)).encode()
    assert "café".encode() in data and b"\\u" not in data


def test_roll_forward_says_whether_it_found_a_journal(repo, session):
    from ctxstore.repo.transaction import roll_forward

    sid, root, main = session
    e1 = ps.append(repo, *_prompt())
    with repo.refs.transaction_lock():
        assert roll_forward(repo.refs) is False
    repo.refs.write_journal(Journal("f" * 64, 1, "ctx", (Move(main, e1, root, "back"),)).encode())
    with repo.refs.transaction_lock():
        assert roll_forward(repo.refs) is True
    assert repo.refs.read(main) == root


def test_a_ref_another_writer_already_moved_to_our_value_is_not_moved_again(repo, session,
                                                                           tmp_path):
    sid, root, main = session
    ps.append(repo, *_prompt())
    pb.create_branch(repo, "side")
    side = branch_ref(sid, "side")  # at e1
    tx = repo.transaction()
    tx.set_ref(side, root)
    other = Repository.open(tmp_path)
    with other.transaction() as otx:
        otx.set_ref(side, root)
    other.close()
    log = repo.refs.reflog(side)
    head_op = operations.op_head(repo)
    assert tx.commit() is None  # nothing left to move: no operation, no reflog line
    assert repo.refs.reflog(side) == log and operations.op_head(repo) == head_op


def test_an_invalid_event_type_says_what_is_valid(repo, session):
    with pytest.raises(InvalidInput) as err:
        with repo.transaction() as tx:
            tx.append("not a type")
    assert str(err.value) == ("invalid event type 'not a type': use a core type (e.g. "
                              "UserPromptSubmitted) or a namespaced one (x.yourtool.Thing)")


def test_a_transaction_made_directly_rebases_its_appends(repo, session, tmp_path):
    from ctxstore.repo.transaction import Transaction

    _sid, _root, main = session
    tx = Transaction(repo)
    tx.append("UserPromptSubmitted", "user", {"text": "x"})
    other = Repository.open(tmp_path)
    moved = ps.append(other, *_prompt("meanwhile"))
    other.close()
    tx.commit()
    assert repo.objects.get_typed(repo.refs.read(main), Event).parents == (moved,)


def test_restored_reflog_entries_of_the_same_millisecond_go_before_the_current_ones(repo, session):
    """Two moves in one millisecond (a fast machine): undoing an expiry of the first puts it
    back before the second, not after (the full suite once saw them swapped)."""
    sid, root, main = session
    ps.append(repo, *_prompt("1"))
    ps.append(repo, *_prompt("2"))
    log = repo.refs.reflog(main)
    same = [e._replace(ts_ms=log[1].ts_ms) for e in log[1:]]
    with repo.transaction(message="same ms") as tx:
        tx.expire_reflog(main, log[1:])
    with repo.transaction(message="same ms") as tx:
        tx.restore_reflog(main, [same[1]])
    with repo.transaction(message="same ms") as tx:
        tx.restore_reflog(main, [same[0]])
    assert [e.new for e in repo.refs.reflog(main)] == [e.new for e in log]
