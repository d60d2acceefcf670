"""Porcelain for workspace snapshots: `ctx snapshot`, `ctx restore`, `ctx diff --files`.

Revisions are resolved here; the work is ctxstore.workspace's (docs/format.md "Workspace
snapshots"). Snapshots and restores append to HEAD's branch."""

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

    ref = None if dry_run else repo.head_branch()
    return do_restore(repo, resolve_event(repo, rev), paths, root=root, dry_run=dry_run,
                      force=force, ref=ref, label=rev)


def diff_files(repo, a: str, b: str, *, patch: bool = False):
    from ..workspace.filediff import diff_files as do_diff

    return do_diff(repo, resolve_event(repo, a), resolve_event(repo, b), patch=patch)
