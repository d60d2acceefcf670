"""Issue 30 item 2 (clone part): `ctx clone` attaches HEAD to the remote's newest top-level
session and says so. Before: HEAD went to the alphabetically first `main`, often an old
session or a subagent's."""

from __future__ import annotations

from click.testing import CliRunner

from ctxstore import ContextManager, Repository
from ctxstore.cli.main import cli

from .remotetools import bare, git, needs_git

pytestmark = needs_git


def _sessions_where_the_newest_is_not_first(root) -> tuple[str, str, int]:
    """A store with an old session, then a newest top-level session N that spawned a
    subagent S (whose events are newer still), with N's id not the smallest of them all:
    (N, S, number of sessions)."""
    repo = Repository.init(root)
    try:
        old = ContextManager.start(repo, title="old", goal="an old task")
        old.add_user_message("old work")
        while True:
            new = ContextManager.start(repo, title="new", goal="the newest task")
            new.add_user_message("new work")
            child = new.spawn("look something up")
            child.add_user_message("the subagent's own turn, the newest event of all")
            if min(repo.session_ids()) != new.session:
                return new.session, child.session, len(repo.session_ids())
    finally:
        repo.close()


def test_clone_attaches_head_to_the_newest_top_level_session(tmp_path):
    newest, subagent, n = _sessions_where_the_newest_is_not_first(tmp_path / "a")
    remote = bare(tmp_path / "r.git")
    runner = CliRunner()
    for args in (["remote", "add", "origin", str(remote)], ["push", "--all"]):
        res = runner.invoke(cli, ["--store", str(tmp_path / "a"), *args])
        assert res.exit_code == 0, res.output
    refs = git("-C", str(remote), "for-each-ref").stdout
    assert refs.count("/main\n") == n >= 3

    res = runner.invoke(cli, ["clone", str(remote), str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    assert f"HEAD -> {newest[:12]}/main (the newest top-level session" in res.stdout
    res = runner.invoke(cli, ["--store", str(tmp_path / "b"), "status", "--json"])
    assert res.exit_code == 0, res.output
    assert f'"session": "{newest}"' in res.stdout and subagent not in res.stdout
