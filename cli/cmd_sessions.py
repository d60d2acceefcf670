"""Sessions and appending: new, sessions, append, status."""

from __future__ import annotations

import sys

import click

from ctxstore.refs import DEFAULT_BRANCH, branch_ref

from .main import cli
from .render import count, emit_json, short, style


@cli.command("new")
@click.option("--title", default="", help="A human title for the session.")
@click.option("--goal", default="", help="The user's goal; the state projection starts from it.")
@click.option("--auto-snapshot", is_flag=True,
              help="Snapshot the files after each tool call that may write them and before "
                   "each compaction (docs/workspace.md).")
@click.option("--json", "as_json", is_flag=True, help="Print {session, root, branch, ref} as JSON.")
@click.pass_obj
def new_cmd(state, title: str, goal: str, auto_snapshot: bool, as_json: bool) -> None:
    """Start a session; HEAD moves to its `main` branch. Prints the session id.

    \b
    Examples:
      ctx new --title "fix parser" --goal "make the parser test pass"
      ctx new --auto-snapshot
      ctx new --json | jq -r .session
    """
    sid, root = state.repo.new_session(title=title, goal=goal,
                                       **({"config": {"auto_snapshot": True}}
                                          if auto_snapshot else {}))
    if as_json:
        emit_json({"session": sid, "root": root, "branch": DEFAULT_BRANCH,
                   "ref": branch_ref(sid, DEFAULT_BRANCH)})
    else:
        click.echo(sid)


@cli.command("sessions")
@click.option("--json", "as_json", is_flag=True,
              help="An array of sessions as JSON (tree order; parent, children and depth say "
                   "where each sits).")
@click.option("--cwd", "cwd", default=None, metavar="PATH",
              help="Only sessions whose working directory is PATH or below it.")
@click.option("--format", "fmt", default=None, metavar="FORMAT",
              help="Only sessions imported from FORMAT (claude-code, codex, pi) or `native`.")
@click.option("--grep", "pattern", default=None, metavar="REGEX",
              help="Only sessions whose title, goal, id or cwd matches REGEX (case-insensitive).")
@click.option("--since", default=None, metavar="WHEN",
              help="Only sessions active since WHEN: a date, a time or an age (3d, 12h, 2w).")
@click.pass_obj
def sessions_cmd(state, as_json: bool, cwd: str | None, fmt: str | None, pattern: str | None,
                 since: str | None) -> None:
    """List sessions, newest first, subagents under the session that spawned them.

    Each line shows the session id, where it came from (claude-code, codex, pi, or native),
    its event count, its last activity, its title, its tags and its working directory. The
    title is the one `ctx session rename` gave, else the newest one the harness recorded, else
    the first real request (no slash commands, no harness markup).

    \b
    Examples:
      ctx sessions
      ctx sessions --format claude-code --since 3d
      ctx sessions --cwd ~/src/project --grep 'parser|lexer'
      ctx sessions --json | jq '.[] | select(.depth == 0) | .title'
    """
    # titles are projected from state: loaded for `ctx sessions`, not for every command here
    from ctxstore.porcelain.listing import filter_entries, session_entries, session_filter

    keep = session_filter(cwd=cwd, format=fmt, grep=pattern, since=since)
    entries = filter_entries(session_entries(state.repo), keep)
    if as_json:
        emit_json([e.to_dict() for e in entries])
        return
    if not entries:
        click.echo("No sessions match." if any((cwd, fmt, pattern, since)) else
                   "No sessions yet: `ctx new --title ...` starts one, `ctx import PATH` "
                   "brings transcripts in.")
        return
    current = state.repo.current().session
    for e in entries:
        mark = "*" if e.id == current else " "
        indent = "  " * e.depth + ("└ " if e.depth else "")
        kind = f"{e.kind}: " if e.kind in ("subagent", "fork") else ""
        where = f"  {style(e.cwd, dim=True)}" if e.cwd else ""
        tags = style(f"  [{', '.join(e.tags)}]", fg="cyan") if e.tags else ""
        click.echo(f"{mark} {style(short(e.id), fg='yellow')}  {e.format:<11} {e.events:>6} events  "
                   f"{e.last_activity[:16].replace('T', ' ')}  {indent}{kind}"
                   f"{e.title or style('(untitled)', dim=True)}{tags}{where}")


@cli.command("append")
@click.argument("event_type", required=False)
@click.option("--actor", default="agent", show_default=True,
              help="user, agent, model, tool, system or subagent.")
@click.option("--payload", default=None, metavar="JSON|@FILE", help="The event payload object.")
@click.option("--batch", "batch", default=None, metavar="FILE|-",
              help="Append a JSONL file of {type, actor?, payload?, ts?} in one transaction.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def append_cmd(state, event_type: str | None, actor: str, payload: str | None,
               batch: str | None, as_json: bool) -> None:
    """Append an event of EVENT_TYPE to the current branch (or many with --batch).

    \b
    Examples:
      ctx append UserPromptSubmitted --actor user --payload '{"text": "fix the test"}'
      ctx append FileWritten --actor tool --payload @change.json
      ctx append --batch events.jsonl
    A malformed batch line aborts the whole batch (nothing is appended) and names its line.
    """
    from ctxstore.porcelain import sessions as ps  # start-up: `ctx status` never loads the writers
    from ctxstore.porcelain.inputs import open_input

    repo = state.repo
    if batch is not None:
        if event_type:
            raise click.UsageError("give either EVENT_TYPE or --batch, not both")
        if batch == "-":
            res = ps.append_batch(repo, getattr(sys.stdin, "buffer", sys.stdin))
        else:
            from ctxstore.errors import InvalidInput

            with open_input(batch) as f:  # bytes: a line that is not UTF-8 is named by number
                try:
                    res = ps.append_batch(repo, f)
                except InvalidInput as exc:  # "batch line N: ..." names the line, not the file
                    raise type(exc)(f"{batch}: {exc}") from None
        if as_json:
            emit_json({"count": res.count, "head": res.head})
        else:
            click.echo(f"appended {count(res.count, 'event')}; head {res.head}")
        return
    if not event_type:
        raise click.UsageError("missing EVENT_TYPE (or --batch FILE)")
    eid = ps.append(repo, event_type, actor, ps.parse_payload(payload))
    if as_json:
        emit_json({"id": eid})
    else:
        click.echo(eid)


@cli.command("status")
@click.option("--json", "as_json", is_flag=True,
              help="{store, session, branch, head, detached, title, tags, branches, events, "
                   "last_event} or, when HEAD names no event, {sessions, recent_sessions}.")
@click.pass_obj
def status_cmd(state, as_json: bool) -> None:
    """Where HEAD is: session, branch, head event, event count. When HEAD names no session
    yet, the store's most recently active sessions and how to attach to one.

    \b
    Examples:
      ctx status
      ctx status --json | jq -r .session
    """
    from ctxstore.porcelain.history import status as status_of

    info = status_of(state.repo)
    if as_json:
        emit_json(info)
        return
    if info.get("head") is None:
        n = info.get("sessions", 0)
        if not n:
            click.echo("No session yet: `ctx new --title ...` starts one; `ctx import` brings "
                       "in Claude Code, Codex or pi transcripts.")
            return
        click.echo(f"HEAD is on no session yet; this store has {n} session{'s' if n != 1 else ''}"
                   f"{', most recently active first' if n > 1 else ''}:")
        for s in info["recent_sessions"]:
            click.echo(f"  {style(short(s['id']), fg='yellow')}  {s['events']:>6} events  "
                       f"{s['last_activity'][:19]}  {s['title']}")
        if n > len(info["recent_sessions"]):
            click.echo(f"  ... and {n - len(info['recent_sessions'])} more (ctx sessions)")
        click.echo("Attach to one with `ctx checkout SESSION`; `ctx new --title ...` starts a new one.")
        return
    title = f"  {info['title']}" if info.get("title") else ""
    tags = f"  [{', '.join(info['tags'])}]" if info.get("tags") else ""
    if info["detached"]:
        where = f" (session {short(info['session'])}{title})" if info.get("session") else ""
        click.echo(f"HEAD detached at {short(info['head'])}{where}")
    else:
        click.echo(f"On branch {style(info['branch'], fg='green')} of session "
                   f"{short(info['session'])}{title}{tags}")
        click.echo(f"Branches: {', '.join(info.get('branches', []))}")
    click.echo(f"Head: {info['head']} ({info['last_event']['type']}, {info['last_event']['ts']})")
    click.echo(f"Events: {info['events']}")
