"""`ctx demo`: the seed's CLI agent fixing a failing test, scripted through the public API.

No network, no model, deterministic: fixed timestamps and a fixed session nonce, so the same
store gives the same ids. The script reads files, runs the tests (big output → artifact), edits,
runs again, forks to try a second approach, rolls that one back, compacts the main line and
merges the failed exploration's conclusions back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..manager import ContextManager
from ..objects import Session
from ..repo import Repository

SERIALIZER = '''def serialize(expr):
    """Render an expression tree as text."""
    if expr.op == "+":
        return serialize(expr.left) + "+" + serialize(expr.right)
    return str(expr.value)
'''

FAILING_RUN = "\n".join(
    [f"tests/test_parser.py::test_case_{i:03d} PASSED" for i in range(180)]
    + ["tests/test_serializer.py::test_plus_spacing FAILED",
       "",
       "    def test_plus_spacing():",
       ">       assert serialize(parse('1 + 2')) == '1 + 2'",
       "E       AssertionError: assert '1+2' == '1 + 2'",
       "",
       "=========== 1 failed, 180 passed in 2.31s ==========="])
PASSING_RUN = "\n".join([f"tests/test_parser.py::test_case_{i:03d} PASSED" for i in range(180)]
                        + ["tests/test_serializer.py::test_plus_spacing PASSED",
                           "=========== 181 passed in 2.28s ==========="])


@dataclass
class DemoResult:
    store: str
    session: str
    steps: list[str] = field(default_factory=list)
    compaction: str | None = None
    merge: str | None = None


def _ts(i: int) -> str:
    return f"2026-06-03T09:{i // 60:02d}:{i % 60:02d}.000Z"


def _free_nonce(repo: Repository) -> str:
    taken = set()
    for sid in repo.session_ids():
        try:
            taken.add(repo.session(sid).nonce)
        except Exception:  # noqa: BLE001 - a foreign object under refs/sessions is not ours to judge
            continue
    n = 1
    while (nonce := "ctx-demo" if n == 1 else f"ctx-demo-{n}") in taken:
        n += 1
    return nonce


def run_demo(repo: Repository, say: Callable[[str], None] = lambda s: None) -> DemoResult:
    clock = iter(range(10_000))

    def ts() -> str:
        return _ts(next(clock))

    # the cwd is made up (and not absolute): no real machine's path goes into the repository
    cm = ContextManager.start(repo, "Fix the failing serializer test",
                              "Fix the failing test and verify it.", ts=ts(),
                              nonce=_free_nonce(repo), cwd="~/src/demo-project")
    res = DemoResult(str(repo.path) if repo.path else "(memory)", cm.session)

    def step(text: str) -> None:
        res.steps.append(text)
        say(text)

    step("user asks for a fix")
    cm.add_user_message("The serializer test fails. Please fix it, don't change the public API, "
                        "and run the tests after the change.", ts=ts())
    cm.update_state({"goal": {"current_task": "Locate the failing assertion in test_serializer.py",
                              "acceptance_criteria": ["pytest passes"]},
                     "constraints": {"hard": ["Do not modify the public API.",
                                              "Run the relevant tests after the change."]},
                     "plan": {"status": "executing", "steps": [
                         {"id": "s1", "text": "Run the tests to see the failure", "status": "in_progress"},
                         {"id": "s2", "text": "Fix serialize() spacing", "status": "todo"},
                         {"id": "s3", "text": "Re-run the tests", "status": "todo"}]}}, ts=ts())

    step("agent runs the tests (big output becomes an artifact)")
    cm.add_assistant_message("Let me run the test suite first.",
                             tool_calls=[{"id": "call_1", "name": "bash", "args": {"cmd": "pytest -q"}}],
                             ts=ts())
    cm.record_tool_result("call_1", FAILING_RUN, name="bash", ts=ts())
    cm.record_verifier("pytest", "fail", ts=ts())

    step("agent reads the serializer")
    cm.add_assistant_message("The '+' operator is rendered without spaces. Reading the serializer.",
                             tool_calls=[{"id": "call_2", "name": "read_file",
                                          "args": {"path": "src/serializer.py"}}], ts=ts())
    cm.record_tool_result("call_2", SERIALIZER, name="read_file", ts=ts())
    cm.record_file_read("src/serializer.py", SERIALIZER, ts=ts())
    cm.update_state({"facts_add": [{"content": "serialize() joins '+' operands without spaces",
                                    "confidence": 0.95}],
                     "open_questions_add": ["Should other operators get spaces too?"]}, ts=ts())
    fork_point = cm.tip

    step("fork: try approach B (change the test's expectation) on its own branch")
    alt = cm.fork("approach-b", fork_point)
    alt.add_assistant_message("Alternative: relax the test instead of the serializer.", ts=ts())
    alt.record_file_write("tests/test_serializer.py", "expect '1+2'",
                          diff="-    == '1 + 2'\n+    == '1+2'\n", ts=ts())
    alt.add_assistant_message("Running the tests against the relaxed expectation.", tool_calls=[
        {"id": "call_b1", "name": "bash", "args": {"cmd": "pytest -q"}}], ts=ts())
    alt.record_tool_result("call_b1", PASSING_RUN, name="bash", ts=ts())
    alt.update_state({"decisions_add": [{"decision": "Changing the test violates the intent of the "
                                                     "user's request", "rationale": "the test states "
                                                     "the expected public output"}]}, ts=ts())
    bad_tip = alt.tip
    alt.record_verifier("review: public API unchanged", "fail", ts=ts())
    step("roll approach B back to before its failed review (kept in the reflog)")
    alt.rollback(bad_tip)

    step("main line: edit the serializer and re-run the tests")
    cm.add_assistant_message("Fixing serialize() to put spaces around '+'.", tool_calls=[
        {"id": "call_3", "name": "apply_patch", "args": {"path": "src/serializer.py"}}], ts=ts())
    cm.record_tool_result("call_3", "patched src/serializer.py (1 line)", name="apply_patch", ts=ts())
    cm.record_file_write("src/serializer.py", "Put spaces around '+' in serialize().",
                         diff='-        return serialize(expr.left) + "+" + serialize(expr.right)\n'
                              '+        return serialize(expr.left) + " + " + serialize(expr.right)\n',
                         ts=ts())
    cm.add_assistant_message("Re-running the tests.", tool_calls=[
        {"id": "call_4", "name": "bash", "args": {"cmd": "pytest -q"}}], ts=ts())
    cm.record_tool_result("call_4", PASSING_RUN, name="bash", ts=ts())
    cm.record_verifier("pytest", "pass", ts=ts())
    cm.update_state({"goal": {"current_task": "Report the fix to the user"},
                     "plan": {"status": "verifying", "steps": [
                         {"id": "s1", "text": "Run the tests to see the failure", "status": "done"},
                         {"id": "s2", "text": "Fix serialize() spacing", "status": "done"},
                         {"id": "s3", "text": "Re-run the tests", "status": "done"},
                         {"id": "s4", "text": "Summarize the change for the user", "status": "todo"}]}},
                    ts=ts())
    try:
        from ..compaction import compact, merge_branch
    except ImportError:  # compaction not built into this version
        return res
    step("compact the main line (checked before it counts)")
    result = compact(cm, keep_recent_tokens=400, ts=ts())
    res.compaction = result.compaction_id
    step("merge approach B's conclusions back into main")
    res.merge = merge_branch(cm, "approach-b", ts=ts()).compaction_id
    return res


__all__ = ["DemoResult", "Session", "run_demo"]
