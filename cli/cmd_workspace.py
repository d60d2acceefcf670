"""Workspace snapshots: `ctx snapshot [PATH]` and `ctx restore REV [PATH...]`."""

from __future__ import annotations

import click

from ctxstore.porcelain import workspace as pw

from .main import cli
from .render import emit_json, short, style


@cli.command("snapshot")
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option("-m", "--message", "reason", default="snapshot", show_default=True,
              help="Why the snapshot was taken (kept in the event's payload.reason).")
@click.option("--if-changed", is_flag=True,
              help="Record nothing when the files equal this directory's newest snapshot.")
@click.option("--json", "as_json", is_flag=True,
              help="{event, workspace, tree, root, files, added, modified, deleted}.")
@click.pass_obj
def snapshot_cmd(state, path: str | None, reason: str, if_changed: bool, as_json: bool) -> None:
    """Record the files of PATH (default: the directory holding .ctx) as a git tree in
    .ctx/workspace.git and append a WorkspaceSnapshot event to HEAD's branch.

    .gitignore files (at every level), the global excludes file and .git/info/exclude are
    honoured; the .ctx directory is never recorded. The user's git index, HEAD, branches and
    stash are never read or written. Files unchanged since the directory's last snapshot are
    not re-read, and equal content is stored once. The content travels with `ctx pack` like
    every other object.

    \b
    Examples:
      ctx snapshot
      ctx snapshot ../other-project -m "before the refactor"
      ctx snapshot --if-changed --json
    """
    res = pw.snapshot(state.repo, path, reason=reason, only_if_changed=if_changed)
    if as_json:
        emit_json(res.to_dict())
        return
    if res.event is None:
        click.echo(f"no changes in {res.root} since its newest snapshot (tree {res.tree[:12]})")
        return
    click.echo(f"snapshot {style(short(res.event), fg='yellow')} of {res.root}: "
               f"{res.files} files, +{res.added} ~{res.modified} -{res.deleted} "
               f"(tree {res.tree[:12]})")


@cli.command("restore")
@click.argument("rev")
@click.argument("paths", nargs=-1)
@click.option("-n", "--dry-run", is_flag=True,
              help="Only say which files would be written, deleted or are in the way.")
@click.option("-f", "--force", is_flag=True,
              help="Overwrite files changed since the newest snapshot (they are still "
                   "recorded in the before-restore snapshot).")
@click.option("--root", type=click.Path(file_okay=False),
              help="Restore into this directory (default: the directory holding .ctx; the "
                   "snapshot's own root only when it lies inside that).")
@click.option("--json", "as_json", is_flag=True,
              help="{target, tree, root, write, delete, conflicts, before, after, applied}.")
@click.pass_obj
def restore_cmd(state, rev: str, paths: tuple[str, ...], dry_run: bool, force: bool,
                root: str | None, as_json: bool) -> None:
    """Put the files back as the snapshot at REV had them (REV itself, or the newest snapshot
    on REV's history), optionally only PATHS (relative to the root).

    Files changed since the directory's newest snapshot that the restore would overwrite or
    delete are uncommitted work: the restore refuses and names them (exit 18) unless --force.
    Ignored files are never touched, nothing is written through a symlink or outside the
    root, and a path git would refuse (`..`, absolute, `.git`) refuses the restore (exit 10).
    Before writing, the current files are recorded as a snapshot event (and the result as
    another), so a restore is undone by restoring the first: the command prints how. A
    restore that fails part way (exit 16) leaves each file as it was or as the target has it
    and says which.

    \b
    Examples:
      ctx restore HEAD~5 --dry-run
      ctx restore main src/parser.py
      ctx restore try-b --force
    """
    plan = pw.restore(state.repo, rev, paths, root=root, dry_run=dry_run, force=force)
    if as_json:
        emit_json(plan.to_dict())
        return
    for path in plan.delete:
        click.echo(style(f"D {path}", fg="red"))
    for path in plan.write:
        click.echo(style(f"W {path}", fg="green"))
    if plan.conflicts:
        note = "would be overwritten" if dry_run else "overwritten (--force)"
        click.echo(f"{len(plan.conflicts)} file(s) changed since the newest snapshot {note}: "
                   + ", ".join(plan.conflicts[:20]))
    if not (plan.write or plan.delete):
        click.echo(f"{plan.root} already matches snapshot {short(plan.target_event)}")
    elif dry_run:
        click.echo(f"dry run: would write {len(plan.write)} and delete {len(plan.delete)} "
                   f"file(s) in {plan.root} (snapshot {short(plan.target_event)})")
    else:
        click.echo(f"restored {plan.root} to snapshot {short(plan.target_event)}: "
                   f"{len(plan.write)} written, {len(plan.delete)} deleted")
        click.echo(f"to undo: ctx restore {short(plan.before_event)}")
