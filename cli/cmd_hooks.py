"""Live capture from Claude Code: `ctx hooks install|uninstall claude-code`, `ctx hook`."""

from __future__ import annotations

import sys

import click

from .main import cli
from .render import emit_json

HARNESSES = click.Choice(["claude-code"])


def _scope(user: bool) -> str:
    return "user" if user else "project"


@cli.group("hooks")
def hooks_group() -> None:
    """Install or remove the hooks that capture Claude Code sessions as they run.

    The hooks run `ctx hook claude-code` on SessionStart, UserPromptSubmit, PostToolUse,
    PreCompact, Stop, SubagentStop (async) and SessionEnd; each call imports what the
    transcript gained since the previous one into the store found from the session's
    directory (or --store).

    \b
    Examples:
      ctx hooks install claude-code            # this project's .claude/settings.json
      ctx hooks install claude-code --user     # ~/.claude/settings.json, every project
      ctx hooks doctor                         # does the installed command run?
      ctx hooks uninstall claude-code
    """


@hooks_group.command("install")
@click.argument("harness", type=HARNESSES)
@click.option("--project", "scope", flag_value="project", default=True,
              help="This project's .claude/settings.json, the file a team commits (the "
                   "default): runs `ctx` from PATH, no path of this machine.")
@click.option("--local", "scope", flag_value="local",
              help="This project's .claude/settings.local.json (this machine only): runs "
                   "this interpreter's ctx.")
@click.option("--user", "scope", flag_value="user", help="~/.claude/settings.json "
              "($CLAUDE_CONFIG_DIR/settings.json when set): runs this interpreter's ctx.")
@click.option("--dir", "project", metavar="DIR", default=None,
              help="The project directory for --project/--local (default: the current one).")
@click.option("--pin-store", is_flag=True,
              help="Write this store's path into the hook command (--local and --user only; "
                   "default: the hook finds the store from the session's directory).")
@click.option("--snapshots", is_flag=True,
              help="Also snapshot the project after each file-writing tool, onto the "
                   "session's `workspace` branch (docs/claude-code.md).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def hooks_install_cmd(state, harness: str, scope: str, project: str | None, pin_store: bool,
                      snapshots: bool, as_json: bool) -> None:
    """Merge ctx's hook entries into Claude Code's settings.json; other hooks stay as they are.

    The capture hooks run async (Claude Code does not wait for them); SessionEnd stays
    synchronous. Installing twice changes nothing; installing with another interpreter or
    mode replaces only ctx's own entries. `ctx hooks doctor` checks that the command runs.

    \b
    Examples:
      ctx hooks install claude-code            # .claude/settings.json: `ctx` from PATH
      ctx hooks install claude-code --local    # .claude/settings.local.json: this machine
      ctx hooks install claude-code --user --pin-store
      ctx hooks install claude-code --snapshots
    """
    from ctxstore.integrations.claude_code import settings

    settings.refuse_shared_pin(scope, pin_store)  # before looking for a store
    store = str(state.repo.path) if pin_store else None
    command, note = settings.hook_command(store, snapshots=snapshots, scope=scope)
    res = settings.install(settings.settings_path(scope, project), command, snapshots)
    res["note"] = note
    if as_json:
        emit_json(res)
        return
    if res["added"]:
        click.echo(f"Installed the claude-code hook in {res['path']} "
                   f"({', '.join(res['added'])})")
    else:
        click.echo(f"The claude-code hook is already installed in {res['path']}")
    if note:
        click.echo(f"Note: {note}")


@hooks_group.command("doctor")
@click.argument("harness", type=HARNESSES, required=False, default="claude-code")
@click.option("--dir", "project", metavar="DIR", default=None,
              help="The project directory whose settings to check (default: the current one).")
@click.option("--json", "as_json", is_flag=True)
def hooks_doctor_cmd(harness: str, project: str | None, as_json: bool) -> None:
    """Check that the hook command each Claude Code settings file names runs.

    Looks in ~/.claude/settings.json, .claude/settings.json and .claude/settings.local.json;
    runs each command of ctx's as Claude Code would (through the shell, from the project
    directory) with --version instead of the hook. Exits 1 when one does not run, with the
    fix; also says when the shared project file names a path of this machine.

    \b
    Examples:
      ctx hooks doctor
      ctx hooks doctor --dir ~/src/app --json
    """
    from pathlib import Path

    from ctxstore.integrations.claude_code import doctor

    report = doctor.check(Path(project or ".").resolve())
    if as_json:
        emit_json(report)
    else:
        _print_doctor(report)
    if not report["ok"]:
        bad = sum(not r["runs"] for f in report["files"] for r in f["commands"])
        raise doctor.HookCommandFails(f"{bad} hook command(s) of ctx's do not run (fix above)"
                                      if not as_json else
                                      f"{bad} hook command(s) of ctx's do not run")


def _print_doctor(report: dict) -> None:
    if not report["installed"]:
        click.echo("No claude-code hook of ctx's in the user, project or local settings "
                   "(`ctx hooks install claude-code`)")
    for f in report["files"]:
        click.echo(f"{f['scope']}: {f['path']}")
        for r in f["commands"]:
            click.echo(f"  {'ok  ' if r['runs'] else 'FAIL'} {r['command']}  ({r['detail']})")
            if r.get("fix"):
                click.echo(f"       fix: {r['fix']}")
        for c in f.get("machine_paths", []):
            click.echo(f"  warning: the shared project file names a path of this machine: {c}"
                       f" (install again with --project, or move it to --local)")
        if f["missing_events"]:
            click.echo(f"  missing events: {', '.join(f['missing_events'])} (install again)")
        if f["synchronous_events"]:
            click.echo(f"  synchronous (the agent waits): {', '.join(f['synchronous_events'])}"
                       f" (install again for async)")


@hooks_group.command("uninstall")
@click.argument("harness", type=HARNESSES)
@click.option("--project", "scope", flag_value="project", default=True,
              help="This project's .claude/settings.json (the default).")
@click.option("--local", "scope", flag_value="local",
              help="This project's .claude/settings.local.json.")
@click.option("--user", "scope", flag_value="user", help="~/.claude/settings.json.")
@click.option("--dir", "project", metavar="DIR", default=None,
              help="The project directory for --project (default: the current one).")
@click.option("--json", "as_json", is_flag=True)
def hooks_uninstall_cmd(harness: str, scope: str, project: str | None, as_json: bool) -> None:
    """Remove exactly ctx's hook entries from Claude Code's settings.json.

    \b
    Examples:
      ctx hooks uninstall claude-code
      ctx hooks uninstall claude-code --user
    """
    from ctxstore.integrations.claude_code import settings

    res = settings.uninstall(settings.settings_path(scope, project))
    if as_json:
        emit_json(res)
        return
    if res["removed"]:
        click.echo(f"Removed the claude-code hook from {res['path']} "
                   f"({', '.join(res['removed'])})")
    else:
        click.echo(f"No claude-code hook of ctx's in {res['path']}")


@cli.command("hook")
@click.argument("harness", type=HARNESSES)
@click.option("--json", "as_json", is_flag=True, help="Print what the call did.")
@click.pass_obj
def hook_cmd(state, harness: str, as_json: bool) -> None:
    """Handle one Claude Code hook call (the hook JSON on stdin); always exits 0.

    Imports the transcript from where the previous call stopped. Problems go to
    .ctx/hooks.log, never to the agent.

    \b
    Examples:
      echo '{"transcript_path": "t.jsonl", "cwd": "."}' | ctx hook claude-code
    """
    from ctxstore.integrations.claude_code import fastpath
    from ctxstore.integrations.claude_code.hook import run_hook

    try:  # main() may have read it already (the fast path), and stdin reads only once
        raw = fastpath.take_stdin()
        if raw is None:
            raw = sys.stdin.read()
    except (OSError, UnicodeDecodeError) as exc:
        raw = ""
        click.echo(f"ctx hook: cannot read stdin: {exc}", err=True)
    res = run_hook(raw, state.store_path)
    if as_json:
        emit_json(res)
