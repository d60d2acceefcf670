"""CtxstoreSession beyond the SDK's own tests: branches on real refs, pop and clear undone by
`ctx undo`, the items as events the state fold and `ctx` read, a `kill -9` between two
add_items, and docs/openai-agents.md executed."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest

if os.environ.get("CI") == "true":  # installed in CI through the extra: never skip there
    importlib.import_module("agents")
else:
    pytest.importorskip("agents")

from click.testing import CliRunner  # noqa: E402

from ctxstore.cli.main import cli  # noqa: E402
from ctxstore.integrations.openai_agents import (  # noqa: E402
    BranchError,
    CtxstoreSession,
    session_ids,
)
from ctxstore.integrations.openai_agents.session import session_ref  # noqa: E402
from ctxstore.porcelain.context import state as state_at  # noqa: E402
from ctxstore.refs import branch_ref  # noqa: E402
from ctxstore.repo import Repository, operations  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
from tests.doctools import code_blocks  # noqa: E402 (after the importorskip)

DOC = ROOT / "docs" / "openai-agents.md"


def run(coro):
    return asyncio.run(coro)


def conversation(turns: int) -> list[dict]:
    items: list[dict] = []
    for t in range(1, turns + 1):
        items += [{"role": "user", "content": f"question {t}"},
                  {"type": "function_call", "call_id": f"c{t}", "name": "grep",
                   "arguments": json.dumps({"pattern": f"p{t}"})},
                  {"type": "function_call_output", "call_id": f"c{t}", "output": f"hit {t}"},
                  {"type": "message", "role": "assistant",
                   "content": [{"type": "output_text", "text": f"answer {t}", "annotations": []}]}]
    return items


def ctx(store: Path, *args: str):
    res = CliRunner().invoke(cli, ["--store", str(store), *args])
    assert res.exit_code == 0, f"ctx {' '.join(args)}\n{res.output}\n{res.exception!r}"
    return res.output


# -- items as events ---------------------------------------------------------------------------

def test_items_are_events_the_state_fold_and_ctx_read(tmp_path):
    s = CtxstoreSession("fold", tmp_path)
    items = conversation(2)
    run(s.add_items(items))
    sid = s.ctx_session
    repo = s.repo
    tip = repo.refs.read(branch_ref(sid, "main"))
    types_ = [ev.type for _eid, ev in repo.graph.first_parents(tip)][::-1]
    assert types_ == ["SessionStarted"] + ["UserPromptSubmitted", "ToolCallRequested",
                                           "ToolCallFinished", "ModelResponseReceived"] * 2
    state = state_at(repo, tip)
    assert state.pending_tool_calls == {} and not state.abandoned_tool_calls
    root = repo.refs.read(session_ref("fold"))
    assert repo.graph.event(root).type == "SessionStarted"
    assert session_ids(repo) == ["fold"]
    s.close()
    log = ctx(tmp_path, "log", "--oneline", f"{sid}/main")
    assert "grep → hit 2" in log
    assert "UserPromptSubmitted question 1" in log
    assert "Current task: question 2" in ctx(tmp_path, "state", f"{sid}/main")
    assert ctx(tmp_path, "context", f"{sid}/main")


def test_a_call_without_its_output_is_pending_until_the_output_comes(tmp_path):
    s = CtxstoreSession("pending", tmp_path)
    run(s.add_items(conversation(1)[:2]))
    tip = s.repo.refs.read(branch_ref(s.ctx_session, "main"))
    assert list(state_at(s.repo, tip).pending_tool_calls) == ["c1"]
    run(s.add_items(conversation(1)[2:]))
    tip = s.repo.refs.read(branch_ref(s.ctx_session, "main"))
    assert state_at(s.repo, tip).pending_tool_calls == {}
    s.close()


def test_reopened_session_names_a_tool_output_after_its_call(tmp_path):
    s = CtxstoreSession("names", tmp_path)
    run(s.add_items(conversation(1)[:2]))
    s.close()
    s = CtxstoreSession("names", tmp_path)  # a new instance knows no call names yet
    run(s.add_items(conversation(1)[2:3]))
    tip = s.repo.refs.read(branch_ref(s.ctx_session, "main"))
    assert s.repo.graph.event(tip).payload.get("name") in ("grep", None)
    assert run(s.get_items()) == conversation(1)[:3]
    s.close()


def test_loaded_items_are_fresh_copies_and_other_writers_are_seen(tmp_path):
    a = CtxstoreSession("copies", tmp_path)
    items = conversation(1)
    run(a.add_items(items))
    got = run(a.get_items())
    got[0]["content"] = "changed by the caller"
    got[3]["content"][0]["text"] = "changed too"
    assert run(a.get_items()) == items  # what the session remembers is not the caller's
    b = CtxstoreSession("copies", Repository.open(tmp_path / ".ctx"))  # another writer
    run(b.add_items([{"role": "user", "content": "from b"}]))
    assert run(a.get_items()) == items + [{"role": "user", "content": "from b"}]
    run(b.pop_item())
    assert run(a.get_items()) == items
    a.close()
    b.close()


# -- pop and clear move refs, and are undone ---------------------------------------------------

def test_pop_item_is_an_operation_that_ctx_undo_reverts(tmp_path):
    s = CtxstoreSession("undo-pop", tmp_path)
    items = conversation(1)
    run(s.add_items(items))
    tip = s.repo.refs.read(branch_ref(s.ctx_session, "main"))
    assert run(s.pop_item()) == items[-1]
    assert run(s.get_items()) == items[:-1]
    ops = list(operations.walk(s.repo))
    assert ops[0].op.description.startswith("openai-agents: pop_item")
    assert s.repo.graph.event(tip)  # the popped event is still stored
    s.close()
    out = ctx(tmp_path, "undo")
    assert "pop_item" in out
    s = CtxstoreSession("undo-pop", tmp_path)
    assert run(s.get_items()) == items
    s.close()


def test_clear_session_keeps_every_event_and_undo_restores_all_branches(tmp_path):
    s = CtxstoreSession("undo-clear", tmp_path)
    items = conversation(3)
    run(s.add_items(items))
    run(s.create_branch_from_turn(2, "alt"))
    run(s.add_items([{"role": "user", "content": "asked differently"}]))
    sid = s.ctx_session
    before = dict(s.repo.branches(sid))
    run(s.clear_session())
    assert run(s.get_items()) == [] and s.current_branch == "main"
    assert list(s.repo.branches(sid)) == ["main"]
    for tip in before.values():
        assert s.repo.graph.event(tip)  # nothing was deleted
    op_id, undone = operations.undo(s.repo)
    assert undone.op.description.startswith("openai-agents: clear_session")
    assert dict(s.repo.branches(sid)) == before
    assert run(s.get_items()) == items
    run(s.switch_to_branch("alt"))
    assert run(s.get_items()) == items[:4] + [{"role": "user", "content": "asked differently"}]
    s.close()


# -- branches ----------------------------------------------------------------------------------

def test_branches_are_real_refs_like_advanced_sqlite_session(tmp_path):
    s = CtxstoreSession("branches", tmp_path)
    items = conversation(3)
    run(s.add_items(items))
    sid = s.ctx_session
    name = run(s.create_branch_from_turn(2))
    assert re.fullmatch(r"branch_from_turn_2_\d+", name)
    assert s.current_branch == name
    assert run(s.get_items()) == items[:4]  # everything before the 2nd user message
    assert s.repo.refs.read(branch_ref(sid, name)) is not None
    run(s.add_items([{"role": "user", "content": "question 2, again"}]))
    listed = {b["branch_id"]: b for b in run(s.list_branches())}
    assert listed["main"]["message_count"] == 12 and listed["main"]["user_turns"] == 3
    assert listed[name]["message_count"] == 5 and listed[name]["user_turns"] == 2
    assert listed[name]["is_current"] and not listed["main"]["is_current"]
    turns = run(s.get_conversation_turns())
    assert [t["full_content"] for t in turns] == ["question 1", "question 2, again"]
    run(s.switch_to_branch("main"))
    assert run(s.get_items()) == items
    with pytest.raises(BranchError):
        run(s.switch_to_branch("nope"))
    with pytest.raises(ValueError, match="does not contain a user message"):
        run(s.create_branch_from_turn(4))
    with pytest.raises(ValueError, match="does not contain a user message"):
        run(s.create_branch_from_turn(0))
    with pytest.raises(ValueError, match="already been used"):
        run(s.create_branch_from_turn(1, name))
    with pytest.raises(ValueError, match="main"):
        run(s.delete_branch("main"))
    run(s.switch_to_branch(name))
    with pytest.raises(ValueError, match="current branch"):
        run(s.delete_branch(name))
    run(s.delete_branch(name, force=True))
    assert s.current_branch == "main" and list(s.repo.branches(sid)) == ["main"]
    operations.undo(s.repo)  # deleting a branch is undoable too
    assert name in s.repo.branches(sid)
    s.close()


def test_a_session_opened_on_a_branch_appends_there(tmp_path):
    s = CtxstoreSession("on-branch", tmp_path)
    run(s.add_items(conversation(2)))
    run(s.create_branch_from_turn(2, "retry"))
    s.close()
    other = CtxstoreSession("on-branch", tmp_path, branch="retry")
    run(other.add_items([{"role": "user", "content": "retried"}]))
    assert run(other.get_items())[-1] == {"role": "user", "content": "retried"}
    other.close()
    main = CtxstoreSession("on-branch", tmp_path)
    assert run(main.get_items()) == conversation(2)
    main.close()


def test_two_instances_appending_to_one_session_lose_nothing(tmp_path):
    repo_path = tmp_path / "shared"
    a = CtxstoreSession("two", Repository.init(repo_path))
    b = CtxstoreSession("two", Repository.open(repo_path / ".ctx"))

    async def both():
        for i in range(10):
            await asyncio.gather(a.add_items([{"role": "user", "content": f"a{i}"}]),
                                 b.add_items([{"role": "user", "content": f"b{i}"}]))

    run(both())
    got = [i["content"] for i in run(a.get_items())]
    assert sorted(got) == sorted([f"a{i}" for i in range(10)] + [f"b{i}" for i in range(10)])
    assert run(b.get_items()) == run(a.get_items())
    a.close()
    b.close()


# -- durability --------------------------------------------------------------------------------

_WRITER = """
import asyncio, sys
from ctxstore.integrations.openai_agents import CtxstoreSession

async def main():
    s = CtxstoreSession("crash", sys.argv[1])
    for i in range(100000):
        await s.add_items([{"role": "user", "content": f"m{i}"}, {"role": "assistant", "content": f"r{i}"}])
        sys.stdout.write(f"{i}\\n")
        sys.stdout.flush()

asyncio.run(main())
"""


@pytest.mark.slow
def test_kill_9_between_two_add_items_loses_nothing_acknowledged(tmp_path):
    store = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(store)], stdout=subprocess.PIPE,
                            text=True, cwd=ROOT)
    acked = -1
    try:
        for line in proc.stdout:  # type: ignore[union-attr]
            acked = int(line)
            if acked >= 40:
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert acked >= 40
    s = CtxstoreSession("crash", store)
    got = run(s.get_items())
    n = len(got) // 2
    assert n > acked  # every acknowledged call survived (and maybe the one in flight)
    assert len(got) % 2 == 0  # an add_items is all or nothing
    assert got == [x for i in range(n) for x in ({"role": "user", "content": f"m{i}"},
                                                 {"role": "assistant", "content": f"r{i}"})]
    s.close()
    ctx(store, "fsck")  # exit 0: nothing damaged


# -- the documentation runs --------------------------------------------------------------------

def _blocks(lang: str) -> list[str]:
    return code_blocks(DOC, lang)


def test_doc_example_runs_and_ctx_reads_the_session(tmp_path, capsys):
    code = _blocks("python")
    assert len(code) == 1
    module = types.ModuleType("openai_agents_doc_example")
    sys.modules[module.__name__] = module
    try:
        exec(compile(code[0], str(DOC), "exec"), module.__dict__)  # cwd is tmp_path (conftest)
    finally:
        del sys.modules[module.__name__]
    out = capsys.readouterr().out
    assert "src holds 3 files." in out and "retry [6, 6]" in out
    assert "popped: docs holds 2 files." in out
    sid = module.__dict__["SESSION"]
    commands = [line[2:] for block in _blocks("console") for line in block.splitlines()
                if line.startswith("$ ctx ")]
    assert len(commands) >= 5
    outputs = []
    for command in commands:
        res = CliRunner().invoke(cli, shlex.split(command.replace("$SESSION", sid))[1:])
        assert res.exit_code == 0, f"{command}\n{res.output}\n{res.exception!r}"
        outputs.append(res.output)
    assert "OpenAI Agents session ticket-42" in outputs[0]
    assert "count_files" in outputs[1] and "tests holds none." in outputs[1]
    assert "Current task: And in tests?" in outputs[2]
    assert "docs holds 2 files." not in outputs[3]  # popped
    assert "pop_item" in outputs[4]
    assert "docs holds 2 files." in outputs[5]  # undone
