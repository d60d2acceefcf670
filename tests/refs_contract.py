"""The contract every RefStore passes; mix into a class that defines make_refs(tmp_path)."""

from __future__ import annotations

import pytest

from ctxstore.errors import InvalidRefName, RefConflict

A, B, C = "a" * 64, "b" * 64, "c" * 64
REF = "refs/sessions/" + "1" * 64 + "/main"


class RefsContract:
    def make_refs(self, tmp_path):  # pragma: no cover
        raise NotImplementedError

    @pytest.fixture
    def refs(self, tmp_path):
        return self.make_refs(tmp_path)

    def test_create_read_move_delete(self, refs):
        assert refs.read(REF) is None
        refs.set_if_equals(REF, None, A, message="create")
        assert refs.read(REF) == A
        refs.set_if_equals(REF, A, B, message="move")
        assert refs.read(REF) == B
        refs.set_if_equals(REF, B, None, message="delete")
        assert refs.read(REF) is None

    def test_cas_conflict_says_what_moved_and_changes_nothing(self, refs):
        refs.set_if_equals(REF, None, A)
        with pytest.raises(RefConflict) as err:
            refs.set_if_equals(REF, B, C)
        assert "aaaaaaaaaaaa" in str(err.value)
        assert refs.read(REF) == A
        with pytest.raises(RefConflict):
            refs.set_if_equals(REF, None, C)  # must not exist yet
        assert len(refs.reflog(REF)) == 1

    def test_reflog_records_every_move(self, refs):
        refs.set_if_equals(REF, None, A, actor="alice", message="one")
        refs.set_if_equals(REF, A, B, actor="bob", message="two words")
        log = refs.reflog(REF)
        assert [(e.old, e.new, e.actor, e.message) for e in log] == [
            (None, A, "alice", "one"), (A, B, "bob", "two words")]

    def test_head_symbolic_and_detached(self, refs):
        refs.set_if_equals(REF, None, A)
        refs.set_head_symbolic(REF)
        head = refs.read_head()
        assert head.ref == REF and head.target == A and not head.detached
        refs.set_if_equals(REF, A, B)
        assert refs.read("HEAD") == B
        assert refs.reflog("HEAD")[-1].new == B  # moving HEAD's branch logs in HEAD too
        refs.set_head_detached(C)
        head = refs.read_head()
        assert head.detached and head.target == C

    @pytest.mark.parametrize("bad", ["refs/a..b", "refs/x.lock", "/refs/x", "refs/x/",
                                     "refs/a b", "refs/a\x01", "refs/a~1", "refs/.hidden",
                                     "refs/a@{1}", "refs//x", "refs/x."])
    def test_bad_names_rejected(self, refs, bad):
        with pytest.raises(InvalidRefName):
            refs.set_if_equals(bad, None, A)

    def test_iter_refs_sorted_by_prefix(self, refs):
        names = ["refs/sessions/s1/main", "refs/sessions/s1/alt", "refs/sessions/s2/main"]
        for n in names:
            refs.set_if_equals(n, None, A)
        assert [n for n, _ in refs.iter_refs("refs/sessions/s1/")] == sorted(names[:2])
        assert len(list(refs.iter_refs())) == 3

    def test_replace_reflog(self, refs):
        refs.set_if_equals(REF, None, A)
        refs.set_if_equals(REF, A, B)
        refs.replace_reflog(REF, refs.reflog(REF)[1:])
        assert [e.new for e in refs.reflog(REF)] == [B]


    def test_reflog_names_include_deleted_refs(self, refs):
        refs.set_if_equals(REF, None, A)
        refs.set_if_equals("refs/sessions/s/gone", None, A)
        refs.set_if_equals("refs/sessions/s/gone", A, None)
        refs.set_head_symbolic(REF)
        assert refs.reflog_names() == sorted(["HEAD", REF, "refs/sessions/s/gone"])
