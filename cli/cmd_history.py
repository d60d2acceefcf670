"""Reading history: log, show, diff, reflog."""

from __future__ import annotations

import itertools
import json
import re
from typing import TYPE_CHECKING

import click

from ctxstore.clock import iso_from_ms
from ctxstore.porcelain import compaction as pco
from ctxstore.porcelain import history as ph
from ctxstore.refs import split_branch_ref

from . import output
from .eventview import event_lines, object_lines, state_diff_lines
from .main import cli
from .render import (
    emit_json,
    event_summary,
    graph_lines,
    message_summary,
    one_line,
    short,
    style,
)
from .timeopts import point_in_time

if TYPE_CHECKING:
    from ctxstore.porcelain.eventfilter import EventFilter


def _decorations(repo) -> dict[str, list[str]]:
    cur = repo.current()
    deco: dict[str, list[str]] = {}
    if cur.session:
        for branch, tip in repo.branches(cur.session).items():
            name = f"HEAD -> {branch}" if branch == cur.branch else branch
            deco.setdefault(tip, []).append(name)
    if cur.ref is None and cur.tip:
        deco.setdefault(cur.tip, []).insert(0, "HEAD")
    return deco


def _event_filter(types, actors, grep, ignore_case, since, until, bookkeeping) -> EventFilter:
    from ctxstore.porcelain.eventfilter import EventFilter

    try:
        pattern = re.compile(grep, re.IGNORECASE if ignore_case else 0) if grep else None
    except re.error as exc:
        raise click.BadParameter(f"not a regular expression: {exc}", param_hint="--grep") from None
    return EventFilter(tuple(types), tuple(actors), pattern, point_in_time(since, "--since"),
                       point_in_time(until, "--until"), bookkeeping)




def _session_cwd(repo, event_id: str | None, rev: str | None = None) -> str:
    """The cwd of the session an event belongs to: tool paths are shown relative to it. With
    no REV the events are HEAD's, whose branch already names the session (no walk to a mark)."""
    cur = repo.current() if rev is None else None
    sid = cur.session if cur is not None and cur.session else (
        repo.session_of_event(event_id) if event_id else None)
    return repo.session(sid).cwd if sid else ""


def _tool_names(events) -> dict[str, str]:
    """Call id -> tool name, from the calls among `events` (results often omit the name)."""
    return {str(ev.payload.get("tool_call_id")): str(ev.payload.get("name", ""))
            for _, ev in events if ev.type == "ToolCallRequested"}


def _describe(repo, ev, width: int, cwd: str, names: dict[str, str] | None = None) -> str:
    """The event's summary; for a model turn without text, what its message holds."""
    text = event_summary(ev, width, cwd, names)
    if text or ev.type not in ("ModelResponseReceived", "MessageAdded"):
        return text
    msg = ph.message_of(repo, ev)
    return (message_summary(msg, width, cwd) if msg is not None else "") or \
        style("(empty)", dim=True)


@cli.command("log")
@click.argument("rev", required=False)
@click.option("-n", "--max-count", "n", type=click.IntRange(min=0), default=None,
              help="Show at most N events (after filtering).")
@click.option("--oneline", is_flag=True,
              help="One line per event: id, type, summary (tool calls as `Bash: pytest -x`).")
@click.option("--graph", is_flag=True, help="Draw the DAG like `git log --graph`.")
@click.option("--all", "all_", is_flag=True,
              help="All branches of the current session (of REV's session, with REV).")
@click.option("--first-parent", is_flag=True, help="Follow only first parents.")
@click.option("--type", "types", multiple=True, metavar="TYPE",
              help="Only events of TYPE (glob, e.g. 'ToolCall*'; repeatable). Naming a "
                   "bookkeeping type shows it.")
@click.option("--actor", "actors", multiple=True, metavar="ACTOR",
              help="Only events by ACTOR (repeatable): user, agent, model, tool, system, "
                   "subagent, or any actor `ctx append --actor` recorded.")
@click.option("--grep", "grep", metavar="REGEX",
              help="Only events whose payload (text, tool name and arguments, result preview) "
                   "matches; `ctx grep` also searches whole messages and artifacts.")
@click.option("-i", "--regexp-ignore-case", "ignore_case", is_flag=True,
              help="--grep ignores case.")
@click.option("--since", metavar="WHEN", help="Only events at or after WHEN (2026-02-16, 3d, '2 hours ago').")
@click.option("--until", metavar="WHEN", help="Only events at or before WHEN.")
@click.option("--reverse", is_flag=True, help="Oldest first (applied after -n, as in git).")
@click.option("--bookkeeping", is_flag=True,
              help="Also show source bookkeeping: the system records importers keep from a "
                   "transcript (claude-code:progress, claude-code:file-history-snapshot, "
                   "codex:turn_context, ...), hidden by default.")
@click.option("--json", "as_json", is_flag=True,
              help="An array, newest first: id, type, actor, parents, generation, ts, payload, causality.")
@click.pass_obj
def log_cmd(state, rev, n, oneline, graph, all_, first_parent, types, actors, grep, ignore_case,
            since, until, reverse, bookkeeping, as_json) -> None:
    """Show events newest first from REV (default HEAD).

    Source bookkeeping events (records an importer kept that no person or model wrote) are
    hidden unless --bookkeeping or a matching --type is given; --graph then draws each shown
    event's nearest shown ancestors, so forks and merges stay visible.

    \b
    Examples:
      ctx log --oneline -n 20
      ctx log --graph --all
      ctx log --type 'ToolCall*' --grep pytest
      ctx log --actor user --since 2026-02-16 --reverse
      ctx log --bookkeeping --oneline HEAD~50
    """
    repo = state.repo
    if graph and reverse:
        raise click.UsageError("--reverse cannot be combined with --graph")
    flt = _event_filter(types, actors, grep, ignore_case, since, until, bookkeeping)
    walked: list = []
    events = ph.log(repo, rev, n, all_, first_parent, flt, walked)
    compacted = pco.compacted_events(repo, events)
    if reverse:
        events.reverse()
    if as_json:
        emit_json([{**ph.event_dict(i, e), **({"compacted_by": compacted[i]} if i in compacted else {})}
                   for i, e in events])
        return
    output.page()
    deco = _decorations(repo)
    cwd = _session_cwd(repo, events[0][0] if events else None, rev)
    tools = _tool_names(walked)
    parents = None
    if flt.active:  # hidden events: the graph skips over them, their labels move down
        from ctxstore.porcelain.eventfilter import visible_parents

        parents, nearest = visible_parents(walked, {i for i, _ in events})
        for tip, names in list(deco.items()):
            for anc in nearest.get(tip, ()):
                deco.setdefault(anc, []).extend(n for n in names if n not in deco[anc])
        if not graph:
            parents = None
    rows = graph_lines(events, parents) if graph else (("", i, e) for i, e in events)
    for prefix, eid, ev in rows:
        lead = f"{prefix} " if graph else ""
        if not eid:
            click.echo(prefix)
            continue
        names = deco.get(eid)
        dec = style(f" ({', '.join(names)})", fg="cyan") if names else ""
        merge = style(" [merge]", fg="magenta") if len(ev.parents) > 1 else ""
        if eid in compacted:
            merge += style(" [compacted]", dim=True)
        if oneline or graph:
            click.echo(f"{lead}{style(short(eid, 10), fg='yellow')}{dec}{merge} "
                       f"{style(ev.type, bold=True)} {_describe(repo, ev, 72, cwd, tools)}")
        else:  # one write per event: click.echo costs more than the formatting
            summary = _describe(repo, ev, 200, cwd, tools)
            click.echo("\n".join([
                style(f"event {eid}", fg="yellow") + dec + merge,
                f"Type:   {ev.type}   Actor: {ev.actor}   Generation: {ev.generation}",
                f"Date:   {ev.ts}", *((f"\n    {summary}",) if summary else ()), ""]))


@cli.command("show")
@click.argument("rev", default="HEAD", required=False)
@click.option("-v", "--verbose", is_flag=True,
              help="Also causality ids and the source provenance (the original transcript line).")
@click.option("--raw", is_flag=True, help="The stored object as JSON, exactly as `ctx cat-object`.")
@click.option("--json", "as_json", is_flag=True,
              help="{id, type, content, session?, message?, artifacts} as JSON.")
@click.pass_obj
def show_cmd(state, rev: str, verbose: bool, raw: bool, as_json: bool) -> None:
    """Show an event (REV, default HEAD) or any object by id or unique prefix.

    An event reads as its message: text, thinking, each tool call with its arguments, tool
    results (first lines; the whole output is an artifact, `ctx cat ID`), artifact refs.

    \b
    Examples:
      ctx show                 # the event HEAD names
      ctx show HEAD~3
      ctx show 5f3a9c1e -v     # with causality ids and the original transcript line
      ctx show 5f3a9c1e --raw  # the stored JSON
    """
    info = ph.show(state.repo, rev, source=verbose or as_json)
    if as_json:
        emit_json(info)
        return
    output.page()
    if raw:
        click.echo(style(f"{info['type']} {info['id']}", fg="yellow"))
        click.echo(json.dumps(info["content"], indent=2, ensure_ascii=False, default=str))
        return
    if info["type"] == "event":
        cwd = state.repo.session(info["session"]).cwd if info.get("session") else ""
        lines = event_lines(info, _decorations(state.repo).get(info["id"], []), verbose, cwd)
    else:
        lines = object_lines(info, verbose)
    for line in lines:
        click.echo(line)


@cli.command("diff")
@click.argument("a")
@click.argument("b")
@click.option("--stat", is_flag=True,
              help="Counts only: events per type on each side and a line per changed state section.")
@click.option("--files", is_flag=True,
              help="Instead: the file changes between the newest workspace snapshots at A and "
                   "at B (git's name-status with renames; --stat adds line counts, --patch the "
                   "diff).")
@click.option("--patch", is_flag=True, help="With --files: the unified diff of the files.")
@click.option("--bookkeeping", is_flag=True,
              help="Also show source bookkeeping events (hidden by default, as in `ctx log`).")
@click.option("--json", "as_json", is_flag=True,
              help="{a, b, merge_base, only_a: [...], only_b: [...], bookkeeping_hidden, state} "
                   "(events newest first); with --files {a, b, changes}.")
@click.pass_obj
def diff_cmd(state, a: str, b: str, stat: bool, files: bool, patch: bool, bookkeeping: bool,
             as_json: bool) -> None:
    """Compare two revisions from their merge base: events only in A, only in B, and how the
    projected state differs (goal, plan, files, facts, errors, ...).

    \b
    Examples:
      ctx diff main try-b
      ctx diff --stat HEAD~10 HEAD
      ctx diff main try-b --json | jq '.state'
      ctx diff --files main try-b
    """
    if files:
        _diff_files(state, a, b, stat, patch, as_json)
        return
    d = ph.diff(state.repo, a, b, bookkeeping)
    from ctxstore.porcelain import context as pc  # state projection: only `diff` needs it

    sdiff = pc.state_diff_at(state.repo, a, b)
    if as_json:
        emit_json({**d.to_dict(), "state": sdiff})
        return
    output.page()
    cwd = _session_cwd(state.repo, d.b)
    names = _tool_names([*d.only_a, *d.only_b])
    if d.a == d.b:
        click.echo(f"{a} and {b} are the same event ({short(d.a)}): nothing differs")
        return
    click.echo(f"merge base: {short(d.base) if d.base else '(none: unrelated histories)'}")
    for label, events, hidden, color, sign in ((a, d.only_a, d.hidden_a, "red", "-"),
                                               (b, d.only_b, d.hidden_b, "green", "+")):
        more = f"; {hidden} bookkeeping hidden" if hidden else ""
        click.echo(style(f"only in {label} ({len(events)} event{'s' if len(events) != 1 else ''}"
                         f"{more}){':' if events else ''}", bold=True))
        if stat:
            for t, count in _type_counts(events):
                click.echo(style(f" {sign} {count:>5} {t}", fg=color))
            continue
        for eid, ev in events:
            click.echo(style(f" {sign} {short(eid, 10)} {ev.type}", fg=color)
                       + f" {_describe(state.repo, ev, 60, cwd, names)}")
    if sdiff:
        click.echo(style(f"state ({a} → {b}):", bold=True))
        for line in state_diff_lines(sdiff, stat):
            click.echo(line)
    else:
        click.echo(style("state: no difference", bold=True))


def _diff_files(state, a: str, b: str, stat: bool, patch: bool, as_json: bool) -> None:
    from ctxstore.porcelain import workspace as pw

    fd = pw.diff_files(state.repo, a, b, patch=patch)
    if as_json:
        emit_json(fd.to_dict())
        return
    output.page()
    click.echo(f"files: snapshot {short(fd.a_event)} ({a}) → {short(fd.b_event)} ({b})")
    colors = {"A": "green", "D": "red", "R": "yellow"}
    for c in fd.changes:
        name = f"{c.old_path} → {c.path}" if c.old_path else c.path
        counts = (" (binary)" if c.binary else f" +{c.additions} -{c.deletions}") if stat else ""
        click.echo(style(f"{c.status} {name}", fg=colors.get(c.status)) + counts)
    if not fd.changes:
        click.echo("no file changes")
    if patch and fd.patch:
        click.echo(fd.patch, nl=False)


def _type_counts(events) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for _, ev in events:
        counts[ev.type] = counts.get(ev.type, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


@cli.command("grep")
@click.argument("pattern")
@click.argument("rev", required=False)
@click.option("--all", "all_", is_flag=True, help="Every branch of every session.")
@click.option("-i", "--ignore-case", is_flag=True, help="Match case-insensitively.")
@click.option("-F", "--fixed-strings", is_flag=True, help="PATTERN is a plain string, not a regex.")
@click.option("-l", "--events-only", is_flag=True, help="Print only the ids of matching events.")
@click.option("-n", "--max-count", "n", type=click.IntRange(min=1), default=None,
              help="Stop after N matching lines.")
@click.option("--ranked", is_flag=True,
              help="PATTERN is words: the best-matching events and artifacts by BM25, from the "
                   "retrieval index `ctx memory search` and `ctx context --retrieve` use "
                   "(needs ctxstore[memory]); -n is how many (default 20).")
@click.option("--json", "as_json", is_flag=True,
              help="An array of {session, event, type, where, line, object} (--ranked: "
                   "{kind, id, event, type, session, score, lines}).")
@click.pass_obj
def grep_cmd(state, pattern, rev, all_, ignore_case, fixed_strings, events_only, n, ranked,
             as_json) -> None:
    """Search messages, tool calls (names and arguments), tool results and artifacts of the
    history from REV (default HEAD), or of every session with --all.

    Each line is `EVENT TYPE WHERE: LINE` (with --all `EVENT [SESSION] ...`); `ctx show EVENT`
    opens the event. Exit 1 when
    nothing matches, as grep does. A plain scan of the history (no index): every exact line
    a regular expression matches. To find where something was discussed by relevance, across
    every session, use `ctx search` (ranked, indexed).

    \b
    Examples:
      ctx grep AssertionError
      ctx grep -i 'def parse' main
      ctx grep --all -l pytest
      ctx grep -F 'a.b(c)' --json
      ctx grep --ranked 'parser test failure' --all -n 5
    """
    if all_ and rev:
        raise click.UsageError("give either REV or --all, not both")
    if ranked:
        _ranked(state.repo, pattern, rev, all_, n or 20, events_only, as_json)
        return
    try:
        regex = re.compile(re.escape(pattern) if fixed_strings else pattern,
                           re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise click.BadParameter(f"not a regular expression: {exc}", param_hint="PATTERN") from None
    from ctxstore.porcelain.search import grep, grep_tips

    repo = state.repo
    tips = grep_tips(repo, rev, all_)
    hits = grep(repo, regex, tips)
    if n is not None:
        hits = itertools.islice(hits, n)
    if as_json:
        found = [h.to_dict() for h in hits]
        emit_json(found)
        if not found:
            click.get_current_context().exit(1)
        return
    output.page()
    seen: set[str] = set()
    for h in hits:
        if events_only:
            if h.event not in seen:
                click.echo(short(h.event, 10))
            seen.add(h.event)
            continue
        seen.add(h.event)
        click.echo(f"{style(_hit_id(h, all_), fg='yellow')} {style(h.type, bold=True)} "
                   f"{style(h.where, fg='cyan')}: {_highlight(one_line(h.line, 200), regex)}")
    if not seen:
        click.get_current_context().exit(1)


def _ranked(repo, query, rev, all_, k, events_only, as_json) -> None:
    from ctxstore.porcelain.search import grep_tips, ranked_grep

    hits = ranked_grep(repo, query, grep_tips(repo, rev, all_), all_, k)
    if as_json:
        emit_json(hits)
    else:
        output.page()
        for h in hits:
            if events_only:
                click.echo(short(h["event"], 10))
                continue
            what = "" if h["kind"] == "event" else f" artifact {short(h['id'])}"
            click.echo(f"{style(short(h['event'], 10), fg='yellow')} {style(h['type'], bold=True)}"
                       f"{what}  {h['score']:.2f}")
            for line in h["lines"][:3]:
                click.echo(f"    {one_line(line, 160)}")
    if not hits:
        click.get_current_context().exit(1)


def _hit_id(h, with_session: bool) -> str:
    """The event's short id (`ctx show` opens it); with --all, its session in brackets."""
    return f"{short(h.event, 10)} [{short(h.session, 8)}]" if with_session else short(h.event, 10)


def _highlight(line: str, regex) -> str:
    return regex.sub(lambda m: style(m.group(0), fg="red", bold=True), line)


class _ReflogGroup(click.Group):
    """`ctx reflog [show] [REF]` and `ctx reflog expire ...`, as in git: anything that is not a
    subcommand name is a REF to show."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("-h", "--help")):
            args = ["show", *args]
        return super().parse_args(ctx, args)


@cli.group("reflog", cls=_ReflogGroup)
def reflog_group() -> None:
    """Every move of a ref, newest first (`ctx reflog [show] [REF]`); REF@{N} names entry N.
    `ctx reflog expire` prunes old entries.

    \b
    Examples:
      ctx reflog                      # HEAD's moves
      ctx reflog try-b                # a branch's, even after `ctx branch -d try-b`
      ctx reflog expire --dry-run
    """


@reflog_group.command("show")
@click.argument("ref", required=False)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def reflog_cmd(state, ref: str | None, as_json: bool) -> None:
    """Every move of REF (default HEAD), newest first; REF@{N} names entry N.

    \b
    Examples:
      ctx reflog
      ctx reflog main
      ctx reset main@{1}     # put main back where it was before its last move
    """
    name, entries = ph.reflog(state.repo, ref)
    if as_json:
        emit_json({"ref": name, "entries": entries})
        return
    output.page()
    parts = split_branch_ref(name)
    label = parts[1] if parts else name
    for e in entries:
        click.echo(f"{style(short(e['new'], 10), fg='yellow')} {label}@{{{e['index']}}}: "
                   f"{e['message']}  ({iso_from_ms(e['ts_ms'])}, {e['actor']})")
