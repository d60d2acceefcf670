"""Reading history: log, show, diff, reflog."""

from __future__ import annotations

import json

import click

from ctxstore.clock import iso_from_ms
from ctxstore.porcelain import compaction as pco
from ctxstore.porcelain import context as pc
from ctxstore.porcelain import history as ph
from ctxstore.refs import split_branch_ref

from .main import cli
from .render import emit_json, event_summary, graph_lines, short, style


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


@cli.command("log")
@click.argument("rev", required=False)
@click.option("-n", "--max-count", "n", type=click.IntRange(min=0), default=None,
              help="Show at most N events.")
@click.option("--oneline", is_flag=True, help="One line per event: id, type, summary.")
@click.option("--graph", is_flag=True, help="Draw the DAG like `git log --graph`.")
@click.option("--all", "all_", is_flag=True, help="All branches of the current session.")
@click.option("--first-parent", is_flag=True, help="Follow only first parents.")
@click.option("--json", "as_json", is_flag=True,
              help="An array, newest first: id, type, actor, parents, generation, ts, payload, causality.")
@click.pass_obj
def log_cmd(state, rev, n, oneline, graph, all_, first_parent, as_json) -> None:
    """Show events newest first from REV (default HEAD)."""
    repo = state.repo
    events = ph.log(repo, rev, n, all_, first_parent)
    compacted = pco.compacted_events(repo, events)
    if as_json:
        emit_json([{**ph.event_dict(i, e), **({"compacted_by": compacted[i]} if i in compacted else {})}
                   for i, e in events])
        return
    deco = _decorations(repo)
    rows = graph_lines(events) if graph else (("", i, e) for i, e in events)
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
                       f"{style(ev.type, bold=True)} {event_summary(ev, 60)}")
        else:
            click.echo(style(f"event {eid}", fg="yellow") + dec + merge)
            click.echo(f"Type:   {ev.type}   Actor: {ev.actor}   Generation: {ev.generation}")
            click.echo(f"Date:   {ev.ts}")
            summary = event_summary(ev, 200)
            if summary:
                click.echo(f"\n    {summary}")
            click.echo("")


@cli.command("show")
@click.argument("rev")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def show_cmd(state, rev: str, as_json: bool) -> None:
    """Show an event or any object (by revision, id or unique prefix)."""
    info = ph.show(state.repo, rev)
    if as_json:
        emit_json(info)
        return
    click.echo(style(f"{info['type']} {info['id']}", fg="yellow"))
    click.echo(json.dumps(info["content"], indent=2, ensure_ascii=False, default=str))


@cli.command("diff")
@click.argument("a")
@click.argument("b")
@click.option("--json", "as_json", is_flag=True,
              help="{a, b, merge_base, only_a: [...], only_b: [...]} (events newest first).")
@click.pass_obj
def diff_cmd(state, a: str, b: str, as_json: bool) -> None:
    """Compare two revisions from their merge base: events only in A, only in B."""
    d = ph.diff(state.repo, a, b)
    sdiff = pc.state_diff_at(state.repo, a, b)
    if as_json:
        emit_json({**d.to_dict(), "state": sdiff})
        return
    click.echo(f"merge base: {short(d.base) if d.base else '(none: unrelated histories)'}")
    for label, events, color in ((a, d.only_a, "red"), (b, d.only_b, "green")):
        click.echo(style(f"only in {label} ({len(events)} events):", bold=True))
        for eid, ev in events:
            click.echo(style(f"  {short(eid, 10)} {ev.type}", fg=color) + f" {event_summary(ev, 60)}")
    if sdiff:
        click.echo(style("state differences:", bold=True))
        for section, change in sdiff.items():
            click.echo(f"  {section}: {json.dumps(change, ensure_ascii=False, default=str)[:300]}")


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
    `ctx reflog expire` prunes old entries."""


@reflog_group.command("show")
@click.argument("ref", required=False)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def reflog_cmd(state, ref: str | None, as_json: bool) -> None:
    """Every move of REF (default HEAD), newest first; REF@{N} names entry N."""
    name, entries = ph.reflog(state.repo, ref)
    if as_json:
        emit_json({"ref": name, "entries": entries})
        return
    parts = split_branch_ref(name)
    label = parts[1] if parts else name
    for e in entries:
        click.echo(f"{style(short(e['new'], 10), fg='yellow')} {label}@{{{e['index']}}}: "
                   f"{e['message']}  ({iso_from_ms(e['ts_ms'])}, {e['actor']})")
