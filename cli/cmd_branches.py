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
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def branch_cmd(state, name, rev, delete, as_json) -> None:
    """List branches of the current session, create NAME at REV, or delete NAME with -d."""
    repo = state.repo
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


@cli.command("fork")
@click.argument("name")
@click.option("--at", "at", default=None, metavar="REV", help="Fork at REV instead of HEAD.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def fork_cmd(state, name: str, at: str | None, as_json: bool) -> None:
    """Create branch NAME (at HEAD or --at REV) and switch to it; nothing else moves."""
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
    """Switch HEAD to branch REV, or detach it at any event."""
    ref, tip = pb.checkout(state.repo, rev)
    if as_json:
        emit_json({"ref": ref, "head": tip, "detached": ref is None})
    elif ref and rev in ("HEAD", "@"):
        parts = split_branch_ref(ref)
        click.echo(f"Already on {parts[1] if parts else ref} ({short(tip)})")
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
    `ctx reset BRANCH@{1}` undoes it."""
    ref, old, new = pb.reset(state.repo, rev)
    if as_json:
        emit_json({"ref": ref, "old": old, "new": new})
    else:
        click.echo(f"HEAD is now at {short(new)} (was {short(old)}; undo with `ctx reset @{{1}}`)")
