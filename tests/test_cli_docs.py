"""docs/cli.md is generated from --help; this fails when a command's help changed without
regenerating it (`.venv/bin/python -m ctxstore.cli.docgen > docs/cli.md`)."""

from pathlib import Path

from ctxstore.cli.docgen import render
from ctxstore.errors import CtxError


def test_cli_reference_in_sync():
    doc = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
    assert doc.read_text(encoding="utf-8") == render(), \
        "docs/cli.md is stale: run `.venv/bin/python -m ctxstore.cli.docgen > docs/cli.md`"


def test_exit_codes_distinct_per_meaning():
    seen: dict[int, type] = {}
    stack = [CtxError]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        base = seen.get(cls.exit_code)
        # a code is shared only along one line of inheritance (a refinement of one meaning)
        assert base is None or issubclass(cls, base) or issubclass(base, cls), (cls, base)
        if base is None or issubclass(base, cls):
            seen[cls.exit_code] = cls
