"""`ctx restore` never overwrites a file it cannot have snapshotted (issue 35, mutant 4).

A git-ignored file is in no snapshot, so a restore that would write over it would lose it
for good: the restore is refused, naming it, and changes nothing."""

from __future__ import annotations

from .clitools import Ctx


def test_restore_refuses_to_overwrite_an_ignored_file(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new")
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "notes.txt").write_text("the snapshotted notes\n")
    ctx("snapshot")
    (tmp_path / "notes.txt").unlink()
    (tmp_path / ".gitignore").write_text("notes.txt\n")
    ctx("snapshot")
    # the user's own notes, ignored from now on: no snapshot can hold them
    (tmp_path / "notes.txt").write_text("my private notes\n")
    err = ctx.fails(18, "restore", "HEAD~1")
    assert "notes.txt" in err and "--force" in err
    assert (tmp_path / "notes.txt").read_text() == "my private notes\n"
    assert (tmp_path / ".gitignore").exists()  # nothing of the restore was applied
    dry = ctx.json("restore", "HEAD~1", "--dry-run")
    assert dry["conflicts"] == ["notes.txt"] and not dry["applied"]
    # another path of the same snapshot is no conflict
    ctx("restore", "HEAD~1", "a.txt")
    assert (tmp_path / "notes.txt").read_text() == "my private notes\n"
