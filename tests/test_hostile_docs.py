"""docs/security.md: every promise names its test, and every test it names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _named_tests() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    out, current = [], None
    for m in re.finditer(r"`(?:(test_\w+\.py))?(?:::(test_\w+))?", text):
        file, test = m.group(1), m.group(2)
        if file:
            current = file
        if test and current:
            out.append((current, test))
    return out


def test_every_test_security_md_names_exists():
    named = _named_tests()
    assert len(named) >= 20
    for file, test in named:
        path = ROOT / "tests" / file
        assert path.is_file(), file
        funcs = {n.name for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(n, ast.FunctionDef)}
        assert test in funcs, f"{file}::{test}"
