"""Governed memory: `ctx memory add|list|show|edit|forget|search|review|reindex`.

The commands are thin: the rules (sources, scope, expiry or update policy) live in
ctxstore.memory, retrieval in ctxstore.retrieval; every write is one operation (`ctx undo`).
"""

from __future__ import annotations

import click

from .main import cli
from .render import emit_json, one_line, short, style

_EXPIRY_HELP = ("Every memory needs an expiry or an update policy (invariant 11): "
                "--ttl AGE (30d, 12h, 2w), --expires DATE, or --update-policy "
                "until-superseded | review-after:AGE.")


def _expiry_options(f):
    f = click.option("--update-policy", metavar="POLICY",
                     help="until-superseded, or review-after:AGE (not offered AGE after its last "
                          "confirmation until edited).")(f)
    f = click.option("--expires", metavar="DATE", help="Expire at DATE (ISO date or time).")(f)
    f = click.option("--ttl", metavar="AGE", help="Expire AGE from now (30d, 12h, 2w).")(f)
    return f


def _describe(mem, mid: str, status: str = "") -> str:
    until = f"until {mem.expires_at[:10]}" if mem.expires_at else mem.update_policy
    tag = f" [{status}]" if status and status != "live" else ""
    return (f"{style(short(mid), fg='yellow')} {style(mem.scope, fg='cyan')} {mem.kind} "
            f"({until}){tag}  {one_line(mem.content, 90)}")


@cli.group("memory")
def memory_group() -> None:
    """Governed memory: add, list, show, edit, forget, search, and review compaction's candidates.

    A memory has a scope (user, project, workspace, session, global), the sources it came from
    (events, messages, artifacts: required), and an expiry or update policy (required). It
    reaches a model only through the context builder (`ctx context --retrieve`), and only in
    sessions that see its scope. Every change is one operation: `ctx undo` reverts it.

    \b
    Examples:
      ctx memory add "Run the tests with make test" --scope project --source HEAD --ttl 90d
      ctx memory list
      ctx memory search "how to run tests"
      ctx memory review
    """


@memory_group.command("add")
@click.argument("text")
@click.option("--scope", help="user, project, workspace, session or global; SCOPE:KEY names "
                              "another project/workspace/session/user. Required.")
@click.option("--source", "sources", multiple=True, metavar="REF",
              help="An event, message or artifact it came from (id, prefix or revision such as "
                   "HEAD~2; repeatable). Required.")
@_expiry_options
@click.option("--kind", type=click.Choice(["preference", "fact", "instruction", "skill",
                                           "artifact_summary", "decision"]), default="fact",
              show_default=True)
@click.option("--confidence", type=click.FloatRange(0, 1), default=1.0, show_default=True)
@click.option("--keyword", "keywords", multiple=True, help="Search keyword (repeatable).")
@click.option("--priority", type=click.IntRange(0, 100), default=50, show_default=True)
@click.option("--sensitive", is_flag=True, help="Offered only to builds that admit sensitive material.")
@click.option("--readable-by", "readable_by", multiple=True, metavar="AGENT",
              help="Only this agent may be offered it (repeatable; default: every agent).")
@click.option("--json", "as_json", is_flag=True, help="The memory as JSON ({id, ...fields}).")
@click.pass_obj
def add_cmd(state, text, scope, sources, ttl, expires, update_policy, kind, confidence, keywords,
            priority, sensitive, readable_by, as_json) -> None:
    """Remember TEXT in a scope, with its sources and an expiry or update policy.

    Refused (exit 10) without --scope, without --source, or without one of --ttl, --expires,
    --update-policy.

    \b
    Examples:
      ctx memory add "Run the tests with make test" --scope project --source HEAD --ttl 90d
      ctx memory add "Prefers small commits" --scope user --source 3fa2c1 --update-policy until-superseded --kind preference
      ctx memory add "Staging DB is read-only" --scope project:/src/api --source HEAD~3 --expires 2027-01-31
    """
    from ctxstore.memory import MemorySpec, remember
    from ctxstore.repo.transaction import default_user

    repo = state.repo
    spec = MemorySpec(content=text, scope=scope, sources=list(sources), kind=kind, ttl=ttl,
                      expires=expires, update_policy=update_policy, confidence=confidence,
                      keywords=list(keywords), priority=priority, sensitive=sensitive,
                      readable_by=list(readable_by), author=f"user:{default_user()}",
                      origin={"via": "cli"})
    mid = remember(repo, spec)
    mem = repo.objects.get(mid)
    if as_json:
        emit_json({"id": mid, **mem.to_dict()})
    else:
        click.echo(f"Remembered {_describe(mem, mid)}")


@memory_group.command("list")
@click.option("--scope", help="Only this scope (SCOPE or SCOPE:KEY).")
@click.option("--history", is_flag=True, help="Also superseded and forgotten versions.")
@click.option("--json", "as_json", is_flag=True,
              help="An array of {id, status, event, used_in, ...fields}.")
@click.pass_obj
def list_cmd(state, scope, history, as_json) -> None:
    """Live memories of every scope (with --history, every version), by scope.

    \b
    Examples:
      ctx memory list
      ctx memory list --scope project --json
      ctx memory list --history
    """
    from ctxstore.memory import parse_scope, scope_keys, scope_logs, scope_ref

    repo = state.repo
    want = None
    if scope:
        want = scope_ref(*parse_scope(scope, scope_keys(repo)))
    logs = [log for log in scope_logs(repo) if want is None or log.ref == want]
    recs = [r for log in logs for r in log.records.values() if history or r.status == "live"]
    if as_json:
        emit_json([r.to_dict() for r in recs])
        return
    if not recs:
        click.echo("no memories" + (" in that scope" if scope else "") +
                   " (ctx memory add TEXT --scope SCOPE --source REF --ttl AGE)")
        return
    for log in logs:
        shown = [r for r in log.records.values() if history or r.status == "live"]
        if not shown:
            continue
        click.echo(style(f"{log.scope} {log.scope_key or ''}".rstrip(), bold=True))
        for r in shown:
            click.echo("  " + _describe(r.memory, r.id, r.status))


@memory_group.command("show")
@click.argument("memory")
@click.option("--json", "as_json", is_flag=True,
              help="{id, status, superseded_by, used_in, versions, ...fields}.")
@click.pass_obj
def show_cmd(state, memory, as_json) -> None:
    """Show MEMORY (id or prefix): fields, sources, its versions and where it was used.

    \b
    Examples:
      ctx memory show 3fa2c1d0
      ctx memory show 3fa2c1d0 --json
    """
    from ctxstore.memory import find_memory

    log, rec = find_memory(state.repo, memory)
    versions = []
    cur = rec
    while cur is not None:
        versions.append(cur)
        cur = log.records.get(cur.memory.supersedes)
    newer = rec
    while newer.superseded_by:
        newer = log.records[newer.superseded_by]
        versions.insert(0, newer)
    if as_json:
        emit_json({**rec.to_dict(), "versions": [{"id": v.id, "status": v.status,
                                                  "updated": v.memory.updated,
                                                  "content": v.memory.content} for v in versions]})
        return
    m = rec.memory
    click.echo(f"{style('memory ' + rec.id, fg='yellow')}  [{rec.status}]")
    for label, value in (("scope", f"{m.scope} {m.scope_key}".rstrip()), ("kind", m.kind),
                         ("confidence", f"{m.confidence:.2f}"), ("priority", str(m.priority)),
                         ("created", m.created), ("updated", m.updated),
                         ("expires", m.expires_at or "-"), ("policy", m.update_policy or "-"),
                         ("sensitive", "yes" if m.sensitive else "no"),
                         ("readable by", ", ".join(m.readable_by) or "every agent"),
                         ("keywords", ", ".join(m.keywords) or "-"), ("author", m.author or "-")):
        click.echo(f"  {label + ':':<12} {value}")
    click.echo("  sources:")
    for s in m.source_refs:
        click.echo(f"    {s}  ({state.repo.objects.type_of(s)})")
    click.echo("")
    for line in m.content.splitlines():
        click.echo(f"    {line}")
    if len(versions) > 1:
        click.echo("\n  versions (newest first):")
        for v in versions:
            click.echo(f"    {short(v.id)} {v.status:<10} {v.memory.updated}  {one_line(v.memory.content, 60)}")
    if rec.used_in:
        click.echo(f"\n  used in {len(rec.used_in)} recorded bundle(s):")
        for bundle, event in rec.used_in[-10:]:
            click.echo(f"    bundle {short(bundle)} (ContextBuilt {short(event)})")


@memory_group.command("edit")
@click.argument("memory")
@click.argument("text", required=False)
@click.option("--source", "sources", multiple=True, metavar="REF",
              help="Replace the sources (repeatable).")
@_expiry_options
@click.option("--kind", type=click.Choice(["preference", "fact", "instruction", "skill",
                                           "artifact_summary", "decision"]))
@click.option("--confidence", type=click.FloatRange(0, 1))
@click.option("--keyword", "keywords", multiple=True, help="Replace the keywords (repeatable).")
@click.option("--priority", type=click.IntRange(0, 100))
@click.option("--sensitive/--not-sensitive", default=None)
@click.option("--json", "as_json", is_flag=True, help="The new version as JSON.")
@click.pass_obj
def edit_cmd(state, memory, text, sources, ttl, expires, update_policy, kind, confidence,
             keywords, priority, sensitive, as_json) -> None:
    """Write a new version of MEMORY (with TEXT and/or changed fields); it supersedes the old.

    With no change it re-confirms the memory (a new `updated` time: a stale review-after
    memory is offered again). The old version stays as history.

    \b
    Examples:
      ctx memory edit 3fa2c1d0 "Run the tests with make check"
      ctx memory edit 3fa2c1d0 --ttl 180d --confidence 0.9
    """
    from ctxstore.memory import edit

    repo = state.repo
    mid = edit(repo, memory, content=text, sources=list(sources), ttl=ttl, expires=expires,
               update_policy=update_policy, kind=kind, confidence=confidence,
               keywords=list(keywords) or None, priority=priority, sensitive=sensitive)
    mem = repo.objects.get(mid)
    if as_json:
        emit_json({"id": mid, **mem.to_dict()})
    else:
        click.echo(f"New version {_describe(mem, mid)}\n  supersedes {short(mem.supersedes)}")


@memory_group.command("forget")
@click.argument("memory")
@click.option("--reason", default="", help="Why (kept in the history).")
@click.option("--json", "as_json", is_flag=True, help="{id, status, ...}.")
@click.pass_obj
def forget_cmd(state, memory, reason, as_json) -> None:
    """Stop offering MEMORY; its versions stay as history (`ctx undo` brings it back).

    \b
    Examples:
      ctx memory forget 3fa2c1d0 --reason "the Makefile changed"
    """
    from ctxstore.memory import forget

    rec = forget(state.repo, memory, reason=reason)
    if as_json:
        emit_json({"id": rec.id, "status": "forgotten", "reason": reason})
    else:
        click.echo(f"Forgot {style(short(rec.id), fg='yellow')}  {one_line(rec.memory.content, 70)}")


@memory_group.command("search")
@click.argument("query")
@click.option("-k", "--limit", "k", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--all-scopes", is_flag=True,
              help="Every live memory of every scope (for you, not a model: no scope, "
                   "sensitivity or trust filter; expired ones still left out).")
@click.option("--agent", default="", help="Search as this agent (readable_by).")
@click.option("--json", "as_json", is_flag=True, help="An array of {id, score, ...fields}.")
@click.pass_obj
def search_cmd(state, query, k, all_scopes, agent, as_json) -> None:
    """Memories relevant to QUERY that the current session may be offered, best first.

    The same bm25s index and the same checks as the context builder (scope, liveness, expiry,
    sensitivity, readable_by, confidence); needs `pip install 'ctxstore[memory]'`.

    \b
    Examples:
      ctx memory search "run the tests"
      ctx memory search deploy --all-scopes --json
    """
    from ctxstore.memory import scope_keys
    from ctxstore.memory.governance import now_dt, offerable
    from ctxstore.memory.log import live_memories
    from ctxstore.retrieval import RetrievalIndex, search_memories

    repo = state.repo
    index = RetrievalIndex.open(repo)
    if all_scopes:
        live = {r.id: r.memory for r in live_memories(repo)}
        now = now_dt()
        found = [(row.id, live[row.id], score)
                 for row, score in index.search(query, k=4 * k + 32, kinds=["memory"])
                 if row.id in live and not offerable(live[row.id], now)][:k]
    else:
        found = search_memories(repo, index, query, scope_keys(repo), k=k, agent=agent,
                                min_confidence=0.0)
    if as_json:
        emit_json([{"id": mid, "score": round(score, 4), **mem.to_dict()} for mid, mem, score in found])
        return
    if not found:
        click.echo("no memory matches" + ("" if all_scopes else " in the scopes this session sees "
                                          "(--all-scopes searches every scope)"))
        click.get_current_context().exit(1)
    for mid, mem, score in found:
        click.echo(f"{score:6.2f} {_describe(mem, mid)}")


@memory_group.command("reindex")
@click.option("--json", "as_json", is_flag=True, help="{rows, how}.")
@click.pass_obj
def reindex_cmd(state, as_json) -> None:
    """Rebuild the retrieval index (a derived cache under .ctx/cache/retrieval) from the refs.

    Never needed for correctness: a stale index catches up and a damaged one is rebuilt on use.

    \b
    Examples:
      ctx memory reindex
    """
    from ctxstore.retrieval import RetrievalIndex

    index = RetrievalIndex.open(state.repo, rebuild=True)
    if as_json:
        emit_json({"rows": len(index.rows), "how": index.how})
    else:
        click.echo(f"Indexed {len(index.rows):,} rows (memories, artifacts, events): {index.how}")


# -- review ------------------------------------------------------------------------------------

@memory_group.group("review", invoke_without_command=True)
@click.option("--scan", is_flag=True,
              help="First queue compactions with candidates that are not queued yet (older "
                   "or imported ones).")
@click.option("--json", "as_json", is_flag=True, help="An array of pending {key, compaction, "
                                                       "index, content, kind, source_refs, ...}.")
@click.pass_context
def review_group(ctx, scan, as_json) -> None:
    """Memory candidates from compactions, and memories received with a pack, waiting for
    review (never promoted automatically; a received one is marked with its origin and
    offered nowhere until accepted into a scope of this store).

    Without a subcommand, list what is pending; each candidate is named COMPACTION:N (or
    QUEUE-EVENT:N for a received memory).

    \b
    Examples:
      ctx memory review
      ctx memory review accept 3fa2c1d0e4b5:0 --scope project --ttl 90d
      ctx memory review edit 3fa2c1d0e4b5:1 "Use uv, not pip" --scope user --update-policy until-superseded
      ctx memory review reject 3fa2c1d0e4b5:2 --reason "a guess"
    """
    if ctx.invoked_subcommand is not None:
        return
    from ctxstore.memory import review

    repo = ctx.obj.repo
    if scan:
        n = review.enqueue(repo, review.scan(repo))
        if not as_json:
            click.echo(f"queued {n} compaction(s) with candidates")
    items = review.pending(repo)
    if as_json:
        emit_json([c.to_dict() for c in items])
        return
    if not items:
        click.echo("no memory candidates waiting for review")
        return
    for c in items:
        click.echo(f"{style(c.key, fg='yellow')} {c.kind} (confidence {c.confidence:.2f}, "
                   f"{len(c.source_refs)} source(s))  {one_line(c.content, 90)}")


def _accept(state, key, text, scope, ttl, expires, update_policy, kind, as_json) -> None:
    from ctxstore.memory import review

    repo = state.repo
    mid = review.accept(repo, key, scope=scope, ttl=ttl, expires=expires,
                        update_policy=update_policy, content=text, kind=kind)
    mem = repo.objects.get(mid)
    if as_json:
        emit_json({"id": mid, **mem.to_dict()})
    else:
        click.echo(f"Accepted {key} as {_describe(mem, mid)}")


def _accept_options(f):
    f = click.option("--json", "as_json", is_flag=True, help="The memory written, as JSON.")(f)
    f = click.option("--kind", type=click.Choice(["preference", "fact", "instruction", "skill",
                                                  "artifact_summary", "decision"]))(f)
    f = _expiry_options(f)
    f = click.option("--scope", help="The scope to write it to (required).")(f)
    return f


@review_group.command("accept")
@click.argument("candidate")
@_accept_options
@click.pass_obj
def review_accept_cmd(state, candidate, scope, ttl, expires, update_policy, kind, as_json) -> None:
    """Write CANDIDATE (COMPACTION:N) as a memory; its sources are its own plus the compaction.

    \b
    Examples:
      ctx memory review accept 3fa2c1d0e4b5:0 --scope project --ttl 90d
    """
    _accept(state, candidate, None, scope, ttl, expires, update_policy, kind, as_json)


@review_group.command("edit")
@click.argument("candidate")
@click.argument("text")
@_accept_options
@click.pass_obj
def review_edit_cmd(state, candidate, text, scope, ttl, expires, update_policy, kind, as_json) -> None:
    """Accept CANDIDATE (COMPACTION:N) with TEXT in place of its content.

    \b
    Examples:
      ctx memory review edit 3fa2c1d0e4b5:1 "Use uv, not pip" --scope user --update-policy until-superseded
    """
    _accept(state, candidate, text, scope, ttl, expires, update_policy, kind, as_json)


@review_group.command("reject")
@click.argument("candidate")
@click.option("--reason", default="", help="Why (kept in the review history).")
@click.option("--json", "as_json", is_flag=True, help="The rejected candidate as JSON.")
@click.pass_obj
def review_reject_cmd(state, candidate, reason, as_json) -> None:
    """Reject CANDIDATE (COMPACTION:N): it is never offered for review again.

    \b
    Examples:
      ctx memory review reject 3fa2c1d0e4b5:2 --reason "a guess, not a fact"
    """
    from ctxstore.memory import review

    c = review.reject(state.repo, candidate, reason=reason)
    if as_json:
        emit_json({**c.to_dict(), "decision": "reject", "reason": reason})
    else:
        click.echo(f"Rejected {c.key}  {one_line(c.content, 80)}")
