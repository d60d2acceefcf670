"""What the refs contract leaves implicit, pinned down (each check kills mutants that survived
`python -m tests.mutation refs`): the exact reflog line format and how odd lines parse, what
HEAD's reflog records for each kind of move, what a conflict reports, how refs are listed."""

from __future__ import annotations

import os
import stat
import time

import pytest

from ctxstore.errors import CorruptStore, InvalidRefName, RefConflict
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


# --- from the second refs run (after test_transaction.py joined the group) --------------------

def test_defaults_of_the_moving_calls(refs):
    """Without actor/message a move is logged as actor "ctx" with an empty message."""
    refs.set_if_equals(REF, None, A)
    refs.set_head_symbolic(REF)
    refs.set_head_detached(B)
    assert [(e.actor, e.message) for e in refs.reflog(REF)] == [("ctx", "")]
    assert [(e.actor, e.message) for e in refs.reflog("HEAD")] == [("ctx", ""), ("ctx", "")]


def test_damaged_head_and_op_head_name_file_and_line(tmp_path):
    refs = FileRefs(tmp_path)
    junk = "z" * 200  # longer than what a message quotes (80 characters)
    (tmp_path / "HEAD").write_text(junk + "\n")
    with pytest.raises(CorruptStore) as err:
        refs.read_head()
    assert str(err.value) == f"{tmp_path / 'HEAD'}:1: HEAD holds {'z' * 80!r}"
    assert err.value.details == {"path": str(tmp_path / "HEAD"), "line": 1}
    (tmp_path / "op-head").write_text(junk + "\n")
    with pytest.raises(CorruptStore) as err:
        refs.read_op_head()
    assert str(err.value) == f"{tmp_path / 'op-head'}:1: op-head holds {'z' * 80!r}, not an operation id"
    assert err.value.details == {"path": str(tmp_path / "op-head"), "line": 1}
    (tmp_path / "op-head").write_text(A + "\n")
    assert refs.read_op_head() == A


def test_damaged_ref_messages_quote_80_characters(tmp_path):
    refs = FileRefs(tmp_path)
    (tmp_path / REF).parent.mkdir(parents=True)
    (tmp_path / REF).write_text("y" * 200 + "\n")
    expected = f"{tmp_path / REF}:1: ref {REF} holds {'y' * 80!r}, not an object id"
    with pytest.raises(CorruptStore) as err:
        refs.read(REF)
    assert str(err.value) == expected
    damaged: list = []
    assert list(refs.iter_refs(damaged=damaged)) == []
    assert [str(d) for d in damaged] == [expected]
    (tmp_path / REF).write_bytes(b"\xff" * 64)
    with pytest.raises(CorruptStore) as err:
        refs.read(REF)
    assert err.value.details == {"path": str(tmp_path / REF), "line": 1}


def test_a_reflog_whose_last_line_lost_its_newline_is_damaged_there(tmp_path):
    """A torn last line is damage at that line; the lines before it still read (with fsck)."""
    refs = FileRefs(tmp_path)
    refs.set_if_equals(REF, None, A, message="one")
    refs.set_if_equals(REF, A, B, message="two")
    path = tmp_path / "logs" / REF
    path.write_bytes(path.read_bytes()[:-1])  # the newline of "two" is gone
    with pytest.raises(CorruptStore) as err:
        refs.reflog(REF)
    line2 = path.read_text().splitlines()[1]
    assert str(err.value) == f"{path}:2: damaged reflog line {line2[:100]!r} (no newline at the end)"
    damaged: list = []
    assert [e.message for e in refs.reflog(REF, damaged=damaged)] == ["one"]
    assert [d.details["line"] for d in damaged] == [2]
    path.write_bytes(path.read_bytes() + b"\n" + b"\xff" * 150 + b"\n")  # not a reflog line
    damaged = []
    assert [e.message for e in refs.reflog(REF, damaged=damaged)] == ["one", "two"]
    assert [str(d) for d in damaged] == [
        f"{path}:3: damaged reflog line {chr(0xFFFD) * 100!r} (expected "
        f"'<old id> <new id> <unix ms> <actor>\\t<message>')"]


def test_branch_and_folder_of_branches_conflict_messages(tmp_path):
    refs = FileRefs(tmp_path)
    folder, inside = REF[:-len("main")] + "fix", REF[:-len("main")] + "fix/one"
    refs.set_if_equals(inside, None, A)
    msg_folder = f"ref {folder} conflicts with existing refs under {folder}/"
    with pytest.raises(InvalidRefName, match=f"^{msg_folder}$"):
        refs.set_if_equals(folder, None, A)
    with pytest.raises(InvalidRefName, match=f"^{msg_folder}$"):
        refs.check_writable(folder)
    with pytest.raises(InvalidRefName, match=f"^{msg_folder}$"):
        refs.write_ref(folder, A, fsync=False)
    below = inside + "/deeper"
    both = "(a name cannot be both a branch and a folder of branches)"
    with pytest.raises(InvalidRefName) as err:
        refs.set_if_equals(below, None, A)
    assert str(err.value) == f"ref {below} conflicts with an existing ref {both}"
    with pytest.raises(InvalidRefName) as err:
        refs.check_writable(below)
    assert str(err.value) == f"ref {below} conflicts with an existing ref {inside} {both}"
    with pytest.raises(InvalidRefName) as err:
        refs.write_ref(below, A, fsync=False)
    assert str(err.value) == f"ref {below} conflicts with an existing ref {both}"
    assert refs.read(inside) == A and not (tmp_path / folder).is_file()


def test_a_ref_file_named_with_a_nul_byte_is_an_invalid_name(tmp_path):
    with pytest.raises(InvalidRefName, match=r"^'ma\\x00in' is not a valid ref name$"):
        FileRefs(tmp_path)._read_file(tmp_path / "ma\x00in")


def test_memory_refs_check_names_before_writing():
    with pytest.raises(InvalidRefName, match="must not contain '..'"):
        MemoryRefs().check_writable("refs/sessions/a/../b")


def test_primitives_that_remove_are_idempotent(tmp_path):
    """Roll-forward may repeat a step a dead process already did: removing what is gone is no
    error, and deep new branch names get their folders."""
    refs = FileRefs(tmp_path)
    refs.write_ref(REF, A, fsync=False)
    refs.write_ref(REF, None, fsync=True)
    refs.write_ref(REF, None, fsync=True)
    assert refs.read(REF) is None
    refs.remove_journal(fsync=False)
    refs.set_if_equals(REF, None, None)  # absent, and stays absent
    deep = REF[:-len("main")] + "a/b/c"
    refs.write_ref(deep, A, fsync=False)
    assert refs.read(deep) == A
    refs.write_op_head(B, fsync=False)
    assert refs.read_op_head() == B


def test_reflog_files_are_readable_by_everyone_not_executable(tmp_path):
    old = os.umask(0o022)
    try:
        FileRefs(tmp_path).set_if_equals(REF, None, A)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "logs" / REF).stat().st_mode) == 0o644


def test_ref_names_up_to_1024_bytes():
    from ctxstore.refs.names import check_ref_name

    name = "refs/" + "é" * 509 + "x"  # 5 + 1018 + 1 bytes
    assert len(name.encode()) == 1024 and check_ref_name(name) == name
    with pytest.raises(InvalidRefName, match="longer than 1024 bytes$"):
        check_ref_name(name + "y")
