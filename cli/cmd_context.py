"""The Context Manager's views: state, context, trace, stats, artifact, cat."""

from __future__ import annotations

import sys

import click

from ctxstore.porcelain import context as pc

from .main import cli
from .render import emit_json, one_line, short, style

TIER_COLORS = {"P0": "red", "P1": "yellow", "P2": "cyan", "P3": "blue"}


@cli.command("state")
@click.argument("rev", required=False)
@click.option("--json", "as_json", is_flag=True, help="The whole AgentState as JSON.")
@click.pass_obj
def state_cmd(state, rev: str | None, as_json: bool) -> None:
    """The working state projected from events at REV (default HEAD): goal, plan, constraints,
    facts, decisions, files, errors, open questions.

    \b
    Examples:
      ctx state
      ctx state HEAD~20
      ctx state --json | jq .files
    """
    st = pc.state(state.repo, rev)
    d = st.to_dict()
    if as_json:  # sorted as a stored snapshot is: the same bytes whether or not one was used
        emit_json(d, sort_keys=True)
        return
    g = d["goal"]
    if d.get("title"):
        click.echo(style("Title: ", bold=True) + d["title"])
    click.echo(style("Goal: ", bold=True) + (g["user_goal"] or "(none)"))
    click.echo(style("Current task: ", bold=True) + (g["current_task"] or "(none)"))
    plan = d["plan"]
    click.echo(style(f"Plan ({plan['status']}):", bold=True))
    for s in plan["steps"]:
        click.echo(f"  [{s.get('status', '')}] {s.get('text', '')}")
    c = d["constraints"]
    for kind in ("hard", "soft", "preferences"):
        for item in c[kind]:
            click.echo(f"  {kind}: {item}")
    for f in d["facts"]:
        conf = f.get("confidence", 1.0)
        click.echo(style("Fact: ", bold=True) + f["content"]
                   + (f"  (confidence {conf:g})" if conf != 1.0 else ""))
    for dec in d["decisions"]:
        click.echo(style("Decision: ", bold=True) + dec["decision"]
                   + (f"  (because: {dec['rationale']})" if dec.get("rationale") else ""))
    files = d["files"]
    if files["read"] or files["modified"]:
        click.echo(style("Files:", bold=True))
        for f in files["read"]:
            click.echo(f"  read      {f['path']}")
        for f in files["modified"]:
            click.echo(f"  modified  {f['path']}  {f.get('change_summary', '')}")
    for e in d["errors"]:
        click.echo(style("Error: ", fg="red") + f"{e.get('name', '')} {e.get('error', '')[:100]}"
                   + (" (retried)" if e.get("retried") else ""))
    for a in d.get("subagents", ()):
        click.echo(style("Subagent: ", bold=True) + f"{a['name']} {a['description'][:80]} "
                   f"({a['status']})")
    pending = d["tool_calls"]["pending"]
    if pending:
        click.echo(style("Pending tool calls: ", bold=True) + ", ".join(pending))
    for tcid, call in d["tool_calls"].get("abandoned", {}).items():
        click.echo(style("Abandoned tool call: ", fg="yellow") + f"{tcid} {call.get('name', '')}"
                   f" ({call.get('reason', '')})")
    for q in d["open_questions"]:
        click.echo(style("Open question: ", bold=True) + q)
    click.echo(f"({d['version']} events folded; at {short(d['source_event'])})")


def _bar(used: int, total: int, width: int = 40) -> str:
    n = 0 if total <= 0 else min(width, round(width * used / total))
    return "█" * n + "·" * (width - n)


@cli.command("context")
@click.argument("rev", required=False)
@click.option("--budget", type=click.IntRange(min=1), default=None,
              help="Max tokens (default: the session's context window).")
@click.option("--format", "fmt", type=click.Choice(pc.FORMATS), default="neutral",
              show_default=True, help="Print the payload a provider would receive (with --json).")
@click.option("--system", "system_prompt", default=None, help="A system prompt to include (P0).")
@click.option("--explain", is_flag=True, help="List every segment: kept or dropped, tier, tokens, reason, sources.")
@click.option("--record", is_flag=True, help="Store the bundle and append a ContextBuilt event naming it.")
@click.option("--truncate-system", is_flag=True,
              help="If system/developer messages alone overflow the budget, cut them to fit "
                   "(a marker says so) instead of failing.")
@click.option("--retrieve/--no-retrieve", default=None,
              help="Offer memories and artifacts relevant to the current task (P2, through the "
                   "scope/trust/freshness checks; needs ctxstore[memory]). Default: the session "
                   "config's `retrieval`.")
@click.option("--query", default=None, help="What to retrieve for (default: the current request, "
                                            "goal, task and open plan).")
@click.option("--agent", default="", help="Retrieve as this agent (a memory's readable_by).")
@click.option("--json", "as_json", is_flag=True,
              help="neutral: the bundle (used_tokens, max_tokens, tokenizer, segments...); "
                   "openai/anthropic: the provider payload.")
@click.pass_obj
def context_cmd(state, rev, budget, fmt, system_prompt, explain, record, truncate_system,
                retrieve, query, agent, as_json) -> None:
    """What the model would see at REV under a token budget, and why.

    \b
    Tiers: P0 never dropped (system, current request, open tool pairs); P1 goal, plan,
    recent turns; P2 decisions, facts, memory, artifacts; P3 verbose output, chatter.

    \b
    Examples:
      ctx context --budget 8000 --explain
      ctx context --format anthropic --json > request.json
      ctx context HEAD~5 --budget 4000 --record
      ctx context --retrieve --explain
    """
    bundle, report = pc.context_report(state.repo, rev, budget, system_prompt, record,
                                       truncate_system, retrieve=retrieve, query=query,
                                       agent=agent)
    if as_json:
        emit_json(pc.render_payload(bundle, fmt))
        return
    if fmt != "neutral":
        emit_json(pc.render_payload(bundle, fmt))
        return
    avail = bundle.available_tokens
    click.echo(style(f"Context: {bundle.used_tokens:,} / {avail:,} tokens", bold=True)
               + f"  ({bundle.max_tokens:,} window - {bundle.reserved_output:,} reserved for output;"
               f" counted with {bundle.tokenizer})")
    click.echo(f"  {_bar(bundle.used_tokens, avail)}  {100 * bundle.used_tokens / max(avail, 1):.1f}%")
    usage = bundle.usage
    click.echo(style("By tier:", bold=True))
    for tier, u in sorted(usage.get("by_tier", {}).items()):
        click.echo(f"  {style(tier, fg=TIER_COLORS.get(tier, 'white'))}  {_bar(u.get('kept', 0), avail, 30)} "
                   f"{u.get('kept', 0):>8,} kept  {u.get('dropped', 0):>8,} dropped")
    click.echo(style("By kind:", bold=True))
    for kind, u in sorted(usage.get("by_kind", {}).items(), key=lambda kv: -kv[1].get("kept", 0)):
        click.echo(f"  {kind:<18} {u.get('kept', 0):>8,} kept  {u.get('dropped', 0):>8,} dropped")
    if bundle.redactions:
        n = sum(sum(r["redactions"].values()) for r in bundle.redactions)
        w = sum(1 for r in bundle.redactions if r["withheld"])
        click.echo(f"Redaction: {n} secret(s) replaced, {w} sensitive segment(s) withheld"
                   f"{'; --explain names each' if not explain else ''}")
    dropped = bundle.dropped
    if dropped:
        click.echo(f"{len(dropped)} segment(s) dropped; --explain says why.")
    if explain:
        from ctxstore.context.bundle import redaction_notes

        click.echo(style("Segments (model order):", bold=True))
        for s in bundle.segments:
            mark = style("+", fg="green") if s.kept else style("-", fg="red")
            click.echo(f"{mark} {style(s.tier_name, fg=TIER_COLORS.get(s.tier_name, 'white'))} "
                       f"{s.kind:<17} {s.tokens:>7}  {s.reason}")
            srcs = ", ".join(short(x) if len(x) == 64 else x for x in s.sources)
            click.echo(f"      sources: {srcs}" + (f"  tool_call_id: {s.tool_call_id}" if s.tool_call_id else ""))
            got = s.data.get("retrieved")
            if got:
                click.echo(f"      retrieved: {got['kind']} {short(got['id'])} score {got['score']}"
                           + (f" ({got['scope']} scope)" if got.get("scope") else ""))
            for note in redaction_notes(s):
                click.echo(f"      {style(note, fg='yellow')}")
        if report is not None:
            click.echo(style("Retrieval:", bold=True) + f" query {one_line(report.query, 70)!r}; "
                       f"index {report.index}; {len(report.offered)} offered, "
                       f"{len(report.refused)} refused")
            for r in report.refused:
                click.echo(f"  - {r['kind']} {short(r['id'])}: {r['reason']}")


@cli.command("trace")
@click.argument("rev", required=False)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def trace_cmd(state, rev, as_json) -> None:
    """The reasoning trace at REV: goal, assumptions, decisions, evidence, actions, validation.

    \b
    Examples:
      ctx trace
      ctx trace try-b --json
    """
    t = pc.trace(state.repo, rev)
    if as_json:
        emit_json(t)
        return
    click.echo(style("Goal: ", bold=True) + (t["goal"] or "(none)"))
    click.echo(style("Current task: ", bold=True) + (t["current_task"] or "(none)"))
    for title, key, fmt in (
        ("Assumptions", "assumptions", lambda a: f"{a.get('content')} (confidence {a.get('confidence')})"),
        ("Decisions", "decisions", lambda d: f"{d.get('decision')} — {d.get('rationale', '')}"),
        ("Evidence", "evidence", lambda e: f"[{e['kind']}] {e['summary'][:80]}  ({short(e['ref'])})"),
        ("Actions", "actions", lambda a: f"{a['action_type']}: {a.get('name') or a.get('path') or a['type']}"
                                        + (f" -> {short(a['result_event'])}" if a.get("result_event") else "")),
        ("Validation", "validation", lambda v: f"{v['check']}: {v['result']}"),
        ("Next steps", "next_steps", lambda s: f"[{s.get('status', '')}] {s.get('text', '')}"),
        ("Open questions", "open_questions", str),
    ):
        items = t[key]
        click.echo(style(f"{title} ({len(items)}):", bold=True))
        for it in items:
            click.echo(f"  {fmt(it)}")


@cli.command("stats")
@click.argument("rev", required=False)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def stats_cmd(state, rev, as_json) -> None:
    """Tokens spent by the session, and compaction, tool and context-build counters along
    REV's history.

    Tokens are the whole session's (every branch; `token_usage`), then REV's branch's own
    share (`branch_token_usage`). Input tokens are everything the provider processed, cache
    reads and cache writes included (also shown apart); a response the transcript repeats, or
    that two branches share, counts once; a harness's running total (Codex) counts as its
    newest value on each line. `--json` adds `by_model`.

    \b
    Examples:
      ctx stats
      ctx stats SESSION/main --json | jq .token_usage
      ctx stats --json | jq .branch_token_usage
    """
    s = pc.stats(state.repo, rev)
    if as_json:
        emit_json(s)
        return
    click.echo(f"Events: {s['events']}")
    tu, tools, comp = s["token_usage"], s["tools"], s["compression"]
    n = tu.get("branches", 1)
    click.echo(f"Tokens (session, {n} branch{'es' if n != 1 else ''}): {_tokens_line(tu)}"
               + f"; last context {tu['context_used_tokens']:,} of {tu['context_window_tokens']:,}")
    if n != 1 or s["branch_token_usage"]["input_tokens"] != tu["input_tokens"]:
        click.echo(f"Tokens (this branch): {_tokens_line(s['branch_token_usage'])}")
    for model, m in tu["by_model"].items():
        click.echo(f"  {model:<28} {m['input_tokens']:>12,} in {m['output_tokens']:>10,} out"
                   + (f"  ${m['cost_usd']:.4f}" if m.get("cost_usd") is not None else ""))
    click.echo(f"Tools: {tools['tool_call_count']} calls, {tools['failed_tool_call_count']} failed, "
               f"{tools['approval_requested_count']} approvals asked, "
               f"{tools['approval_granted_count']} granted, {tools['approval_denied_count']} denied")
    click.echo(f"Compactions: {comp['compaction_count']}"
               + (f" (last {comp['tokens_before_last']:,} -> {comp['tokens_after_last']:,} tokens)"
                  if comp["tokens_before_last"] else ""))
    click.echo(f"Context builds recorded: {s['context_builds']}")
    for t, n in sorted(s["by_type"].items(), key=lambda kv: -kv[1]):
        click.echo(f"  {t:<28} {n}")


def _tokens_line(tu: dict) -> str:
    return (f"{tu['input_tokens']:,} in ({tu['cache_read_tokens']:,} cache read, "
            f"{tu['cache_write_tokens']:,} cache write), {tu['output_tokens']:,} out"
            + (f", ${tu['cost_usd']:.4f}" if tu.get("cost_usd") is not None else ""))


@cli.group("artifact")
def artifact_group() -> None:
    """Large evidence stored whole, outside the prompt.

    \b
    Examples:
      ctx artifact add build.log --kind log --summary "CI run 812"
      ctx cat 3e7a91c0 | less
    """


@artifact_group.command("add")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--kind", default="file", show_default=True)
@click.option("--summary", default="")
@click.option("--sensitive", is_flag=True,
              help="Keep it out of built contexts unless the session's redaction policy "
                   "admits sensitive material (docs/redaction.md).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def artifact_add(state, file, kind, summary, sensitive, as_json) -> None:
    """Store FILE as an artifact (content stored once by hash, chunked when large) and record an
    ArtifactAdded event on the current branch; prints the artifact id.

    \b
    Examples:
      ctx artifact add build.log --kind log --summary "CI run 812"
      ctx artifact add screenshot.png --kind image --json
      ctx artifact add customers.csv --sensitive
    """
    from ctxstore.porcelain.inputs import open_input

    open_input(file).close()  # missing: NotFound (3); unreadable: IOFailure (16)
    res = pc.artifact_add(state.repo, file, kind, summary, sensitive)
    if res["event"] is None:
        click.echo("ctx: warning: no branch checked out, so no event names this artifact; "
                   "gc will remove it after its grace period", err=True)
    if as_json:
        emit_json(res)
    else:
        click.echo(res["artifact"])


@cli.command("cat")
@click.argument("object_id")
@click.pass_obj
def cat_cmd(state, object_id) -> None:
    """Write the raw bytes of an artifact's content (or a blob) to stdout.

    \b
    Examples:
      ctx cat 3e7a91c0 > output.txt   # an artifact `ctx show` names
      ctx cat 3e7a91c0 | grep -n FAIL
    """
    out = sys.stdout.buffer
    for piece in pc.cat(state.repo, object_id):
        out.write(piece)
    out.flush()
