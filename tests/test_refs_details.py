"""What the refs contract leaves implicit, pinned down (each check kills mutants that survived
`python -m tests.mutation refs`): the exact reflog line format and how odd lines parse, what
HEAD's reflog records for each kind of move, what a conflict reports, how refs are listed."""

from __future__ import annotations

import time

import pytest

from ctxstore.errors import CorruptStore, RefConflict
from ctxstore.refs import FileRefs, MemoryRefs
from ctxstore.refs.base import ZERO, ReflogEntry
from ctxstore.refs.files import _format_entry, _parse_entry
from ctxstore.refs.names import branch_ref, split_branch_ref

from .refs_contract import REF, A, B, C


@pytest.fixture(params=["files", "memory"])
def refs(request, tmp_path):
    return FileRefs(tmp_path / ".ctx") if request.param == "files" else MemoryRefs()


def test_reflog_line_format_is_the_documented_one(tmp_path):
    refs = FileRefs(tmp_path)
    before = int(time.time() * 1000)
    refs.set_if_equals(REF, None, A, actor="my agent\t1", message="  create\n the\tbranch ")
    after = int(time.time() * 1000)
    (line,) = (tmp_path / "logs" / REF).read_text().splitlines(keepends=True)
    ts = int(line.split(" ")[2])
    assert before <= ts <= after  # unix milliseconds
    assert line == f"{ZERO} {A} {ts} myagent1\tcreate the branch\n"
    assert _format_entry(ReflogEntry(A, None, 5, " ", "")) == f"{A} {ZERO} 5 ctx\t\n".encode()


def test_reflog_lines_parse_back_and_bad_ones_are_skipped():
    assert _parse_entry(f"{ZERO} {A} 17 me\tmsg with\ttab\n") == ReflogEntry(None, A, 17, "me", "msg with\ttab")
    assert _parse_entry(f"{A} {ZERO} 17 me\t\n") == ReflogEntry(A, None, 17, "me", "")
    assert _parse_entry(f"{A} {B} 17 me\t trailing space \n") == ReflogEntry(A, B, 17, "me", " trailing space ")
    assert _parse_entry(f"{A} {B} 17 me\tmsg") == ReflogEntry(A, B, 17, "me", "msg")  # no newline
    assert _parse_entry(f"{A}  {B} 17 me\tx\n") is None  # two spaces: five fields
    assert _parse_entry(f"{A} {B} soon me\tx\n") is None
    assert _parse_entry(f"{A} {B} 17\tx\n") is None
    assert _parse_entry("\n") is None


def test_reflog_file_with_junk_lines(tmp_path):
    refs = FileRefs(tmp_path)
    refs.set_if_equals(REF, None, A, message="one")
    with open(tmp_path / "logs" / REF, "a") as f:
        f.write("garbage\n\n")
    refs.set_if_equals(REF, A, B, message="two")
    # damage is never skipped (issue 13): reading raises at the first bad line, naming it ...
    with pytest.raises(CorruptStore, match=f"^{tmp_path / 'logs' / REF}:2: damaged reflog line 'garbage'"):
        refs.reflog(REF)
    # ... and fsck's collector gets every bad line (the empty one too) with the good entries
    damaged: list = []
    assert [(e.old, e.new, e.message) for e in refs.reflog(REF, damaged=damaged)] == \
        [(None, A, "one"), (A, B, "two")]
    assert [d.details["line"] for d in damaged] == [2, 3]
    assert refs.reflog("refs/sessions/none/main") == []


def test_head_reflog_records_each_kind_of_move(refs):
    refs.set_if_equals(REF, None, A, actor="me", message="create")
    refs.set_head_symbolic(REF, actor="co", message="checkout")
    refs.set_if_equals(REF, A, B, actor="me", message="advance")
    refs.set_head_detached(C, actor="det", message="detach")
    log = [(e.old, e.new, e.actor, e.message) for e in refs.reflog("HEAD")]
    assert log == [(None, A, "co", "checkout"), (A, B, "me", "advance"), (B, C, "det", "detach")]
    assert all(abs(e.ts_ms - time.time() * 1000) < 60_000 for e in refs.reflog("HEAD"))
    head = refs.read_head()
    assert head.detached and head.target == C and head.ref is None
    refs.set_head_symbolic(REF)
    assert refs.read_head().ref == REF and refs.read_head().target == B
    assert refs.reflog("HEAD")[-1].old == C and refs.reflog("HEAD")[-1].new == B
    # moves of a branch HEAD does not name stay out of HEAD's reflog
    other = REF[:-4] + "other"
    refs.set_if_equals(other, None, A)
    assert len(refs.reflog("HEAD")) == 4 and refs.reflog(other)[-1].message == ""


def test_moving_head_through_set_if_equals_is_refused(refs):
    with pytest.raises(ValueError, match=r"^use set_head_\* to move HEAD$"):
        refs.set_if_equals("HEAD", None, A)


def test_conflict_reports_expected_and_actual(refs):
    refs.set_if_equals(REF, None, A)
    with pytest.raises(RefConflict) as err:
        refs.set_if_equals(REF, B, C)
    assert str(err.value) == (f"ref {REF} moved: expected {B[:12]}, found {A[:12]}; "
                              f"re-read and retry")
    assert err.value.details == {"ref": REF, "expected": B, "actual": A}
    with pytest.raises(RefConflict) as err:
        refs.set_if_equals(REF[:-4] + "new", A, B)
    assert "expected aaaaaaaaaaaa, found (absent)" in str(err.value)
    assert err.value.details["actual"] is None
    with pytest.raises(RefConflict, match=r"expected \(absent\), found aaaaaaaaaaaa;"):
        refs.set_if_equals(REF, None, B)


def test_iter_refs_by_prefix_and_skipping_non_refs(tmp_path):
    refs = FileRefs(tmp_path)
    s1, s2 = "refs/sessions/s1/", "refs/sessions/s2/"
    for name, target in ((s1 + "main", A), (s1 + "b/x", B), (s2 + "main", C),
                         ("refs/langgraph/t", A)):
        refs.set_if_equals(name, None, target)
    (tmp_path / (s1 + "main~")).write_text(A + "\n")  # an editor backup: not a ref name
    (tmp_path / (s1 + "lock.lock")).write_text(A + "\n")
    assert list(refs.iter_refs(s1)) == [(s1 + "b/x", B), (s1 + "main", A)]
    assert list(refs.iter_refs("refs/sessions/")) == [(s1 + "b/x", B), (s1 + "main", A),
                                                      (s2 + "main", C)]
    assert [n for n, _ in refs.iter_refs()] == [n for n, _ in refs.iter_refs("refs/")]
    assert list(refs.iter_refs(s1 + "ma")) == [(s1 + "main", A)]  # a prefix of a name
    assert list(refs.iter_refs("refs/nothing/")) == []
    assert refs.reflog_names() == sorted(["refs/langgraph/t", s1 + "b/x", s1 + "main", s2 + "main"])
    (tmp_path / (s1 + "damaged")).write_text("not an id\n")  # a ref's name, not a ref's content
    with pytest.raises(CorruptStore, match=f"^{tmp_path / s1}/damaged:1: "):
        list(refs.iter_refs(s1))
    damaged: list = []
    assert list(refs.iter_refs(s1, damaged=damaged)) == [(s1 + "b/x", B), (s1 + "main", A)]
    assert [d.details["path"] for d in damaged] == [str(tmp_path / s1 / "damaged")]


def test_a_ref_file_that_is_not_text_is_corrupt(tmp_path):
    refs = FileRefs(tmp_path)
    refs.set_if_equals(REF, None, A)
    (tmp_path / REF).write_bytes(b"\xff\xfe" + b"a" * 62)
    with pytest.raises(CorruptStore, match=f"^{tmp_path / REF}:1: not text, so not a ref$"):
        refs.read(REF)
    (tmp_path / REF).write_text("abc\n")
    with pytest.raises(CorruptStore, match=f"^{tmp_path / REF}:1: ref {REF} holds 'abc', not an object id$"):
        refs.read(REF)


def test_branch_ref_names():
    assert branch_ref("s" * 64, "fix/x") == f"refs/sessions/{'s' * 64}/fix/x"
    assert split_branch_ref(f"refs/sessions/{'s' * 64}/fix/x") == ("s" * 64, "fix/x")
    for bad in ("refs/other/s/main", "refs/sessions/s", "refs/sessions//main",
                "refs/sessions/s/", "sessions/s/main"):
        assert split_branch_ref(bad) is None, bad


def test_reflog_entry_to_dict():
    assert ReflogEntry(A, None, 3, "me", "m").to_dict() == {
        "old": A, "new": None, "ts_ms": 3, "actor": "me", "message": "m"}


def test_reflog_survives_bytes_that_are_not_utf8_and_keeps_message_ends(tmp_path):
    refs = FileRefs(tmp_path)
    refs.set_if_equals(REF, None, A, message="first")
    with open(tmp_path / "logs" / REF, "ab") as f:
        f.write(f"{A} {B} 17 me\tbad \xff byte\n".encode("latin-1"))
        f.write(f"{B} {C} 18 me\tends in X\n".encode())
    log = refs.reflog(REF)
    assert [e.message for e in log] == ["first", "bad \ufffd byte", "ends in X"]
    assert _parse_entry(f"{A} {B} 1 me\tXX\n").message == "XX"
