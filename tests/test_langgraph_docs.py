"""docs/langgraph.md is executed: its Python example runs, then its `ctx` commands run against
the store the example made, so the page cannot rot."""

from __future__ import annotations

import shlex
import sys
import types
from pathlib import Path

import pytest

from tests.doctools import code_blocks

pytest.importorskip("langgraph")

DOC = Path(__file__).resolve().parent.parent / "docs" / "langgraph.md"


def blocks(lang: str) -> list[str]:
    return code_blocks(DOC, lang)


def test_example_runs_and_ctx_reads_the_threads(tmp_path, capsys):
    code = blocks("python")
    assert len(code) == 1
    module = types.ModuleType("langgraph_doc_example")  # a real module: LangGraph reads the
    sys.modules[module.__name__] = module  # State annotations through its globals
    try:
        exec(compile(code[0], str(DOC), "exec"), module.__dict__)  # cwd is tmp_path (conftest)
    finally:
        del sys.modules[module.__name__]
    ns = module.__dict__
    out = capsys.readouterr().out
    assert "('approve',)" in out and "Done: 1 file changed" in out and "Stopped:" in out
    assert (tmp_path / "demo-store" / ".ctx").is_dir()

    from click.testing import CliRunner

    from ctxstore.cli.main import cli

    commands = [line[2:] for block in blocks("console") for line in block.splitlines()
                if line.startswith("$ ctx ")]
    assert len(commands) >= 3
    outputs = []
    for command in commands:
        command = command.replace("$SESSION", ns["SESSION"]).replace("$COPY", ns["COPY"])
        res = CliRunner().invoke(cli, shlex.split(command)[1:])
        assert res.exit_code == 0, f"{command}\n{res.output}\n{res.exception!r}"
        outputs.append(res.output)
    text = "\n".join(outputs)
    assert "LangGraph thread ticket-42-alt" in text
    assert "langgraph:checkpoint" in text and "langgraph:writes" in text
    assert "langgraph:copied" in text and "merge base" in text
