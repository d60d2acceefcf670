"""Store-level commands: init, cat-object."""

from __future__ import annotations

import click

from ctxstore.porcelain.history import show
from ctxstore.repo import Repository

from .main import cli
from .render import emit_json


@cli.command("init")
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option("--durability", type=click.Choice(["always", "batch", "never"]), default=None,
              help="When writes reach the disk: fsync per object, group commit (default), or never.")
def init_cmd(directory: str, durability: str | None) -> None:
    """Create a store in DIRECTORY/.ctx (default: the current directory).

    Running it again in an existing store changes nothing.

    \b
    Examples:
      ctx init                        # .ctx here
      ctx init ~/agent-runs --durability always
      CTX_DIR=~/agent-runs ctx status # use that store from anywhere
    """
    settings = {"durability": durability} if durability else {}
    with Repository.init(directory, **settings) as repo:
        click.echo(f"Initialized ctxstore in {repo.path}")


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
