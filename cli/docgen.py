"""Generate docs/cli.md from the click app itself, so the reference cannot drift from --help.

    .venv/bin/python -m ctxstore.cli.docgen > docs/cli.md

tests/test_cli_docs.py fails when docs/cli.md differs from what this prints.
"""

from __future__ import annotations

import click

from ctxstore import errors

from .main import cli


def _exit_codes() -> list[tuple[int, str, str]]:
    rows: dict[int, tuple[str, str]] = {}
    stack = [errors.CtxError]
    while stack:
        cls = stack.pop()
        doc = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        if cls.exit_code not in rows or cls.__mro__.index(errors.CtxError) < \
                getattr(errors, rows[cls.exit_code][0]).__mro__.index(errors.CtxError):
            rows[cls.exit_code] = (cls.__name__, doc)
        stack.extend(cls.__subclasses__())
    return sorted((code, name, doc) for code, (name, doc) in rows.items())


def _walk(group: click.Group, ctx: click.Context, prefix: str):
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        sub = cmd.make_context(name, [], parent=ctx, resilient_parsing=True)
        yield f"{prefix} {name}", cmd, sub
        if isinstance(cmd, click.Group):
            yield from _walk(cmd, sub, f"{prefix} {name}")


def render() -> str:
    # make_context applies the group's context_settings (-h as well as --help), as a real run does
    root = cli.make_context("ctx", [], resilient_parsing=True)
    root.terminal_width = root.max_content_width = 100
    out = ["# ctx command reference", "",
           "Generated from `--help` by `python -m ctxstore.cli.docgen`; a test keeps it in sync.",
           "", "## Exit codes", "",
           "Every error prints one line `ctx: error: ...` on stderr and exits with its code; "
           "codes are never reused for another meaning. Usage errors (unknown option, missing "
           "argument) exit 2, as in click.", "",
           "| code | error | meaning |", "|---|---|---|"]
    out += [f"| {code} | `{name}` | {doc} |" for code, name, doc in _exit_codes()]
    out += ["", "## ctx", "", "```", cli.get_help(root).rstrip(), "```", ""]
    for name, cmd, sub in _walk(cli, root, "ctx"):
        sub.terminal_width = sub.max_content_width = 100
        out += [f"## {name}", "", "```", cmd.get_help(sub).rstrip(), "```", ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(render(), end="")
