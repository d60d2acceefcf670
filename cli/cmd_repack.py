"""`ctx repack`: retrain the zstd dictionary on the store's objects and recompress every pack."""

from __future__ import annotations

import click

from ctxstore.maintenance import repack as pr
from ctxstore.store import recompress as rc

from .cmd_transfer import Progress, progress_option
from .main import cli
from .render import count, emit_json


def _size(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 100_000 else f"{n} bytes"


@cli.command("repack")
@click.option("--level", type=click.IntRange(1, 22), default=rc.REPACK_LEVEL, show_default=True,
              help="zstd level of the rewritten records (higher: smaller and slower).")
@click.option("--dict-size", type=click.IntRange(1024, 4 << 20), default=rc.REPACK_DICT_SIZE,
              show_default=True, metavar="BYTES", help="Size of a newly trained dictionary.")
@click.option("--samples", type=click.IntRange(100, 1_000_000), default=rc.REPACK_SAMPLES,
              show_default=True, metavar="N", help="Objects sampled to train it.")
@click.option("--no-retrain", is_flag=True,
              help="Keep the current dictionary; only recompress at --level.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@progress_option
@click.pass_obj
def repack_cmd(state, level: int, dict_size: int, samples: int, no_retrain: bool, as_json: bool,
               show_progress) -> None:
    """Retrain the zstd dictionary on a sample of the objects stored now and recompress every
    pack with it into one new pack; nothing is dropped (`ctx gc` drops the unreachable).

    A new dictionary is kept only if it saves more than its own size; old dictionaries stay, so
    every record stays readable, and old packs are deleted only after the new one is durable.

    \b
    Examples:
      ctx repack                      # smallest store: new dictionary, zstd level 19
      ctx repack --level 9            # faster on a large store
      ctx repack --no-retrain --json
    """
    with Progress(show_progress) as bar:
        rep = pr.repack(state.repo, level=level, dict_size=dict_size, samples=samples,
                        train=not no_retrain, progress=bar)
    if as_json:
        emit_json(rep.to_dict())
        return
    d = rep.dictionary
    if d is None:
        click.echo("Nothing to repack (no sealed packs)")
    else:
        what = f"new dictionary {d.dict_id}" if d.new else \
            f"dictionary {d.dict_id or 'none'} kept"
        click.echo(f"Trained on {count(d.samples, 'object')}: {what} ({d.reason})")
    click.echo(f"Recompressed {count(rep.objects, 'object')} at level {rep.level}; packs "
               f"{rep.packs_before} -> {rep.packs_after}; bytes {_size(rep.bytes_before)} -> "
               f"{_size(rep.bytes_after)}; {rep.seconds:.2f}s")
    if rep.kept_packs:
        click.echo(f"{rep.kept_packs} pack(s) kept whole (in use or damaged: see `ctx fsck`)")
