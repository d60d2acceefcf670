"""`ctx mcp`: serve the store to MCP clients over stdio; `ctx mcp install CLIENT`."""

from __future__ import annotations

from typing import Any

import click

from .main import cli
from .render import emit_json

CLIENTS = click.Choice(["claude-code", "codex", "gemini"])


def porcelain_views():
    """The answers History needs from above its layer: the session listing, `ctx show`, and
    the context compiler (the same functions `ctx sessions`, `ctx show` and `ctx context`
    call)."""
    from ctxstore.integrations.mcp.history import Views
    from ctxstore.porcelain import context as pc
    from ctxstore.porcelain.history import show
    from ctxstore.porcelain.listing import session_entries

    def sessions(repo) -> list[dict[str, Any]]:
        return [e.to_dict() for e in session_entries(repo)]

    def context(repo, eid: str, budget: int | None, query: str | None) -> dict[str, Any]:
        bundle, _ = pc.context_report(repo, eid, budget, retrieve=True if query else None,
                                      query=query)
        return bundle.to_dict()

    return Views(sessions=sessions, show=show, context=context)


@cli.group("mcp", invoke_without_command=True)
@click.option("--store", "store_path", metavar="PATH", default=None,
              help="The store to serve (default: ctx's --store, $CTX_DIR, else the nearest "
                   ".ctx above the directory the client starts the server in).")
@click.option("--allow-writes", is_flag=True,
              help="Offer memory_propose (a proposal queued for `ctx memory review`; never a "
                   "direct memory write). Without it the server is read-only.")
@click.pass_context
def mcp_group(ctx: click.Context, store_path: str | None, allow_writes: bool) -> None:
    """Serve this store to MCP clients (Claude Code, Codex, Gemini CLI, ...) over stdio.

    Tools: search, session_state, recall, context, memory_search, memory_propose (only with
    --allow-writes). Resources: ctx://sessions, ctx://session/{id}, ctx://event/{id}.
    Everything returned passes the store's redaction policy. Needs the extra:
    pip install 'ctxstore[mcp]'. docs/mcp.md has the details.

    \b
    Examples:
      ctx mcp                              # what a client runs; speaks MCP on stdin/stdout
      ctx mcp --store ~/proj --allow-writes
      ctx mcp install claude-code          # this project's .mcp.json
      ctx mcp install codex --user         # ~/.codex/config.toml
    """
    if ctx.invoked_subcommand is not None:
        return
    from ctxstore.errors import Unsupported

    try:
        from ctxstore.integrations.mcp.server import serve
    except ImportError as exc:
        raise Unsupported(f"ctx mcp needs the MCP SDK: pip install 'ctxstore[mcp]' ({exc})") \
            from None
    from ctxstore.integrations.mcp.history import History

    state = ctx.obj
    if store_path:
        state.store_path = store_path
    serve(History(state.repo, porcelain_views(), allow_writes=allow_writes))


def _where(f):
    """CLIENT and which of its files: the options install and uninstall share."""
    for deco in reversed((
            click.argument("client", type=CLIENTS),
            click.option("--project", "scope", flag_value="project", default=True,
                         help="This project's file, shared through version control (the "
                              "default): .mcp.json, .gemini/settings.json or "
                              ".codex/config.toml."),
            click.option("--user", "scope", flag_value="user",
                         help="Your own file for every project: ~/.claude.json, "
                              "~/.gemini/settings.json or ~/.codex/config.toml."),
            click.option("--dir", "project", metavar="DIR", default=None,
                         help="The project directory for --project (default: the current "
                              "one)."))):
        f = deco(f)
    return f


@mcp_group.command("install")
@_where
@click.option("--pin-store", is_flag=True,
              help="With --user: name this store's absolute path in the command (default: "
                   "the server finds the store from the directory it starts in).")
@click.option("--allow-writes", is_flag=True, help="Start the server with --allow-writes.")
@click.option("--dry-run", is_flag=True, help="Say what would be written; write nothing.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def mcp_install_cmd(state, client: str, scope: str, project: str | None, pin_store: bool,
                    allow_writes: bool, dry_run: bool, as_json: bool) -> None:
    """Add the ctxstore server to CLIENT's MCP configuration; other servers and keys stay.

    A project file names no path of this machine (the command is `ctx` from the PATH); a
    user file names this interpreter, so it works without ctx on the client's PATH.
    Installing twice changes nothing.

    \b
    Examples:
      ctx mcp install claude-code
      ctx mcp install gemini --user --pin-store
      ctx mcp install codex --user --allow-writes --dry-run
    """
    from ctxstore.integrations.mcp import install as inst

    store = str(state.repo.path) if pin_store else None
    command, args = inst.server_command(scope, store=store, allow_writes=allow_writes)
    res = inst.install(client, inst.config_path(client, scope, project), command, args,
                       dry_run=dry_run)
    if as_json:
        emit_json(res)
        return
    verb = {"added": "Added", "updated": "Updated", "unchanged": "Already installed:"}[res["action"]]
    if dry_run and res["action"] != "unchanged":
        verb = f"Would have {res['action']}:"
    click.echo(f"{verb} MCP server {res['server']} in {res['path']} ({res['command_line']})")
    if res["note"]:
        click.echo(f"note: {res['note']}", err=True)


@mcp_group.command("uninstall")
@_where
@click.option("--dry-run", is_flag=True, help="Say what would be removed; write nothing.")
@click.option("--json", "as_json", is_flag=True)
def mcp_uninstall_cmd(client: str, scope: str, project: str | None, dry_run: bool,
                      as_json: bool) -> None:
    """Remove the ctxstore server from CLIENT's MCP configuration; nothing else changes.

    \b
    Examples:
      ctx mcp uninstall claude-code
      ctx mcp uninstall codex --user
    """
    from ctxstore.integrations.mcp import install as inst

    res = inst.uninstall(client, inst.config_path(client, scope, project), dry_run=dry_run)
    if as_json:
        emit_json(res)
    elif res["removed"] is None:
        click.echo(f"No MCP server {res['server']} in {res['path']}")
    else:
        click.echo(f"{'Would have removed' if dry_run else 'Removed'} MCP server "
                   f"{res['server']} from {res['path']}")
