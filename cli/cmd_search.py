"""ctx search: the ranked, indexed search over every session (ctxstore/search, docs/search.md)."""

from __future__ import annotations

import click

from . import output
from .main import cli
from .render import emit_json, short, style
from .timeopts import point_in_time


@cli.command("search")
@click.argument("query", required=False)
@click.option("-n", "--limit", type=click.IntRange(min=1), default=20, show_default=True,
              help="How many hits, best first.")
@click.option("--format", "--harness", "harness", metavar="HARNESS",
              help="Only sessions imported from HARNESS (claude-code, codex, ...; `ctx` for "
                   "sessions made here).")
@click.option("--cwd", metavar="DIR", help="Only sessions whose working directory is DIR or "
                                           "lies under it.")
@click.option("--since", metavar="WHEN", help="Only events at or after WHEN (2026-02-16, 3d, "
                                              "'2 hours ago'), as `ctx log --since`.")
@click.option("--until", metavar="WHEN", help="Only events at or before WHEN.")
@click.option("--type", "types", multiple=True,
              type=click.Choice(["prompt", "response", "tool-call", "tool-result", "summary",
                                 "memory", "other"]),
              help="Only hits of this kind (repeatable).")
@click.option("--tool", metavar="NAME", help="Only tool calls and results of tool NAME "
                                             "(case-insensitive).")
@click.option("--file", "file_", metavar="PATH",
              help="Only events that read or modified PATH (a tool call's file effects, "
                   "FileRead/FileWritten); a relative PATH matches its trailing components.")
@click.option("--session", metavar="SESSION", help="Only SESSION (an id or unique prefix).")
@click.option("--branch", metavar="BRANCH", help="Only events on a branch named BRANCH.")
@click.option("--reindex", is_flag=True,
              help="Throw the index away and build it again from the refs (then search, if a "
                   "QUERY is given).")
@click.option("--json", "as_json", is_flag=True,
              help="An array of {event, session, branch, type, event_type, score, snippet, ts, "
                   "source: {file, line}, replaced_by, tool}.")
@click.pass_obj
def search_cmd(state, query, limit, harness, cwd, since, until, types, tool, file_, session,
               branch, reindex, as_json) -> None:
    """Ranked full-text search of every session, branch, compaction summary, memory and
    artifact text, from an index (SQLite FTS5, BM25).

    One line per hit, best first: `EVENT [SESSION] TYPE when: snippet`, each match between
    « »; `ctx show EVENT` opens it (a memory: `ctx memory show ID`). A hit on an event a
    compaction replaced says `(replaced by COMPACTION)`. Exit 1 when nothing matches.

    Bare words are looked for as written (`test_parser.py` needs no quotes) and match their
    stems (parse, parser, parsing); "an exact phrase", prefix* and AND / OR / NOT work as in
    SQLite FTS5. A question of bare words lists the events holding every word first, then
    those holding some of them. The index lives in .ctx/cache/search/ and catches up with
    the store on every search; --reindex rebuilds it (docs/search.md).

    Use `ctx search` to find where something was discussed or done, by relevance, across
    everything; use `ctx grep` for every exact line matching a regular expression (a scan of
    one history, or all with --all, no index).

    \b
    Examples:
      ctx search 'flaky parser test'
      ctx search '"cache invalidation"' --type summary --since 'last week'
      ctx search pytest --tool Bash --harness claude-code -n 5
      ctx search parse* --file src/parser.py --json
      ctx search --reindex
    """
    from ctxstore.search import SearchFilters, SearchUnavailable, search
    from ctxstore.search import reindex as rebuild

    repo = state.repo
    if not query and not reindex:
        raise click.UsageError("give a QUERY (or --reindex)")
    if reindex:
        st = rebuild(repo)
        if not query:
            if as_json:
                emit_json(st.to_dict())
            else:
                click.echo(f"indexed {st.events_added} events and {st.memories} memories "
                           f"into {st.path}")
            return
    filters = SearchFilters(harness=harness, cwd=cwd, since=point_in_time(since, "--since"),
                            until=point_in_time(until, "--until"), types=tuple(types), tool=tool,
                            file=file_, session=repo.resolve_session(session) if session else None,
                            branch=branch)
    try:
        hits = search(repo, query, limit=limit, filters=filters)
    except SearchUnavailable as exc:
        click.echo(f"warning: {exc}; scanning instead", err=True)
        _scan(repo, query, limit, as_json)
        return
    if as_json:
        emit_json([h.to_dict() for h in hits])
    else:
        output.page()
        for h in hits:
            sess = f" [{short(h.session, 12)}]" if h.session else ""
            when = h.ts[:16].replace("T", " ") if h.ts else ""
            rep = style(f" (replaced by {short(h.replaced_by, 12)})", dim=True) \
                if h.replaced_by else ""
            click.echo(f"{style(short(h.event, 12), fg='yellow')}{sess} "
                       f"{style(h.type, bold=True)} {when}:{rep} {_marked(h.snippet)}")
    if not hits:
        click.get_current_context().exit(1)


def _marked(snippet: str) -> str:
    """The snippet with each «match» coloured on a terminal (the marks stay when piped)."""
    parts = snippet.replace("»", "«").split("«")
    return "".join(style(f"«{p}»", fg="red", bold=True) if i % 2 else p
                   for i, p in enumerate(parts))


def _scan(repo, query: str, limit: int, as_json: bool) -> None:
    """Without FTS5: `ctx grep --all -i -F` on the query, the same one-line shape."""
    import itertools
    import re

    from ctxstore.porcelain.search import grep, grep_tips

    hits = list(itertools.islice(grep(repo, re.compile(re.escape(query), re.IGNORECASE),
                                      grep_tips(repo, None, True)), limit))
    if as_json:
        emit_json([h.to_dict() for h in hits])
    else:
        for h in hits:
            click.echo(f"{short(h.event, 12)} [{short(h.session or '', 12)}] {h.type}: "
                       f"{h.line[:200]}")
    if not hits:
        click.get_current_context().exit(1)
