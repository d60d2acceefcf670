"""docs/claude-code.md is executed: its Python example runs against a real store, then its
`ctx` commands run against the store the example made, so the page cannot rot."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxstore.cli.main import cli
from tests.corpus import in_ci
from tests.doctools import code_blocks

if not in_ci():
    pytest.importorskip("claude_agent_sdk")

DOC = Path(__file__).resolve().parent.parent / "docs" / "claude-code.md"


def blocks(lang: str) -> list[str]:
    return code_blocks(DOC, lang)


def test_example_runs_and_ctx_reads_the_session(tmp_path, capsys):
    code = blocks("python")
    assert len(code) == 1
    exec(compile(code[0], str(DOC), "exec"), {"__name__": "claude_code_doc"})  # cwd: tmp_path
    assert "2b1c7a9e-0000-4000-8000-000000000001" in capsys.readouterr().out
    commands = [line[2:] for block in blocks("console") for line in block.splitlines()
                if line.startswith("$ ctx ")]
    assert len(commands) == 3
    outputs = []
    for command in commands:
        res = CliRunner().invoke(cli, shlex.split(command)[1:])
        assert res.exit_code == 0, f"{command}\n{res.output}\n{res.exception!r}"
        outputs.append(res.output)
    assert "Why does test_parse fail?" in outputs[0] + outputs[1]
    assert "ToolCallRequested" in outputs[1]
    settings = json.loads((tmp_path / "demo" / ".claude" / "settings.json").read_text())
    assert "PostToolUse" in settings["hooks"]
