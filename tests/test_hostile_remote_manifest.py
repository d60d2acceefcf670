"""A hostile remote points one session's ref at another session's commit (issue 35, mutant 3).

Each pushed commit carries a manifest naming the ref it was pushed for. A remote that moves
`refs/ctx/sessions/A/main` onto session B's commit would, if the manifest's ref were not
checked against the ref it was fetched for, move this store's tracking ref of A onto B's
history. The fetch is refused instead, and nothing is imported or moved."""

from __future__ import annotations

import pygit2

from ctxstore.repo import Repository
from tests.clitools import Ctx, store_files
from tests.remotetools import Machine, needs_git


def _ref_of(sid: str) -> str:
    return f"refs/ctx/sessions/{sid}/main"


def _outside_mirror(root) -> dict[str, bytes]:
    """The store's files but its git mirror (which a fetch creates before it checks)."""
    return {k: v for k, v in store_files(root).items() if not k.startswith("remotes.git/")}


@needs_git
def test_a_ref_moved_onto_another_sessions_commit_is_refused(tmp_path):
    remote = tmp_path / "r.git"
    pygit2.init_repository(str(remote), bare=True)
    a = Machine(tmp_path / "a", title="first")
    first = a.session()
    a("new", "--title", "second")
    a.say(3, "other")
    second = a.session()
    assert first != second
    a("remote", "add", "origin", str(remote))
    a("push", "--all")
    git = pygit2.Repository(str(remote))
    git.references[_ref_of(first)].set_target(git.references[_ref_of(second)].target)

    b = tmp_path / "b"
    b.mkdir()
    Ctx(b)("init", str(b))
    Ctx(b)("remote", "add", "origin", str(remote))
    before = _outside_mirror(b)
    err = Ctx(b).fails(12, "fetch")
    assert f"refs/ctx/sessions/{first}/main" in err and f"sessions/{second}/main" in err
    assert "nothing was imported" in err
    assert _outside_mirror(b) == before  # no object, no tracking ref, no reflog line
    repo = Repository.open(b)
    try:
        assert not [name for name, _ in repo.refs.iter_refs() if first in name]
    finally:
        repo.close()
