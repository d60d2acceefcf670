"""`ctx grep` exits 1 when nothing matches, as grep does — with --json too, where a script
tells "no match" from "matches" by the exit code as well as by the empty array (issue 35,
mutant 7)."""

from __future__ import annotations

import json

from .clitools import Ctx


def test_grep_json_exit_code_says_whether_anything_matched(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--title", "work")
    ctx("append", "--batch", "-",
        input='{"type": "UserPromptSubmitted", "actor": "user", "payload": {"text": "fix the parser"}}\n')
    found = json.loads(ctx("grep", "parser", "--json").stdout)
    assert [h["line"] for h in found] == ["fix the parser"]
    none = ctx("grep", "nothing-like-this", "--json", code=1)
    assert json.loads(none.stdout) == [] and none.stderr == ""
    assert ctx("grep", "nothing-like-this", code=1).stdout == ""
