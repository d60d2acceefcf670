"""Transcripts in and out: import, export."""

from __future__ import annotations

import sys

import click

from ctxstore.errors import NotFound
from ctxstore.importers import FORMATS, discover, export_session, import_paths
from ctxstore.userfiles import replace_user_file

from .main import cli
from .render import emit_json, short, style

EXPORT_FORMATS = FORMATS  # every harness ctxstore imports, and its own jsonl


#: Warnings printed before "... and N more" (--json lists every one in warning_list).
MAX_WARNINGS_SHOWN = 20


@cli.command("import")
@click.argument("args", nargs=-1, metavar="[FORMAT] [PATH]...")
@click.option("--strict", is_flag=True,
              help="Any bad-input finding is an error and nothing is written.")
@click.option("--json", "as_json", is_flag=True,
              help="{files, bytes, sessions, events, new_events, artifacts, warnings, ...}")
@click.option("--follow", is_flag=True,
              help="Keep importing one session as it grows, until Ctrl-C.")
@click.option("--interval", type=click.FloatRange(0.05), default=1.0, show_default=True,
              metavar="SECONDS", help="With --follow: how often to look for new lines.")
@click.pass_obj
def import_cmd(state, args: tuple[str, ...], strict: bool, as_json: bool, follow: bool,
               interval: float) -> None:
    """Import agent sessions (or ctxstore JSONL) from files or folders.

    FORMAT is one of claude-code, codex, pi, gemini, qwen, copilot, opencode, cursor, goose,
    aider, cline or jsonl; detected per file when omitted. A forced FORMAT refuses (exit 10,
    nothing written) a file whose records are mostly not that format's. Folders are searched
    for *.jsonl and for the sessions each harness keeps in its own shape (Gemini CLI session
    documents, OpenCode storage trees and databases, Cursor databases, Cline task folders,
    Aider histories), e.g. a whole ~/.claude/projects tree, subagents included. With no PATH,
    every harness's default folder is searched (each honouring its own variable:
    $CLAUDE_CONFIG_DIR, $CODEX_HOME, $PI_CODING_AGENT_DIR, $GEMINI_CLI_HOME, $XDG_DATA_HOME,
    $COPILOT_HOME, ...; docs/import-export.md has the table); with only FORMAT, that
    harness's folder. Nothing importable there exits 3 (no
    transcript files) or 10 (none is a transcript). Importing the same file twice adds
    nothing; a longer version of a session extends it. Bad lines are reported with file and
    line number and the rest is imported.

    \b
    Examples:
      ctx import                      # every harness's default folder that exists
      ctx import ~/.claude/projects
      ctx import codex ~/.codex/sessions/2026/11/rollout-*.jsonl
      ctx import gemini               # ~/.gemini/tmp
      ctx import opencode ~/.local/share/opencode
      ctx import aider ~/src/app/.aider.chat.history.md
      ctx import --strict session.jsonl
      ctx import --follow ~/.codex/sessions/2026/11/rollout-x.jsonl   # while Codex runs

    With --follow, PATH is one session still being written: every SECONDS the complete lines
    an append-only transcript gained are imported (one transaction each, costing the new
    lines only), or a session the harness rewrites (a document, a database) is imported again
    when it changed (what is stored already is not written twice); a line says what came in;
    Ctrl-C stops (exit 0). A file rewritten in place is imported again.
    """
    fmt = None
    paths = list(args)
    if paths and paths[0] in FORMATS:
        fmt = paths.pop(0)
    if follow:
        _follow(state, fmt, paths, interval, as_json)
        return
    if not paths:
        paths = _default_paths(fmt, quiet=as_json)
    bar = None
    if not as_json and sys.stderr.isatty():
        bar = click.progressbar(length=1, label="importing", file=sys.stderr)

    def progress(done: int, total: int, path: str) -> None:
        if bar is not None:
            bar.length = max(total, 1)
            bar.update(done - bar.pos)

    try:
        report = import_paths(state.repo, paths, format=fmt, strict=strict, progress=progress)
    finally:
        if bar is not None:
            bar.render_finish()
    if as_json:
        emit_json(report.to_dict())
        return
    s = report.summary()
    click.echo(f"Imported {s['files']} file(s), {s['bytes']:,} bytes: {s['sessions']} session(s), "
               f"{s['events']:,} events ({s['new_events']:,} new), {s['artifacts']} artifact(s), "
               f"{s['warnings']} warning(s)")
    for st in report.sessions:
        d = st.to_dict()
        click.echo(f"  {style(short(d.get('session')), fg='yellow')}  {d.get('format', '')}  "
                   f"{d.get('events', 0)} events, {len(d.get('branches', []) or [])} branch(es), "
                   f"{d.get('tool_pairs', 0)} tool pairs, {d.get('compactions', 0)} compaction(s)  "
                   f"{d.get('kind', '')} {d.get('file', '')}")
    for w in report.warnings[:MAX_WARNINGS_SHOWN]:
        click.echo(style("warning: ", fg="yellow") + f"{w['file']}:{w['line']}: {w['message']}", err=True)
    if len(report.warnings) > MAX_WARNINGS_SHOWN:
        click.echo(f"... and {len(report.warnings) - MAX_WARNINGS_SHOWN} more warning(s) "
                   f"(--json lists every one in warning_list)", err=True)
    for n in report.notes:
        click.echo(f"note: {n}", err=True)


def _follow(state, fmt: str | None, paths: list[str], interval: float, as_json: bool) -> None:
    import json
    from pathlib import Path

    from ctxstore.errors import InvalidInput
    from ctxstore.importers import detect_format
    from ctxstore.importers.follow import Follower

    if len(paths) != 1 or not Path(paths[0]).exists():
        raise click.UsageError("--follow takes exactly one transcript FILE (or session folder)")
    path = Path(paths[0])
    fmt = fmt or detect_format(path)
    if fmt is None or fmt == "jsonl":
        raise InvalidInput(f"{path}: --follow reads the harnesses' transcripts; "
                           f"cannot tell this file's format (give FORMAT)")
    follower = Follower(state.repo, path, fmt)
    total = {"lines": 0, "new_events": 0}
    shown = 0
    if not as_json:
        click.echo(f"Following {path} ({fmt}); Ctrl-C to stop", err=True)
    stop = _StopOnInterrupt()
    try:
        while not stop.asked:
            res = follower.poll()
            for w in follower.warnings[shown:]:
                where = f"{w['file']}:{w['line']}: " if "file" in w else f"{path.name}: "
                click.echo(style("warning: ", fg="yellow") + where + w["message"], err=True)
            shown = len(follower.warnings)
            if res["lines"] or res["rewritten"]:
                total["lines"] += res["lines"]
                total["new_events"] += res["new_events"]
                if as_json:
                    click.echo(json.dumps(res))
                else:
                    again = " (rewritten: imported again)" if res["rewritten"] else ""
                    click.echo(f"+{res['lines']} line(s), +{res['new_events']} event(s) "
                               f"session {short(res['session'])}{again}")
            stop.sleep(interval)
    finally:
        stop.restore()
        follower.close()
    if not as_json:
        click.echo(f"Stopped following {path}: {total['lines']} line(s), "
                   f"{total['new_events']} new event(s)", err=True)


class _StopOnInterrupt:
    """Ctrl-C while following: the first one asks the loop to stop after the poll under way,
    so an interrupt never lands inside a transaction, a lock or a compression worker's hand-off
    (a KeyboardInterrupt raised there once left `ctx import --follow` hanging instead of
    exiting); a second Ctrl-C interrupts at once, as usual."""

    def __init__(self) -> None:
        import signal

        self.asked = False
        self._signal = signal
        self._previous = signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum, frame) -> None:
        if self.asked:
            raise KeyboardInterrupt
        self.asked = True

    def sleep(self, seconds: float) -> None:
        """Sleep up to `seconds`, in short steps so that a stop is seen within 0.1 s."""
        import time

        end = time.monotonic() + seconds
        while not self.asked and (left := end - time.monotonic()) > 0:
            time.sleep(min(left, 0.1))

    def restore(self) -> None:
        self._signal.signal(self._signal.SIGINT, self._previous)


def _default_paths(fmt: str | None, quiet: bool) -> list[str]:
    """The default transcript folders that exist (of FORMAT's harness only, when given),
    saying on stderr where it looked; NotFound when there is none."""
    places = [(f, d, ok) for f, d, ok in discover() if fmt is None or f == fmt]
    if fmt == "jsonl":
        raise click.UsageError("ctxstore JSONL has no default folder: give a PATH")
    found = [d for _f, d, ok in places if ok]
    if not found:
        raise NotFound("no transcripts: none of the default folders exists "
                       f"({', '.join(d for _f, d, _ok in places)}); give a PATH")
    if not quiet:
        click.echo("Looking in the default transcript folders:", err=True)
        for f, d, ok in places:
            click.echo(f"  {f:<12} {d}  {'found' if ok else 'not there'}", err=True)
    return found


@cli.command("export")
@click.argument("rev")
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS), required=True,
              help="a harness's name: its original records, JSON-equal and in order (a "
                   "document format as one document, Aider's history as its text); "
                   "jsonl: ctxstore's neutral JSONL (re-imports to identical ids).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write here instead of stdout.")
@click.option("--redact/--no-redact", "redact", default=None,
              help="Replace secrets in what is written (default: the redaction policy's "
                   "on_export, off unless set); the store is not changed.")
@click.pass_obj
def export_cmd(state, rev: str, fmt: str, output: str | None, redact: bool | None) -> None:
    """Write a session (REV may be a session id: every branch) back in its harness's format,
    or one history as ctxstore JSONL.

    \b
    Examples:
      ctx export 5cedc1c4 --format claude-code -o session.jsonl   # the original lines
      ctx export 9a1f --format gemini -o session.json             # the original document
      ctx export HEAD --format jsonl > history.jsonl              # re-imports to equal ids
      ctx export HEAD --format jsonl --redact > shareable.jsonl   # secrets replaced
      ctx export 5cedc1c4 --format codex -o rollout.jsonl  # another harness's session, converted
                                                           # (docs/resume.md; ctx resume writes it
                                                           # where the harness looks)
    """
    from ctxstore.porcelain import redact as pr

    export = export_session
    if pr.export_wants_redaction(state.repo, rev, redact):
        export = pr.export_redacted
    if output:
        res = _export_to_file(state.repo, rev, fmt, output, export)
        click.echo(f"wrote {res['lines']} line(s) of session {short(res['session'])} to {output}",
                   err=True)
    else:
        res = export(state.repo, rev, fmt, sys.stdout)
    if "redaction" in res:
        for line in pr.describe(res["redaction"]):
            click.echo(line, err=True)


def _export_to_file(repo, rev: str, fmt: str, output: str, export=export_session) -> dict:
    """Export through userfiles.replace_user_file: OUTPUT is replaced only when the export
    succeeded, so a failed export leaves an existing OUTPUT as it was."""
    with replace_user_file(output, "w", encoding="utf-8", newline="\n") as out:
        return export(repo, rev, fmt, out)
