"""Portable archives: pack (write, --verify, --list) and unpack."""

from __future__ import annotations

import sys

import click

from ctxstore.porcelain import transfer as pt

from .main import cli
from .render import count, emit_json, short


class Progress:
    """A porcelain `progress(phase, done, total)` callback drawn as click progress bars on
    stderr; silent unless enabled (default: stderr is a terminal)."""

    def __init__(self, enabled: bool | None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.phase: str | None = None
        self.bar = None
        self.pos = 0

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if phase != self.phase:
            self.close()
            self.phase, self.pos = phase, 0
            if total:
                self.bar = click.progressbar(length=total, label=f"{phase:<12}", file=sys.stderr,
                                             show_pos=True)
                self.bar.__enter__()
        if self.bar is not None:
            self.bar.update(done - self.pos)
        else:
            click.echo(f"\r{phase:<12} {done} objects", nl=False, err=True)
        self.pos = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None
        elif self.phase is not None and self.enabled:
            click.echo("", err=True)
        self.phase = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def progress_option(f):
    return click.option("--progress/--no-progress", "show_progress", default=None,
                        help="Progress bars on stderr (default: when stderr is a terminal).")(f)


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 100_000 else f"{n} bytes"


@cli.command("pack")
@click.argument("revs", nargs=-1, metavar="[REV|SESSION]...")
@click.option("--all", "all_refs", is_flag=True, help="Every ref in the store.")
@click.option("--since", metavar="REV", help="Thin pack: leave out what REV reaches (the "
                                             "importing store must have it).")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False), metavar="FILE",
              help="Write the pack here.")
@click.option("--verify", "verify_file", type=click.Path(dir_okay=False),
              metavar="FILE", help="Check a pack (trailer, every object's id, links); import nothing.")
@click.option("--list", "list_file", type=click.Path(dir_okay=False),
              metavar="FILE", help="Show a pack's header and objects; import nothing.")
@click.option("--redact/--no-redact", "redact", default=None,
              help="Pack a copy with secrets replaced (new ids where something was redacted; "
                   "default: the redaction policy's on_pack, off unless set).")
@click.option("--json", "as_json", is_flag=True)
@progress_option
@click.pass_obj
def pack_cmd(state, revs, all_refs, since, out, verify_file, list_file, redact, as_json,
             show_progress) -> None:
    """Write the named branches or sessions (default: HEAD's session), and everything they
    reach, to one self-describing, checksummed FILE; or inspect one with --verify / --list.

    The same refs and objects always give a byte-identical file.

    \b
    Examples:
      ctx pack -o session.ctxpack                 # HEAD's session, every branch
      ctx pack --all -o store.ctxpack
      ctx pack main --since main~100 -o new.ctxpack   # thin: only what is newer
      ctx pack --verify session.ctxpack
      ctx pack --redact -o shareable.ctxpack      # secrets replaced in the copy
    """
    if verify_file or list_file:
        if out or revs or all_refs or since:
            raise click.UsageError("--verify/--list take only a FILE")
        if verify_file:
            with Progress(show_progress) as bar:
                report = pt.verify(verify_file, progress=bar)
            if as_json:
                emit_json(report)
            else:
                click.echo(f"{verify_file}: ok — {count(report['objects'], 'object')}, "
                           f"{len(report['refs'])} refs, {_mb(report['bytes'])}, "
                           f"checksum {short(report['checksum'], 16)}")
                for name, tip in report["refs"].items():
                    click.echo(f"  {short(tip)} {name}")
                if report["prerequisites"]:
                    click.echo("  thin: needs " + ", ".join(short(p) for p in report["prerequisites"]))
            return
        listing = pt.listing(list_file)
        if as_json:
            emit_json(listing)
            return
        click.echo(f"version {listing['version']}, capabilities "
                   f"{','.join(listing['capabilities'])}, {len(listing['objects'])} objects, "
                   f"{_mb(listing['bytes'])}")
        for name, tip in listing["refs"].items():
            click.echo(f"ref {tip} {name}")
        for p in listing["prerequisites"]:
            click.echo(f"prerequisite {p}")
        for o in listing["objects"]:
            click.echo(f"{o['id']} {o['type']:<10} {o['size']:>9} {o['stored']:>9}")
        return
    if not out:
        raise click.UsageError("pack needs -o FILE (or --verify FILE / --list FILE)")
    from ctxstore.porcelain import redact as pr

    report = None
    with Progress(show_progress) as bar:
        if pr.wants_redaction(state.repo, pt.select_refs(state.repo, list(revs), all_refs),
                              "pack", redact):
            summary, report = pr.pack_redacted(state.repo, out, list(revs), all_refs=all_refs,
                                               since=since, progress=bar)
        else:
            summary = pt.pack(state.repo, out, list(revs), all_refs=all_refs, since=since,
                              progress=bar)
    if as_json:
        emit_json({**summary.__dict__, **({"redaction": report} if report else {})})
        return
    if report is not None:
        for line in pr.describe(report):
            click.echo(line)
    thin = f", thin against {short(summary.prerequisites[0])}" if summary.prerequisites else ""
    click.echo(f"Wrote {out}: {count(summary.objects, 'object')}, {count(len(summary.refs), 'ref')}, "
               f"{_mb(summary.bytes)} ({_mb(summary.raw_bytes)} raw){thin}")


@cli.command("unpack")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Move refs even to a non-descendant of where they are.")
@click.option("--json", "as_json", is_flag=True)
@progress_option
@click.pass_obj
def unpack_cmd(state, file: str, force: bool, as_json: bool, show_progress) -> None:
    """Import a pack: everything is verified before anything becomes visible; refs are created
    or fast-forwarded by compare-and-swap (a non-fast-forward is refused unless --force).

    \b
    Examples:
      ctx unpack session.ctxpack
      ctx unpack store.ctxpack --json
    """
    with Progress(show_progress) as bar:
        result = pt.unpack(state.repo, file, force=force, progress=bar)
    if as_json:
        emit_json(result.to_dict())
        return
    click.echo(f"Unpacked {file}: {count(result.objects, 'object')} ({result.new_objects} new)")
    for u in result.refs:
        old = short(u.old) if u.old else "(new)"
        click.echo(f"  {u.action:<12} {old} -> {short(u.new)}  {u.name}")
    if result.head:
        click.echo(f"HEAD -> {result.head}")
