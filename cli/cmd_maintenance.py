"""Maintenance: gc, fsck, reflog expire."""

from __future__ import annotations

import click

from ctxstore.errors import IntegrityProblems
from ctxstore.maintenance import fsck as fsck_repo
from ctxstore.maintenance import gc as pm

from .cmd_history import reflog_group
from .cmd_transfer import Progress, progress_option
from .main import cli
from .render import emit_json


def _size(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 100_000 else f"{n} bytes"


@cli.command("gc")
@click.option("--prune", default=pm.DEFAULT_PRUNE, show_default=True, metavar="WHEN",
              help="Only packs last written before WHEN are rewritten (now, never, "
                   "N.days.ago, an ISO date); newer objects are kept whatever they are.")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; change nothing.")
@click.option("--json", "as_json", is_flag=True)
@progress_option
@click.pass_obj
def gc_cmd(state, prune: str, dry_run: bool, as_json: bool, show_progress) -> None:
    """Expire reflogs, keep everything reachable from refs, HEAD, reflogs and the operations of
    the last 90 days (what `ctx undo` needs), rewrite the live objects into a new pack and only
    then delete the old packs.

    The rewritten records are recompressed (zstd level 9), with a dictionary retrained on a
    sample of the live objects when that saves more than the dictionary's size (`ctx repack`
    does the same for every object at level 19, dropping nothing).

    \b
    Examples:
      ctx gc --dry-run                # what would go
      ctx gc --prune now              # also packs written in the last two weeks
    """
    with Progress(show_progress) as bar:
        res = pm.gc(state.repo, prune=prune, dry_run=dry_run, progress=bar)
    if as_json:
        emit_json(res.to_dict())
        return
    verb = "Would remove" if dry_run else "Removed"
    click.echo(f"Marked {res.live} live objects from {res.roots} roots; {verb.lower()} "
               f"{res.objects_removed} of {res.objects_before} objects in old packs")
    if not dry_run:
        click.echo(f"Packs {res.packs_before} -> {res.packs_after}; bytes {_size(res.bytes_before)}"
                   f" -> {_size(res.bytes_after)}; {res.seconds:.2f}s")
    if res.objects_rescued:
        click.echo(f"Kept {res.objects_rescued} object(s) that another process named while gc ran")
    if res.operations_expired:
        click.echo(f"{len(res.operations_expired)} operation(s) older than the expiry, from "
                   f"{res.operations_expired[0][:12]} back, {'would be' if dry_run else 'were'} "
                   f"dropped: `ctx undo` / `ctx op restore` can no longer go back to them")
    if res.reflog_expired:
        click.echo(f"{'Would expire' if dry_run else 'Expired'} {res.reflog_expired} reflog entries")
    if res.kept_packs:
        click.echo(f"{res.kept_packs} pack(s) kept whole (newer than --prune={prune}, in use, "
                   f"or damaged)")
    if res.missing:
        click.echo(f"warning: {len(res.missing)} linked object(s) missing; run `ctx fsck`",
                   err=True)


@cli.command("fsck")
@click.option("--full", is_flag=True, help="Also walk the graph: connectivity, generation "
                                           "numbers, tool pairs, compaction ranges.")
@click.option("--json", "as_json", is_flag=True)
@progress_option
@click.pass_obj
def fsck_cmd(state, full: bool, as_json: bool, show_progress) -> None:
    """Verify every stored object (re-hash, decode, canonical form, index <-> pack) and that
    refs and reflogs name existing objects. With --full, also check connectivity (every parent,
    message, artifact, summary and snapshot link resolves), generation numbers, tool
    call/result pairs and compaction ranges.

    Exits 13 after listing each problem with its object id.

    \b
    Examples:
      ctx fsck
      ctx fsck --full --json
    """
    with Progress(show_progress) as bar:
        report = fsck_repo.check(state.repo, full=full, progress=bar)
    problems = report.problems
    if as_json:
        emit_json(report.to_dict())
    else:
        for p in problems:
            click.echo(f"{p.kind:<11} {p.id or '-'} {p.message}")
        for note in report.notes:
            click.echo(f"note: {note}")
        click.echo(f"{report.objects} objects checked" + (", graph walked" if full else "") + ": "
                   + ("no problems" if not problems else f"{len(problems)} problem(s)"))
    if problems:
        raise IntegrityProblems(f"fsck found {len(problems)} problem(s)",
                                problems=[p.to_dict() for p in problems])


@reflog_group.command("expire")
@click.argument("refs", nargs=-1, metavar="[REF]...")
@click.option("--expire", default=pm.DEFAULT_EXPIRE, show_default=True, metavar="WHEN",
              help="Drop entries older than WHEN.")
@click.option("--expire-unreachable", default=pm.DEFAULT_EXPIRE_UNREACHABLE, show_default=True,
              metavar="WHEN", help="Drop entries older than WHEN that the ref's tip does not reach.")
@click.option("--dry-run", is_flag=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def reflog_expire_cmd(state, refs, expire: str, expire_unreachable: str, dry_run: bool,
                      as_json: bool) -> None:
    """Prune old reflog entries (all reflogs, or the named full ref names such as HEAD or
    refs/sessions/SESSION/BRANCH), so gc can remove what only they kept alive.

    \b
    Examples:
      ctx reflog expire --dry-run
      ctx reflog expire --expire-unreachable now HEAD
    """
    res = pm.reflog_expire(state.repo, expire=expire, expire_unreachable=expire_unreachable,
                           dry_run=dry_run, refs=list(refs) or None)
    if as_json:
        emit_json(res.to_dict())
        return
    for name, counts in res.refs.items():
        if counts["expired"]:
            click.echo(f"{name}: {counts['expired']} expired, {counts['kept']} kept")
    verb = "would expire" if dry_run else "expired"
    click.echo(f"{res.expired} entries {verb}, {res.kept} kept")


# `ctx reflog-expire` from before `reflog` became a group; kept as a hidden alias
cli.add_command(click.Command("reflog-expire", params=reflog_expire_cmd.params,
                              callback=reflog_expire_cmd.callback, hidden=True,
                              help=reflog_expire_cmd.help))
