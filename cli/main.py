"""The `ctx` entry point: the command group, store discovery, and the one error handler.

Every command module registers itself on `cli`; each command parses its options, calls one
porcelain function, and renders text or --json. A CtxError becomes one line on stderr and its
exit code — here and nowhere else.

Start-up is lazy: only the invoked command's module is imported (commands.py says which), and
`ctx --help` lists the commands from that table without importing any of them.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

import click

from ctxstore import __version__
from ctxstore.errors import CtxError, IOFailure

from . import output
from .commands import COMMANDS
from .output import COLOR_CHOICES

if TYPE_CHECKING:  # pragma: no cover
    from ctxstore.repo import Repository


class State:
    """Per-invocation state: where the store is, opened on first use and closed at exit."""

    def __init__(self, store_path: str | None, argv: list[str] | None = None) -> None:
        self.store_path = store_path
        self.argv = argv  # the command line, for the operation log
        self._repo: Repository | None = None

    @property
    def repo(self) -> Repository:
        if self._repo is None:
            from ctxstore.repo.repository import Repository, command_line

            self._repo = Repository.discover(self.store_path)
            self._repo.command = command_line(["ctx", *(self.argv or [])])
        return self._repo

    def close(self) -> None:
        if self._repo is not None:
            self._repo.close()
            self._repo = None


def os_error_message(exc: OSError) -> str:
    """`<strerror>: <filename>` on one line, as the IOFailure backstop prints it."""
    text = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is not None:
        text = f"{text}: {exc.filename}"
    return " ".join(text.split())


def _without_store(args: list[str]) -> list[str]:
    """The arguments without `--store PATH` (where the store is says nothing about the
    operation, and paths are long)."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == "--store":
            skip = True
        elif not a.startswith("--store="):
            out.append(a)
    return out


def command_modules() -> list[str]:
    """Every `cmd_*` module of this package, found on disk (not from the table)."""
    import pkgutil

    package = importlib.import_module(__package__)
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__)
                  if m.name.startswith("cmd_"))


def load_all_commands() -> None:
    """Import every command module, registering all their commands (docgen, tests, and the
    fallback for a name the table lacks)."""
    for name in command_modules():
        importlib.import_module(f"{__package__}.{name}")


class CtxGroup(click.Group):
    """The `ctx` group: commands load on first use; one error handler for all of them."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except CtxError as exc:
            click.echo(f"ctx: error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except BrokenPipeError:  # `ctx log | head`
            ctx.exit(0)
        except OSError as exc:  # backstop: a file the command could not read or write
            click.echo(f"ctx: error: {os_error_message(exc)}", err=True)
            ctx.exit(IOFailure.exit_code)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """click's main, except that a usage error (unknown option, missing argument, bad
        value) is one line on stderr like every other error, naming the --help to read,
        instead of click's usage block; exit code 2 as click gives it."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else (prog_name or "ctx")
            click.echo(f"ctx: error: {exc.format_message()} (see '{where} --help')", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["ctx.argv"] = _without_store(args)
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        extra = [name for name in self.commands if name not in COMMANDS]
        return list(COMMANDS) + extra  # the table's order groups commands by family

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is not None:  # (an already imported module costs a dict look-up)
            for module in entry.modules():
                importlib.import_module(f"{__package__}.{module}")
        elif cmd_name not in self.commands:  # a typo, or a command the table lacks: look everywhere
            load_all_commands()
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The Commands section of `ctx --help`, from the table: imports no command module."""
        rows = [(name, entry.help) for name, entry in COMMANDS.items() if not entry.hidden]
        rows += [(name, cmd) for name, cmd in self.commands.items()
                 if name not in COMMANDS and not cmd.hidden]
        if not rows:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        out = []
        for name, help_ in rows:  # a stand-in Command shortens the table's help as click would
            cmd = help_ if isinstance(help_, click.Command) else click.Command(name, help=help_)
            out.append((name, cmd.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(out)


@click.group(cls=CtxGroup, context_settings={"help_option_names": ["-h", "--help"],
                                             "max_content_width": 100})
@click.option("--store", "store_path", metavar="PATH", envvar="CTX_DIR",
              help="The store directory (.ctx or its parent). Default: $CTX_DIR, else the "
                   "nearest .ctx found walking up from the current directory.")
@click.option("--color", type=click.Choice(COLOR_CHOICES), default="auto", show_default=True,
              help="Colour the output: auto = on a terminal unless NO_COLOR is set.")
@click.option("--no-pager", is_flag=True,
              help="Do not page long output (default pager: $CTX_PAGER, $PAGER, else less -FRX; "
                   "never when stdout is not a terminal).")
@click.version_option(__version__, prog_name="ctx")
@click.pass_context
def cli(ctx: click.Context, store_path: str | None, color: str, no_pager: bool) -> None:
    """ctx — a git-like, content-addressed store for the working state of LLM agents.

    Sessions are DAGs of immutable events; branches are refs; every ref move is in a reflog.

    \b
    Start here:
      ctx demo               run a scripted coding-agent session and show what it stored
      ctx init               create .ctx in the current directory
      ctx new --title T      start a session (HEAD moves to its main branch)
      ctx append TYPE        record an event; ctx log --graph to see them
      ctx context --explain  what the model would see now, and why
    """
    output.configure(ctx, color, no_pager)
    state = State(store_path, ctx.meta.get("ctx.argv"))
    ctx.obj = state
    ctx.call_on_close(state.close)


def main() -> None:
    if "hook" in sys.argv[1:4]:  # Claude Code's hook with nothing new: answered from a stat
        from ctxstore.integrations.claude_code.fastpath import nothing_to_do

        if nothing_to_do(sys.argv[1:]):
            sys.exit(0)
    cli(prog_name="ctx")


if __name__ == "__main__":  # pragma: no cover
    main()
