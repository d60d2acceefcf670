"""`ctx demo`: the README's main job."""

from __future__ import annotations

import tempfile

import click

from ctxstore.errors import StoreNotFound
from ctxstore.porcelain.demo import run_demo
from ctxstore.repo import Repository

from .cmd_context import context_cmd, state_cmd
from .cmd_history import log_cmd
from .main import cli
from .render import emit_json, style


@cli.command("demo")
@click.option("--json", "as_json", is_flag=True, help="Print {store, session, steps, ...} only.")
@click.pass_context
def demo_cmd(ctx: click.Context, as_json: bool) -> None:
    """Run a scripted coding-agent session (the seed's agent fixing a failing test) through the
    public API, then show the log graph, the state and the context composition.

    Uses the store found as usual; with none, a new temporary one (it says where). No network,
    no model, deterministic.

    \b
    Examples:
      ctx demo                        # in a temporary store it names
      ctx init && ctx demo            # in .ctx here, to explore with ctx log --graph
    """
    state = ctx.obj
    try:
        repo = state.repo
    except StoreNotFound:
        where = tempfile.mkdtemp(prefix="ctx-demo-")
        repo = Repository.init(where)
        state._repo = repo
        if not as_json:
            click.echo(f"No store found here; using a new temporary store at {repo.path}")
    say = (lambda s: None) if as_json else (lambda s: click.echo(style("• ", fg="green") + s))
    res = run_demo(repo, say)
    if as_json:
        emit_json(res.__dict__)
        return
    click.echo(style(f"\nSession {res.session} in {res.store}", bold=True))
    click.echo(style("\n$ ctx log --graph --all", bold=True))
    ctx.invoke(log_cmd, rev=None, n=None, oneline=False, graph=True, all_=True,
               first_parent=False, as_json=False)
    click.echo(style("\n$ ctx state", bold=True))
    ctx.invoke(state_cmd, rev=None, as_json=False)
    click.echo(style("\n$ ctx context --budget 2000", bold=True))
    ctx.invoke(context_cmd, rev=None, budget=2000, fmt="neutral", system_prompt=None,
               explain=False, record=False, as_json=False)
    click.echo(f"\nNext: ctx --store {res.store} context --explain   |   ctx --store {res.store} trace")
