"""Compaction and merging: compact, merge."""

from __future__ import annotations

import shlex

import click

from ctxstore.errors import CompactionRejected, InvalidInput
from ctxstore.porcelain import compaction as pco

from .main import cli
from .render import emit_json, short, style


def _print_result(res, dry_run: bool) -> None:
    what = "merge" if res.kind == "merge" else "compaction"
    if res.noop:
        click.echo(res.noop)
        return
    if res.note:
        click.echo(style("note: ", fg="yellow") + res.note)
    if dry_run:
        click.echo(style(f"Dry run: this {what} would summarize {res.summarized} event(s)", bold=True))
    else:
        click.echo(style(f"{what.capitalize()} {res.compaction_id}", bold=True)
                   + f" recorded by event {short(res.event_id)}")
    click.echo(f"  range: {short(res.first_event)} .. {short(res.last_event)}"
               + (f"; first kept {short(res.first_kept)}" if res.first_kept else ""))
    click.echo(f"  tokens: {res.tokens_before:,} -> {res.tokens_after:,}  (summarizer: {res.summarizer})")
    for c in res.checks:
        mark = (style("n/a ", fg="yellow") if c.status == "n/a" else
                style("pass", fg="green") if c.ok else style("FAIL", fg="red"))
        click.echo(f"  {mark}  {c.rule:<26} {c.detail}")


def _check_summarizer(command: str | None) -> str | None:
    """A --summarizer that shlex cannot split (an unbalanced quote) or that names no program
    is InvalidInput, one line, before anything runs. An empty one means the default."""
    if not command or command.startswith(pco.LLM_PREFIX):
        if command and not command[len(pco.LLM_PREFIX):].strip():
            raise InvalidInput("--summarizer llm: names no model (e.g. llm:gpt-4o-mini)")
        return command
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise InvalidInput(f"--summarizer {command!r}: {exc}") from None
    if not argv:
        raise InvalidInput(f"--summarizer {command!r} names no command to run")
    return command


@cli.command("compact")
@click.argument("rev", required=False)
@click.option("--keep-recent-tokens", type=click.IntRange(min=0), default=None,
              help="Keep at least this many tokens of recent events verbatim (default 2000).")
@click.option("--summarizer", "command", default=None, metavar="CMD|llm:MODEL",
              help="llm:MODEL asks that model through the llm library (pip install "
                   "'ctxstore[llm]'); anything else is an external command that gets the request "
                   "as JSON on stdin and prints the summary JSON.")
@click.option("--fallback", is_flag=True,
              help="If the summarizer's output fails a check, use the structured summarizer "
                   "instead (said in the output) rather than refusing.")
@click.option("--dry-run", is_flag=True, help="Show what would be cut and each check's verdict; write nothing.")
@click.option("--json", "as_json", is_flag=True,
              help="{compaction_id, summarized_range, first_kept, tokens_before, tokens_after, checks, ...}")
@click.pass_obj
def compact_cmd(state, rev, command, keep_recent_tokens, fallback, dry_run, as_json) -> None:
    """Summarize old events of a branch (default: HEAD's) into a checked compaction record.

    Nothing is deleted: the raw events stay in the log (marked as compacted) and the record
    names exactly the events it replaced. A compaction whose checks fail moves no ref; the
    failed rules are printed and the exit code is 11. Nothing to compact (everything since
    the last compaction fits in --keep-recent-tokens) is said and exits 0. A check with
    nothing to look at in the range prints "n/a".

    \b
    Examples:
      ctx compact --dry-run            # what would be cut, each check's verdict
      ctx compact --keep-recent-tokens 4000
      ctx compact --summarizer llm:gpt-4o-mini --fallback
    """
    command = _check_summarizer(command)
    try:
        res = pco.compact_branch(state.repo, rev, keep_recent_tokens=keep_recent_tokens,
                                 summarizer_command=command, dry_run=dry_run, fallback=fallback)
    except CompactionRejected as exc:
        if as_json and "result" in exc.details:
            emit_json(exc.details["result"])
        raise
    if as_json:
        emit_json(res.to_dict())
    else:
        _print_result(res, dry_run)


@cli.command("merge")
@click.argument("branch")
@click.option("--summarizer", "command", default=None, metavar="CMD|llm:MODEL",
              help="Summarizer (same as `ctx compact --summarizer`).")
@click.option("--fallback", is_flag=True,
              help="If the summarizer's output fails a check, use the structured summarizer.")
@click.option("--dry-run", is_flag=True, help="Show the summary's checks without writing.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def merge_cmd(state, branch, command, fallback, dry_run, as_json) -> None:
    """Merge BRANCH's conclusions into the current branch: a merge event (second parent =
    BRANCH's tip) holding a checked summary of what BRANCH did and found, not its raw events.
    BRANCH is any revision of this session that `ctx log` takes: a branch, a remote-tracking
    branch (what `ctx pull` advises after a divergence), an event.

    A branch already contained in the current one is "nothing to merge" (exit 0). A branch
    too small to summarize smaller than itself still merges: its summary may use up to 512
    tokens (docs/compaction.md, "Merging small branches").

    \b
    Examples:
      ctx merge try-b --dry-run        # the summary's checks, nothing written
      ctx merge try-b
      ctx merge origin/3f2a9c1e4b5d/main   # after a diverged `ctx pull`: keep both
      ctx merge try-b --summarizer llm:claude-3.5-haiku --fallback
    """
    command = _check_summarizer(command)
    try:
        res = pco.merge(state.repo, branch, summarizer_command=command, dry_run=dry_run,
                        fallback=fallback)
    except CompactionRejected as exc:
        if as_json and "result" in exc.details:
            emit_json(exc.details["result"])
        raise
    if as_json:
        emit_json(res.to_dict())
    else:
        _print_result(res, dry_run)
