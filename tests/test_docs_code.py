"""Code in the docs is run, so the docs cannot rot: every ```python block of README.md and of
the guides in docs/ runs in a fresh namespace (blocks marked `# not run` are skipped)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Pages whose examples have a dedicated runner (they need a real module and their own checks).
OWN_RUNNER = {"langgraph.md": "tests/test_langgraph_docs.py",
              "claude-code.md": "tests/test_claude_code_docs.py"}
DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in OWN_RUNNER)]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks():
    for path in DOCS:
        for i, m in enumerate(BLOCK.finditer(path.read_text(encoding="utf-8"))):
            code = m.group(1)
            if "# not run" in code:
                continue
            yield pytest.param(code, id=f"{path.name}-{i}")


#: `# needs: MODULE` in a block: an optional extra's module (skipped without it, except in CI,
#: which installs every extra the README's test command names).
NEEDS = re.compile(r"# needs: ([\w.]+)")


@pytest.mark.parametrize("code", list(_blocks()))
def test_doc_block_runs(code, tmp_path, monkeypatch):
    from tests.corpus import in_ci

    for module in NEEDS.findall(code):
        if not in_ci():
            pytest.importorskip(module)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<doc>", "exec"), {"__name__": "__doc_example__"})


def test_readme_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", text, re.S).group(1).strip().splitlines()
    assert len(block) == 2
    assert block[0].endswith("ctx demo")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert block[1] in ci  # CI runs exactly the README's test command
