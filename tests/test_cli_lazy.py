"""`ctx` start-up is lazy: the command table in cli/commands.py matches the real commands, and
cheap commands do not import the heavy parts (importers, compaction, transfer, the tokenizer).

The import checks run `ctx` in a fresh interpreter and read its `sys.modules`, since this test
process has long imported everything.
"""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from ctxstore.cli import main as cli_main
from ctxstore.cli.commands import COMMANDS, entry_line

HEAVY = ("ctxstore.importers", "ctxstore.compaction", "ctxstore.transfer", "tiktoken",
         "ctxstore.context.tokenizer", "ctxstore.manager", "pygit2", "ctxstore.gitbridge",
         "ctxstore.workspace", "ctxstore.viewer", "bm25s", "detect_secrets", "claude_agent_sdk",
         "agents", "langgraph")

#: What a read-only everyday command must not load either (each costs milliseconds of every
#: start): the write path, the state folds (a projection cached at the tip needs none), the
#: session listing that projects every session (but for `ctx sessions`), grep's scan.
READ_PATH_EXTRA = ("ctxstore.repo.transaction", "ctxstore.state.folds", "ctxstore.state.effects",
                   "ctxstore.porcelain.search")


def _subcommands(cmd: click.Command):
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            yield sub
            yield from _subcommands(sub)


def test_table_lists_every_command_with_its_help():
    cli_main.load_all_commands()  # every cli/cmd_*.py on disk, not only the table's modules
    real = cli_main.cli.commands
    missing = [entry_line(n, c) for n, c in real.items() if n not in COMMANDS]
    assert not missing, "add to cli/commands.py COMMANDS:\n" + "\n".join(missing)
    assert not set(COMMANDS) - set(real), f"in the table but not defined: {set(COMMANDS) - set(real)}"
    for name, entry in COMMANDS.items():
        cmd = real[name]
        assert entry.help == cmd.get_short_help_str(10**6), entry_line(name, cmd)
        assert entry.hidden == cmd.hidden, entry_line(name, cmd)
        modules = {f"ctxstore.cli.{m}" for m in entry.modules()}
        # the command, and every subcommand of a group, comes from a module the entry imports
        for c in (cmd, *_subcommands(cmd)):
            if c.callback is not None:
                assert c.callback.__module__ in modules, \
                    f"{name}: {c.name} is defined in {c.callback.__module__}; list it in `also`"


def test_help_lists_the_table_as_click_would():
    lazy = CliRunner().invoke(cli_main.cli, ["--help"]).stdout
    cli_main.load_all_commands()
    eager = click.Group("ctx", commands=cli_main.cli.commands, params=cli_main.cli.params,
                        help=cli_main.cli.help, context_settings=cli_main.cli.context_settings)
    want = CliRunner().invoke(eager, ["--help"], prog_name="ctx").stdout
    # the same lines (click's own group sorts them by name; the table orders them by family)
    assert sorted(lazy.split("Commands:")[1].splitlines()) == \
        sorted(want.split("Commands:")[1].splitlines())


def test_unlisted_name_is_an_error_not_a_crash():
    res = CliRunner().invoke(cli_main.cli, ["no-such-command"])
    assert res.exit_code == 2 and "No such command" in res.stderr


def _modules_after(*args: str, cwd) -> list[str]:
    code = ("import sys, json\nfrom ctxstore.cli.main import cli\n"
            "try:\n    cli(sys.argv[1:], prog_name='ctx')\nexcept SystemExit:\n    pass\n"
            "sys.stdout.flush()\nsys.stderr.write(json.dumps(sorted(sys.modules)))\n")
    res = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True,
                         text=True, check=True)
    return json.loads(res.stderr)


#: Small modules under a heavy package that everyday commands may use (`ctx log`/`show` print
#: events in the neutral line format of importers.records; `ctx log` hides the bookkeeping of
#: every harness named in importers.harnesses, a table of names that loads no importer).
LIGHT = ("ctxstore.importers", "ctxstore.importers.records", "ctxstore.importers.harnesses")


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.startswith(HEAVY) and m not in LIGHT]


def test_version_imports_nothing_heavy(tmp_path):
    mods = _modules_after("--version", cwd=tmp_path)
    assert "ctxstore.cli.main" in mods
    assert _heavy(mods) == []
    assert not [m for m in mods if m.startswith("ctxstore.cli.cmd_")]  # no command module at all


def test_help_imports_no_command_module(tmp_path):
    mods = _modules_after("--help", cwd=tmp_path)
    assert not [m for m in mods if m.startswith("ctxstore.cli.cmd_")]


@pytest.mark.parametrize("args", [["status"], ["sessions"], ["log", "-n", "50"], ["show", "HEAD"],
                                  ["state"]])
def test_everyday_commands_import_nothing_heavy(tmp_path, args):
    from ctxstore.porcelain import sessions as ps
    from ctxstore.repo import Repository

    with Repository.init(tmp_path) as repo:
        repo.new_session("t")
        ps.append_batch(repo, [json.dumps({"type": "UserPromptSubmitted", "actor": "user",
                                           "payload": {"text": "hi"}})])
    if args in (["state"], ["sessions"]):  # the first run projects and caches; measure the next
        _modules_after("--store", str(tmp_path), *args, cwd=tmp_path)
    mods = _modules_after("--store", str(tmp_path), *args, cwd=tmp_path)
    heavy = _heavy(mods)
    heavy += [m for m in mods if m in READ_PATH_EXTRA]
    if args != ["sessions"]:
        heavy += [m for m in mods if m == "ctxstore.porcelain.listing"]
    heavy += [m for m in mods if m in ("socket", "getpass")]  # what a writing transaction records
    if args == ["state"]:  # projecting state needs the manager, never tiktoken's encoding
        heavy = [m for m in heavy if not m.startswith(("ctxstore.manager", "ctxstore.context"))
                 and m not in ("ctxstore.compaction", "ctxstore.compaction.live")]
        assert "tiktoken" not in mods
    assert heavy == []
