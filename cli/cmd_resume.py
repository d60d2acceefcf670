"""ctx resume: continue a session in another harness (ctxstore/convert, docs/resume.md)."""

from __future__ import annotations

import click

from .main import cli
from .render import emit_json, short

HARNESSES = ("claude-code", "codex", "pi", "gemini")


@cli.command("resume")
@click.argument("session")
@click.option("--in", "harness", type=click.Choice(HARNESSES), required=True,
              help="The harness to continue in.")
@click.option("--branch", metavar="B", default=None,
              help="The branch to continue (default: main). Harnesses with a tree (Claude Code, "
                   "pi) get every branch, this one as the current leaf.")
@click.option("--cwd", "cwd", metavar="DIR", default=None,
              help="The directory you will continue in (default: the session's, when it exists "
                   "here, else the current one).")
@click.option("--dry-run", is_flag=True, help="Convert and report; write nothing.")
@click.option("--force", is_flag=True,
              help="Write even when the installed harness is newer than the newest version "
                   "this format was verified with.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def resume_cmd(state, session: str, harness: str, branch: str | None, cwd: str | None,
               dry_run: bool, force: bool, as_json: bool) -> None:
    """Write SESSION, converted, where HARNESS looks for sessions, and print its command to
    continue.

    \b
    The file goes where the harness reads it, its environment respected:
      claude-code  $CLAUDE_CONFIG_DIR/projects/<cwd>/<id>.jsonl   claude --resume <id>
      codex        $CODEX_HOME/sessions/Y/M/D/rollout-*-<id>.jsonl codex resume <id>
      pi           $PI_CODING_AGENT_DIR/sessions/...               pi --session <file>
      gemini       $GEMINI_CLI_HOME/.gemini/tmp/...                gemini --resume <id>
    Nothing is ever overwritten. docs/resume.md says what each target keeps.

    \b
    Examples:
      ctx resume 5cedc1c4 --in codex             # a Claude Code session, continued in Codex
      ctx resume 5cedc1c4 --in claude-code --branch rewind-b1u
      ctx resume HEAD --in pi --dry-run --json   # what would be written, and the counts
    """
    from ctxstore.porcelain.resume import resume

    res = resume(state.repo, session, harness, branch=branch, dry_run=dry_run, force=force,
                 cwd=cwd)
    if as_json:
        emit_json(res)
        return
    rep = res["report"]
    verb = "would write" if dry_run else ("wrote" if res["written"] else "already there:")
    click.echo(f"{verb} {res['path']}")
    for extra in res["files"]:
        click.echo(f"  and {extra}")
    click.echo(f"  session {short(res['session'])} ({res['branch']}): {rep['prompts']} prompt(s), "
               f"{rep['tool_calls']} tool call(s) ({rep['tool_calls_mapped']} mapped to "
               f"{harness}'s tools, {rep['tool_calls_generic']} kept under their own name), "
               f"{rep['compactions']} compaction(s)")
    dropped = [f"{rep['thinking_dropped']} thinking block(s) dropped" if rep["thinking_dropped"] else "",
               f"{rep['branches_flattened']} other branch(es) left out" if rep["branches_flattened"] else "",
               f"{rep['artifacts_referenced']} large output(s) referenced" if rep["artifacts_referenced"] else ""]
    if any(dropped):
        click.echo("  " + "; ".join(d for d in dropped if d))
    for note in res["registered"]:
        click.echo(f"  {note}")
    ver = res["version"]
    if ver["newer"]:
        click.echo(f"  warning: {harness} {ver['installed']} is newer than the verified "
                   f"{ver['verified']} (--force)", err=True)
    click.echo(f"continue with: {res['command']}")
