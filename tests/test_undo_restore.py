"""Issue 30 item 6: `ctx undo` after `ctx restore` puts the files back as they were before
the restore (a second undo redoes it, files too), refusing like restore when that would
overwrite work no snapshot holds — as `jj undo` takes the working copy back. Before: undo
moved the branch and left the files as the restore wrote them."""

from __future__ import annotations

from .clitools import Ctx
from .test_workspace import files_of


def _restored(tmp_path) -> tuple[Ctx, dict, dict, dict]:
    """A project snapshotted twice, changed (unsnapshotted work), then `restore --force` to
    the first snapshot: (ctx, files at the first snapshot, files before the restore, the
    restore's --json)."""
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new")
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "b.py").write_text("b = 1\n")
    ctx("snapshot")
    first = files_of(tmp_path)
    (tmp_path / "a.txt").write_text("two\n")
    (tmp_path / "src" / "c.py").write_text("c = 2\n")
    ctx("snapshot")
    (tmp_path / "a.txt").write_text("user's work\n")
    (tmp_path / "new.txt").write_text("also user's\n")
    before = files_of(tmp_path)
    done = ctx.json("restore", "HEAD~1", "--force")
    assert done["applied"] and files_of(tmp_path) == first
    return ctx, first, before, done


def test_undo_of_a_restore_puts_the_files_back_and_redo_reapplies_it(tmp_path):
    ctx, first, before, done = _restored(tmp_path)
    branch = ctx.json("status")["head"]
    assert branch == done["after"]
    out = ctx("undo").stdout
    assert files_of(tmp_path) == before  # the user's unsnapshotted work is back, new.txt too
    assert ctx.json("status")["head"] == done["before"]  # the branch names those files
    assert "written" in out and "deleted" in out
    res = ctx.json("undo")  # redo: the restore's files again
    assert files_of(tmp_path) == first and ctx.json("status")["head"] == done["after"]
    assert res["files"]["snapshot"] == done["after"]
    assert sorted(res["files"]["write"]) == ["a.txt"] and res["files"]["delete"] == [
        "new.txt", "src/c.py"]
    ctx("undo")
    assert files_of(tmp_path) == before


def test_undo_of_a_restore_refuses_to_overwrite_unsnapshotted_work(tmp_path):
    ctx, first, _before, done = _restored(tmp_path)
    (tmp_path / "a.txt").write_text("edited after the restore\n")
    ops = ctx.json("op", "log")["operations"]
    err = ctx.fails(18, "undo")
    assert "a.txt" in err and "ctx snapshot" in err and "nothing was undone" in err
    assert (tmp_path / "a.txt").read_text() == "edited after the restore\n"
    assert ctx.json("status")["head"] == done["after"]  # no ref moved either
    assert ctx.json("op", "log")["operations"] == ops


def test_undo_of_other_operations_leaves_the_files_alone(tmp_path):
    ctx, first, _before, done = _restored(tmp_path)
    ctx("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "hi"}')
    (tmp_path / "a.txt").write_text("edited\n")
    res = ctx.json("undo")  # the append's undo: refs only
    assert "files" not in res and (tmp_path / "a.txt").read_text() == "edited\n"
    assert ctx.json("status")["head"] == done["after"]
