"""Code in the docs is run, so the docs cannot rot: every ```python block of README.md and of
the guides in docs/ runs in a fresh namespace (blocks marked `# not run` are skipped)."""

from __future__ import annotations

import contextlib
import io
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


#: `print(x)  # what it prints` in a block: the comment is the documented output, `…`/`...`
#: where it leaves some out. Its words must appear, in order, in what the block printed.
PRINTED = re.compile(r"^\s*print\(.*\)\s*#\s*(.+)$", re.M)
ASSERTS = re.compile(r"^\s*(assert\b|raise AssertionError)", re.M)
WORDS = re.compile(r"[\w'\"/:.-]+")

#: Checks of blocks that neither assert nor document what they print: (page, a phrase of the
#: block) -> a check of the block's namespace and printed output.
CHECKS = {
    ("README.md", "to_anthropic(bundle)"): lambda ns, out: (
        re.fullmatch(r"make the parser test pass (\d+) tokens\n", out)
        and 0 < ns["bundle"].used_tokens <= 8000 and ns["payload"]["messages"]
        and str(ns["bundle"].used_tokens) in out),
    ("openai-agents.md", "CtxstoreSession(\"ticket-42\""): lambda ns, out: (
        out.splitlines()[0] == "src holds 3 files." and out.splitlines()[1].startswith("retry ")
        and out.splitlines()[-1] == "popped: docs holds 2 files." and ns["SESSION"]),
}


def _check_of(page: str, code: str):
    found = [check for (name, phrase), check in CHECKS.items() if name == page and phrase in code]
    return found[0] if found else None


def _words_in_order(expected: str, out: str) -> bool:
    pos = 0
    for word in WORDS.findall(expected.replace("…", " ").replace("...", " ")):
        word = word.strip(".:")
        if not word:
            continue
        pos = out.find(word, pos)
        if pos < 0:
            return False
        pos += len(word)
    return True


def test_every_doc_block_checks_something():
    """A block that only runs proves little: each asserts, documents what it prints, or has a
    check here."""
    unchecked = [p.id for p in _blocks() if not ASSERTS.search(p.values[0])
                 and not PRINTED.search(p.values[0])
                 and _check_of(p.id.rsplit("-", 1)[0], p.values[0]) is None]
    assert not unchecked, f"doc blocks that check nothing: {unchecked}"
    assert all(any(phrase in p.values[0] for p in _blocks()) for (_page, phrase) in CHECKS)


@pytest.mark.parametrize("code", list(_blocks()))
def test_doc_block_runs(code, tmp_path, monkeypatch, request):
    from tests.corpus import in_ci

    for module in NEEDS.findall(code):
        if not in_ci():
            pytest.importorskip(module)
    monkeypatch.chdir(tmp_path)
    ns = {"__name__": "__doc_example__"}
    printed = io.StringIO()  # stdout only: a block may hand sys.stderr to a subprocess
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "<doc>", "exec"), ns)
    out = printed.getvalue()
    for expected in PRINTED.findall(code):  # the output the page shows
        assert _words_in_order(expected, out), f"the page says it prints {expected!r}; it " \
                                              f"printed {out!r}"
    check = _check_of(request.node.callspec.id.rsplit("-", 1)[0], code)
    if check is not None:
        assert check(ns, out), out


def test_readme_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", text, re.S).group(1).strip().splitlines()
    assert len(block) == 2
    assert block[0].endswith("ctx demo")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert block[1] in ci  # CI runs exactly the README's test command


def test_documented_output_must_match_what_was_printed():
    out = "store config: \"redaction.on_pack\" must be true or false, not 'yes'\n"
    assert _words_in_order('store config: "redaction.on_pack" must be … not \'yes\'', out)
    assert not _words_in_order('store config: "redaction.on_push" must be true', out)
    assert not _words_in_order("not 'yes' … must be true", out)  # order matters
    assert not _words_in_order("{'builtin/aws-access-key-id': 2}",
                               "{'builtin/aws-access-key-id': 1}")
