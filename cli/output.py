"""Colour and the pager, decided once per invocation by git's rules.

Colour: `--color always|never` wins; `auto` (the default) colours only when stdout is a terminal
and `NO_COLOR` is unset (https://no-color.org). The decision is stored in click's context
(`ctx.color`), so every `click.style` + `click.echo` in the commands follows it, including
output that goes through the pager (a pipe, where click would otherwise strip colour).

Pager: commands whose output can be long (log, show, diff, grep, reflog) call `page()` before
printing. It starts `$CTX_PAGER`, else `$PAGER`, else `less`, only when stdout is a terminal and
`--no-pager` was not given; an empty value or `cat` means no pager. `LESS` defaults to `FRX` as
in git: quit when the text fits one screen, pass colour through, leave the text on screen.
Why not rich: these rules are a few lines; rich would add start-up time and a dependency.
"""

from __future__ import annotations

import os
import sys
from typing import NamedTuple

import click

COLOR_CHOICES = ("auto", "always", "never")
_META_KEY = "ctxstore.output"


class _Settings(NamedTuple):  # not a dataclass: every `ctx` start defines it
    color: bool
    pager: bool


def stdout_isatty() -> bool:
    """Whether the real stdout is a terminal (a seam tests replace)."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def color_wanted(mode: str, isatty: bool, env: dict | os._Environ = os.environ) -> bool:
    """The colour rule: an explicit --color wins, else a terminal without NO_COLOR."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    return isatty and not env.get("NO_COLOR")


def pager_command(env: dict | os._Environ = os.environ) -> str | None:
    """The pager to run: CTX_PAGER, else PAGER, else `less` if installed; None for no pager."""
    for var in ("CTX_PAGER", "PAGER"):
        if var in env:
            cmd = env[var].strip()
            return None if cmd in ("", "cat") else cmd
    import shutil  # start-up: only when a pager may run

    return "less" if shutil.which("less") else None


def configure(ctx: click.Context, color: str, no_pager: bool) -> None:
    """Called by the root command: fix colour for the whole run and whether `page()` may page."""
    tty = stdout_isatty()
    wanted = color_wanted(color, tty)
    ctx.color = wanted
    ctx.meta[_META_KEY] = _Settings(color=wanted, pager=tty and not no_pager)


def page() -> None:
    """Send the rest of this command's stdout through the pager, if the rules allow one."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return
    settings: _Settings | None = ctx.meta.get(_META_KEY)
    if settings is None or not settings.pager:
        return
    cmd = pager_command()
    if cmd is None:
        return
    ctx.meta[_META_KEY] = settings._replace(pager=False)  # once per run
    import io  # start-up: these load only when a pager runs
    import subprocess
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")  # as git: lv passes colour through
    try:
        proc = subprocess.Popen(cmd, shell=True, stdin=subprocess.PIPE, env=env)
    except OSError as exc:  # the pager could not start: print directly, say why once
        click.echo(f"ctx: warning: pager {cmd!r} did not start ({exc.strerror}); "
                   f"printing directly", err=True)
        return
    stream = io.TextIOWrapper(proc.stdin, encoding="utf-8", errors="replace",  # type: ignore[arg-type]
                              write_through=False)
    previous = sys.stdout
    sys.stdout = stream

    def finish() -> None:
        sys.stdout = previous
        try:
            stream.flush()
        except BrokenPipeError:  # the user quit the pager early: drop what is still buffered
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
        stream.close()
        proc.wait()

    ctx.find_root().call_on_close(finish)
