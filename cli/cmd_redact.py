"""Redaction: see what a session holds in secrets, or purge them from its history."""

from __future__ import annotations

import click

from .main import cli
from .render import emit_json, short


@cli.command("redact")
@click.argument("rev", required=False)
@click.option("--purge", is_flag=True,
              help="Rewrite the session's history without its secrets (new ids, one undoable "
                   "operation; the old objects stay until reflog expiry and gc).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def redact_cmd(state, rev: str | None, purge: bool, as_json: bool) -> None:
    """Report the secrets in REV's session (default: HEAD's) by detector, or rewrite its history without them with --purge.

    Nothing is printed of a secret: only which detector fired and how often. Without
    --purge nothing is written. Built contexts are redacted anyway (policy `on_build`);
    `ctx export --redact` and `ctx pack --redact` redact a copy. The policy is the
    "redaction" key of .ctx/config.json and of the session's config (docs/redaction.md).

    \b
    Examples:
      ctx redact                       # what would be redacted in HEAD's session
      ctx redact 5cedc1c4 --json
      ctx redact --purge               # rewrite history; `ctx undo` reverts it
    """
    from ctxstore.porcelain.redact import describe
    from ctxstore.redaction import purge as purge_fn
    from ctxstore.redaction import scan

    repo = state.repo
    target = rev or "HEAD"
    if not purge:
        res = scan(repo, target)
        if as_json:
            emit_json(res)
            return
        click.echo(f"session {short(res['session'])}: " + describe(res["report"])[0])
        for line in describe(res["report"])[1:]:
            click.echo(line)
        if res["report"]["redactions"]:
            click.echo("`ctx redact --purge` rewrites the history without them.")
        return
    res = purge_fn(repo, target)
    if as_json:
        emit_json(res)
        return
    if not res["moves"]:
        click.echo(f"session {short(res['session'])}: no secrets found; nothing rewritten")
        return
    for line in describe(res["report"]):
        click.echo(line)
    for m in res["moves"]:
        click.echo(f"  {m['ref']}: {short(m['old']) if m['old'] else '(new)'} -> "
                   f"{short(m['new']) if m['new'] else '(deleted)'}")
    click.echo(f"operation {short(res['operation'])}; `ctx undo` moves the branches back. The old "
               f"objects stay until `ctx reflog expire` and `ctx gc` remove them.")
