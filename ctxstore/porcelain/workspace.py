"""Porcelain for workspace snapshots: `ctx snapshot`, `ctx restore`, `ctx diff --files`.

Revisions are resolved here; the work is ctxstore.workspace's (docs/format.md "Workspace
snapshots"). Snapshots and restores append to HEAD's branch — except a restore in a session
whose files the Claude Code hook snapshots: it records on that session's `workspace` branch,
because main there is the transcript's and the live import would take it back."""

from __future__ import annotations

from ..repo.revparse import resolve_event


def snapshot(repo, root: str | None = None, *, reason: str = "snapshot",
             only_if_changed: bool = False):
    from ..workspace.snapshot import take_snapshot

    return take_snapshot(repo, root, ref=repo.head_branch(), reason=reason,
                         only_if_changed=only_if_changed, command=None)


def restore(repo, rev: str, paths: tuple[str, ...] = (), *, root: str | None = None,
            dry_run: bool = False, force: bool = False):
    from ..workspace.restore import restore as do_restore

    event = resolve_event(repo, rev)
    ref = None if dry_run else _restore_branch(repo, event)
    return do_restore(repo, event, paths, root=root, dry_run=dry_run,
                      force=force, ref=ref, label=rev)


def _restore_branch(repo, event: str) -> str:
    from ..refs import branch_ref
    from ..workspace.auto import HOOK_BRANCH

    sid = repo.session_of_event(event)
    if sid:
        ws = branch_ref(sid, HOOK_BRANCH)
        if repo.refs.read(ws) is not None:
            return ws
    return repo.head_branch()


def diff_files(repo, a: str, b: str, *, patch: bool = False):
    from ..workspace.filediff import diff_files as do_diff

    return do_diff(repo, resolve_event(repo, a), resolve_event(repo, b), patch=patch)
