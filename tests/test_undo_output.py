"""What `ctx undo` says it did (issue 35, mutant 6): each ref it moved, from where it was
before the undo to where the undo put it — the reverse of the operation it undid."""

from __future__ import annotations

from .clitools import Ctx


def test_undo_prints_each_ref_move_from_before_to_after(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--title", "work")
    ctx("append", "--batch", "-", input="".join(
        f'{{"type": "UserPromptSubmitted", "actor": "user", "payload": {{"text": "p{i}"}}}}\n'
        for i in range(3)))
    status = ctx.json("status")
    sid, tip = status["session"], status["head"]
    ctx("reset", "HEAD~2")
    back = ctx.json("status")["head"]
    assert back != tip
    ref = f"refs/sessions/{sid}/main"

    res = ctx.json("undo")
    assert {"ref": ref, "old": back, "new": tip} in res["changes"]
    assert ctx.json("status")["head"] == tip
    # the undo of the undo moves it back again: its changes are this one's, reversed
    ctx("undo")
    assert ctx.json("status")["head"] == back
    out = ctx("undo").stdout  # the human view of the same: before -> after
    assert f"  {sid[:12]}/main: {back[:12]} -> {tip[:12]}\n" in out, out
    assert ctx.json("status")["head"] == tip
