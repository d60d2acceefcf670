"""The operation log: `ctx op log`, `ctx op show`, `ctx op restore`, `ctx undo`."""

from __future__ import annotations

import click

from ctxstore.porcelain import oplog

from .main import cli
from .render import emit_json, short, style


def _value(v: str | None) -> str:
    if v is None:
        return "(absent)"
    return v if v.startswith("ref: ") else short(v)


def _ref(name: str) -> str:
    parts = name.split("/")
    if len(parts) >= 4 and parts[:2] == ["refs", "sessions"]:
        return f"{parts[2][:12]}/{'/'.join(parts[3:])}"
    return name


def _changes(changes: list[dict], indent: str = "  ") -> None:
    for c in changes:
        click.echo(f"{indent}{_ref(c['ref'])}: {_value(c['old'])} -> {_value(c['new'])}")


@cli.group("op")
def op_group() -> None:
    """The operation log: every command that moved refs is one operation, newest first.

    Each operation records who ran what, when, and every ref it moved (old -> new).
    `ctx undo` reverts the newest one; `ctx op restore OP` puts every ref back as it was
    right after OP. Both are operations themselves, so they can be undone too.

    \b
    Examples:
      ctx op log
      ctx op show @
      ctx undo
      ctx op restore 3f2a1b9c
    """


@op_group.command("log")
@click.option("-n", "limit", type=int, default=None, metavar="N", help="Show at most N operations.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def op_log_cmd(state, limit: int | None, as_json: bool) -> None:
    """List operations, newest first: id, user@host, time, what it did and the command.

    \b
    Examples:
      ctx op log
      ctx op log -n 5 --json
    """
    res = oplog.op_log(state.repo, limit)
    if as_json:
        emit_json(res)
        return
    if not res["operations"]:
        click.echo("No operations recorded yet.")
    for i, op in enumerate(res["operations"]):
        mark = "@" if i == 0 else "o"
        click.echo(f"{mark} {style(short(op['id']), fg='yellow')} {op['user']}@{op['host']} "
                   f"{op['time']}")
        click.echo(f"  {op['description']}")
        click.echo(f"  {op['command']}")
    if res["removed_by_gc"]:
        click.echo(f"(older operations, from {short(res['removed_by_gc'])} back, were removed by "
                   f"gc: they can no longer be restored)")


@op_group.command("show")
@click.argument("op", default="@")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def op_show_cmd(state, op: str, as_json: bool) -> None:
    """Show operation OP (an id prefix, @ for the newest, @-1 for the one before) and every
    ref it moved.

    \b
    Examples:
      ctx op show
      ctx op show @-1
      ctx op show 3f2a1b9c --json
    """
    res = oplog.op_show(state.repo, op)
    if as_json:
        emit_json(res)
        return
    click.echo(f"operation {res['id']}")
    if res["parents"]:
        click.echo(f"parent:   {res['parents'][0]}")
    click.echo(f"by:       {res['user']}@{res['host']} at {res['time']}")
    click.echo(f"command:  {res['command']}")
    click.echo(f"what:     {res['description']}")
    click.echo("changes:")
    _changes(res["changes"])


@op_group.command("restore")
@click.argument("op")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def op_restore_cmd(state, op: str, as_json: bool) -> None:
    """Set every ref (and HEAD) to its value right after operation OP, as a new operation.

    Refs created after OP are deleted, refs deleted after it come back. `ctx undo` reverts
    the restore.

    \b
    Examples:
      ctx op restore @-3
      ctx op restore 3f2a1b9c --json
    """
    res = oplog.restore(state.repo, op)
    if as_json:
        emit_json(res)
        return
    if res["operation"] is None:
        click.echo(f"Nothing to do: the refs already are as after {short(res['restored_to'])}.")
        return
    click.echo(f"Restored the refs as after operation {short(res['restored_to'])} "
               f"(operation {short(res['operation'])}):")
    _changes(res["changes"])


@cli.command("undo")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def undo_cmd(state, as_json: bool) -> None:
    """Revert the newest operation's ref moves, as a new operation: run it again to redo.

    Works for whatever moved refs: import, append, compact, merge, reset, fork, branch -d,
    checkout, unpack. The events themselves stay in the store (gc keeps what operations of
    the last 90 days name). Fails, changing nothing, if a ref moved outside the log since.
    An undo of `ctx restore` also puts the files back as they were before it (and a redo as
    the restore left them), refusing like restore when that would overwrite work no
    snapshot holds (exit 18).

    \b
    Examples:
      ctx reset main~3 && ctx undo      # back where you were
      ctx undo && ctx undo              # undo, then redo
      ctx undo --json
    """
    res = oplog.undo(state.repo)
    if as_json:
        emit_json(res)
        return
    click.echo(f"Undid operation {short(res['undone']['id'])}: {res['undone']['description']}")
    _changes(res["changes"])
    if "files" in res:  # a restore's: the files followed the branch (porcelain/oplog.py)
        files = res["files"]
        click.echo(f"Files of {files['root']} as snapshot {short(files['snapshot'])} has them: "
                   f"{len(files['write'])} written, {len(files['delete'])} deleted")
