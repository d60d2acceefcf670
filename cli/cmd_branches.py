"""Branching: branch, fork, checkout, reset."""

from __future__ import annotations

import click

from ctxstore.porcelain import branches as pb
from ctxstore.refs import split_branch_ref

from .main import cli
from .render import emit_json, short, style


@cli.command("branch")
@click.argument("name", required=False)
@click.argument("rev", required=False)
@click.option("-d", "--delete", "delete", is_flag=True, help="Delete branch NAME (its moves stay in the reflog).")
@click.option("-r", "--remotes", "remotes", is_flag=True,
              help="List remote-tracking branches (REMOTE/SESSION/BRANCH) of every session.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def branch_cmd(state, name, rev, delete, remotes, as_json) -> None:
    """List branches of the current session, create NAME at REV, or delete NAME with -d.

    \b
    Examples:
      ctx branch                    # list; * marks HEAD's branch
      ctx branch try-b HEAD~3       # create try-b at HEAD~3 (HEAD stays where it is)
      ctx branch -d try-b           # delete; `ctx reflog try-b` still shows its moves
      ctx branch -r                 # remote-tracking: origin/3f2a9c1e4b5d/main ...
    """
    repo = state.repo
    if remotes:
        _list_remote_branches(repo, as_json)
        return
    if delete:
        if not name:
            raise click.UsageError("branch -d needs a NAME")
        tip = pb.delete_branch(repo, name)
        if as_json:
            emit_json({"deleted": name, "was": tip})
        else:
            click.echo(f"Deleted branch {name} (was {short(tip)}).")
        return
    if name:
        ref, tip = pb.create_branch(repo, name, rev)
        if as_json:
            emit_json({"ref": ref, "tip": tip})
        else:
            click.echo(f"Created branch {name} at {short(tip)}")
        return
    current, branches = pb.list_branches(repo)
    if as_json:
        emit_json({"current": current, "branches": branches})
        return
    for b, tip in sorted(branches.items()):
        mark = "*" if b == current else " "
        label = style(b, fg="green") if b == current else b
        click.echo(f"{mark} {label}  {short(tip)}")


def _list_remote_branches(repo, as_json: bool) -> None:
    from ctxstore.gitbridge.tracking import list_all

    rows = [r for r in list_all(repo) if not r[1].startswith("session-meta/")]
    if as_json:
        emit_json([{"remote": r, "name": n, "tip": t} for r, n, t in rows])
        return
    for remote, name, tip in rows:
        sid, _, branch = name.partition("/")
        label = f"{remote}/{sid[:12]}/{branch}" if len(sid) == 64 else f"{remote}/{name}"
        click.echo(f"  {style(label, fg='red')}  {short(tip)}")


@cli.command("fork")
@click.argument("name")
@click.option("--at", "at", default=None, metavar="REV", help="Fork at REV instead of HEAD.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def fork_cmd(state, name: str, at: str | None, as_json: bool) -> None:
    """Create branch NAME (at HEAD or --at REV) and switch to it; nothing else moves.

    \b
    Examples:
      ctx fork try-b                # branch off here and switch to it
      ctx fork retry --at HEAD~2    # branch off two events back
      ctx checkout main             # go back; try-b keeps its events
    """
    ref, tip = pb.fork(state.repo, name, at)
    if as_json:
        emit_json({"ref": ref, "tip": tip})
    else:
        click.echo(f"Switched to a new branch {name} at {short(tip)}")


@cli.command("checkout")
@click.argument("rev")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def checkout_cmd(state, rev: str, as_json: bool) -> None:
    """Switch HEAD to branch REV, to a session's `main` branch (REV a session id or unique
    prefix, as `ctx sessions` lists them), or detach it at any event.

    \b
    Examples:
      ctx checkout try-b            # a branch of the current session
      ctx checkout 5cedc1c4         # a session: attach to its main branch
      ctx checkout 5cedc1c4/rewind  # SESSION/BRANCH
      ctx checkout HEAD~4           # detach at an event (appending needs a branch)
    """
    ref, tip = pb.checkout(state.repo, rev)
    parts = split_branch_ref(ref) if ref else None
    if as_json:
        emit_json({"ref": ref, "head": tip, "detached": ref is None,
                   "session": parts[0] if parts else None})
    elif ref and rev in ("HEAD", "@"):
        click.echo(f"Already on {parts[1] if parts else ref} ({short(tip)})")
    elif parts and not rev.endswith(parts[1]):
        click.echo(f"Switched to branch {parts[1]} of session {short(parts[0])} ({short(tip)})")
    elif ref:
        click.echo(f"Switched to branch {rev} ({short(tip)})")
    else:
        click.echo(f"HEAD is now detached at {short(tip)}")


@cli.command("reset")
@click.argument("rev")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def reset_cmd(state, rev: str, as_json: bool) -> None:
    """Roll the current branch back (or forward) to REV. The old tip stays in the reflog:
    `ctx reset BRANCH@{1}` undoes it.

    \b
    Examples:
      ctx reset HEAD~1              # drop the last event from this branch
      ctx reset main@{1}            # undo: main back where it was before its last move
      ctx reset @{1}                # undo the last reset: HEAD where it was before
    """
    ref, old, new = pb.reset(state.repo, rev)
    if as_json:
        emit_json({"ref": ref, "old": old, "new": new})
    else:
        parts = split_branch_ref(ref)
        name = parts[1] if parts else ref
        click.echo(f"{name} is now at {short(new)} (was {short(old)}; undo with "
                   f"`ctx reset {name}@{{1}}`)")
