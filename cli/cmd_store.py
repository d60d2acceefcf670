"""Store-level commands: init, cat-object."""

from __future__ import annotations

import click

from ctxstore.porcelain.history import show

from .main import cli
from .render import emit_json


@cli.command("init")
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option("--durability", type=click.Choice(["always", "batch", "never"]), default=None,
              help="When writes reach the disk: fsync per object, group commit (default), or never.")
def init_cmd(directory: str, durability: str | None) -> None:
    """Create a store in DIRECTORY/.ctx (default: the current directory).

    Running it again in an existing store changes nothing. Inside a git work tree, .ctx/ is
    added to that repository's .git/info/exclude (not your .gitignore), so `git status` does
    not offer it for a commit.

    \b
    Examples:
      ctx init                        # .ctx here
      ctx init ~/agent-runs --durability always
      CTX_DIR=~/agent-runs ctx status # use that store from anywhere
    """
    from ctxstore.porcelain.initialize import init_store

    settings = {"durability": durability} if durability else {}
    res = init_store(directory, **settings)
    verb = "Initialized" if res.created else "Reinitialized existing"
    click.echo(f"{verb} ctxstore in {res.path}")
    if res.excluded_in:
        click.echo(f"Added {res.pattern} to {res.excluded_in} (git leaves the store alone)")


@cli.command("cat-object")
@click.argument("object_id")
@click.option("--json", "as_json", is_flag=True, help="Accepted for symmetry; output is always JSON.")
@click.pass_obj
def cat_object(state, object_id: str, as_json: bool) -> None:
    """Print any object (by id, unique prefix, or revision) as JSON: {id, type, content}.

    \b
    Examples:
      ctx cat-object HEAD
      ctx cat-object 5f3a9c1e | jq .content.payload
    """
    emit_json(show(state.repo, object_id))
