"""After a compaction that summarized every prompt, the model is still sent the user's newest
request as the current one (issue 35, mutant 2): the last prompt the summary replaced, not the
first."""

from __future__ import annotations

import json

from ctxstore import Repository
from ctxstore.compaction import compact

from .clitools import Ctx
from .sessions_factory import coding_session


def test_the_current_request_after_compaction_is_the_newest_prompt(tmp_path):
    repo = Repository.init(tmp_path)
    cm = coding_session(5, store=repo)
    assert compact(cm, keep_recent_tokens=50).committed
    bundle = cm.build_context(budget=20_000)
    (current,) = [s for s in bundle.kept if s.kind == "current_request"]
    assert current.text == "Turn 4: keep going with the fix, step 4."
    # no prompt survived the cut: the request came from the summarized range
    assert not any(s.kind == "turn" and "Turn 4:" in s.text for s in bundle.kept)
    repo.close()
    # what `ctx context` sends the model: the last user message is that request
    sent = Ctx(tmp_path).json("context", "--format", "openai", "--budget", "20000")
    users = [m["content"] for m in sent["messages"] if m["role"] == "user"]
    assert users and "Turn 4: keep going" in json.dumps(users[-1]) and "Turn 0" not in json.dumps(users[-1])


def test_the_current_request_is_the_whole_prompt_not_its_preview():
    """A long prompt's event carries a preview; the model gets the prompt itself."""
    from ctxstore.manager import PREVIEW_BYTES

    cm = coding_session(3)
    long = "Refactor the parser. " + "Keep every public name. " * (PREVIEW_BYTES // 10)
    cm.add_user_message(long)
    for t in range(3):  # tool work after it, so the cut leaves no prompt behind
        cm.add_assistant_message(f"Step {t}.", tool_calls=[
            {"id": f"late_{t}", "name": "bash", "args": {"cmd": f"pytest -k late_{t}"}}])
        cm.record_tool_result(f"late_{t}", "ok\n" * 200, name="bash")
    assert compact(cm, keep_recent_tokens=50).committed
    (current,) = [s for s in cm.build_context(budget=50_000).kept if s.kind == "current_request"]
    assert current.text == long


def test_a_prompt_recorded_without_a_message_is_sent_from_its_event(tmp_path):
    """`ctx append` records a prompt as an event only: after a compaction its text is the
    current request."""
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--title", "t")
    lines = "".join(
        f'{{"type": "UserPromptSubmitted", "actor": "user", "payload": {{"text": "ask {i}"}}}}\n'
        f'{{"type": "ModelResponseReceived", "actor": "model", "payload": '
        f'{{"text": "{"answer " * 60}{i}"}}}}\n' for i in range(4))
    ctx("append", "--batch", "-", input=lines)
    ctx("compact", "--keep-recent-tokens", "20")
    bundle = ctx.json("context", "--budget", "20000")
    current = [s for s in bundle["segments"] if s["kind"] == "current_request"]
    assert [s["kept"] for s in current] == [True]
    sent = ctx.json("context", "--format", "openai", "--budget", "20000")
    assert [m["content"] for m in sent["messages"] if m["role"] == "user"][-1] == "ask 3"
