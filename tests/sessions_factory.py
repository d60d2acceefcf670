"""Realistic sessions for feature tests, written through the public ContextManager API."""

from __future__ import annotations

from ctxstore import ContextManager, Repository

HARD = ["Do not modify the public API.", "Run the relevant tests after the change."]
GOAL = "Fix the failing test and verify it."


def coding_session(turns: int = 6, *, store=None, fail_every: int = 0, write_files: bool = True,
                   big_output: int = 600) -> ContextManager:
    """`turns` rounds of: user prompt, tool call + result, file write, verifier."""
    store = store or Repository.memory()
    cm = ContextManager.start(store, "factory", GOAL, nonce="factory", ts="2026-01-01T00:00:00.000Z")
    cm.update_state({"constraints": {"hard": HARD},
                     "plan": {"status": "executing", "steps": [
                         {"id": "s1", "text": "Find the failure", "status": "done"},
                         {"id": "s2", "text": "Fix it", "status": "in_progress"}]}})
    for t in range(turns):
        cm.add_user_message(f"Turn {t}: keep going with the fix, step {t}.")
        cid = f"call_{t}"
        cm.add_assistant_message(f"Running step {t}.", tool_calls=[
            {"id": cid, "name": "bash", "args": {"cmd": f"pytest -k case_{t}"}}])
        if fail_every and t % fail_every == 0:
            cm.record_tool_result(cid, f"command failed: exit 2 at step {t}", is_error=True, name="bash")
        else:
            cm.record_tool_result(cid, "\n".join(f"line {i} of output for step {t}"
                                                 for i in range(big_output // 10)), name="bash")
        if write_files:
            cm.record_file_write(f"src/mod_{t}.py", f"change {t}")
        cm.record_verifier("pytest", "pass" if t % 2 else "fail")
    return cm
