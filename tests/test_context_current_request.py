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
