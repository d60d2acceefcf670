"""`python -m ctxstore.cli.entries` prints the cli/commands.py table line of every command as
defined now (what tests/test_cli_lazy.py asks for when one is missing or stale).

It lives apart from the table because it must load every command through main.py, which
imports the table: the table itself imports nothing of the CLI, so the two never import
each other."""

from __future__ import annotations

from .commands import COMMANDS, entry_line
from .main import cli, load_all_commands


def print_table() -> None:
    load_all_commands()
    for name in [*COMMANDS, *(n for n in cli.commands if n not in COMMANDS)]:
        print(entry_line(name, cli.commands[name]))


if __name__ == "__main__":  # pragma: no cover
    print_table()
