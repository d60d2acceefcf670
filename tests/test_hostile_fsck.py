"""`ctx fsck --full` names snapshot trees holding names git itself refuses (issue 28, "what to
build"; docs/security.md): `..`, `.git` in any case, a backslash — a received pack can carry
such a tree; fsck says which snapshot and which path, and restore refuses it."""

from __future__ import annotations

import pytest

from ctxstore.repo import Repository
from tests.clitools import Ctx
from tests.hostiletools import crafted_snapshot


@pytest.mark.parametrize("path, named", [("../outside.txt", "'..'"),
                                         ("sub/../../x", "'..'"),
                                         (".GIT/hooks/post-checkout", "'.GIT'"),
                                         (".git/config", "'.git'"),
                                         ("a\\..\\b", "backslash")])
def test_fsck_reports_snapshot_tree_names_git_refuses(tmp_path, path, named):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new")
    ctx("fsck", "--full")
    repo = Repository.open(tmp_path / ".ctx")
    try:
        bad = crafted_snapshot(repo, {path: b"x\n", "fine.txt": b"ok\n"}, root=str(tmp_path),
                               partial=False)
    finally:
        repo.close()
    res = ctx("fsck", "--full", code=13)
    lines = [x for x in res.stdout.splitlines() if x.startswith("workspace")]
    assert len(lines) == 1 and named in lines[0] and "git refuses" in lines[0]
    err = ctx.fails(10, "restore", bad, "--force")
    assert "refused" in err
    assert not (tmp_path.parent / "outside.txt").exists()
