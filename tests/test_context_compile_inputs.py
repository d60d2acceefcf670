"""What `ContextManager.build_context` puts in front of the model from what the caller passes
and what the history holds (issue 35: survivors of the context group's mutation run —
compile.py passed a system prompt, tools, a summary's sources and a merged branch's summary on
without any test looking at them)."""

from __future__ import annotations

from ctxstore.compaction import compact, merge_branch

from .sessions_factory import coding_session

TOOLS = [{"name": "bash", "description": "run a command", "parameters": {"type": "object"}}]


def test_the_system_prompt_and_tools_given_are_in_the_bundle():
    cm = coding_session(2)
    bundle = cm.build_context(budget=20_000, system_prompt="Be careful.", tools=TOOLS)
    (system,) = [s for s in bundle.kept if s.kind == "system"]
    assert system.text == "Be careful."
    assert [dict(s.data) for s in bundle.kept if s.kind == "tool_schema"] == TOOLS
    bare = cm.build_context(budget=20_000)
    assert not [s for s in bare.kept if s.kind in ("system", "tool_schema")]


def test_a_summary_names_its_compaction_event_and_first_replaced_event():
    cm = coding_session(5)
    res = compact(cm, keep_recent_tokens=50)
    rec = cm.repo.objects.get(res.compaction_id)
    (summary,) = [s for s in cm.build_context(budget=20_000).kept if s.kind == "summary"]
    assert summary.sources == (cm.tip, rec.first_event)
    assert summary.text.startswith(rec.summary[:40])


def test_a_merged_branch_reaches_the_context_as_its_checked_summary():
    cm = coding_session(2)
    alt = cm.fork("explore")
    for t in range(3):
        alt.record_tool_call(f"e{t}", "grep", {"q": f"thing {t}"})
        alt.record_tool_result(f"e{t}", f"found thing {t} in src/x.py\n" * 20)
    alt.update_state({"decisions_add": [{"decision": "thing 2 is the culprit",
                                         "rationale": "grep"}]})
    res = merge_branch(cm, "explore")
    merged_event = cm.tip
    rec = cm.repo.objects.get(res.compaction_id)
    merged = [s for s in cm.build_context(budget=50_000).kept
              if s.text.startswith("[Merged branch ")]
    assert len(merged) == 1
    assert merged[0].kind == "summary"
    assert merged[0].text == f"[Merged branch explore]\n{rec.summary}"
    assert merged[0].sources == (merged_event, res.compaction_id)


def test_a_merge_recorded_without_a_compaction_is_sent_from_its_event(tmp_path):
    """`ctx append BranchMerged` (or a harness that records a merge itself) carries its summary
    in the event: that is what the model gets, naming the branch or nothing."""
    from .clitools import Ctx

    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--title", "t")
    ctx("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "hi"}')
    named = ctx("append", "BranchMerged", "--payload",
                '{"branch": "side", "summary": "side found the bug"}').stdout.strip()
    bare = ctx("append", "BranchMerged", "--payload", '{"summary": "no branch named"}'
               ).stdout.strip()
    segs = [(s["kind"], s["text"], s["sources"]) for s in
            ctx.json("context", "--budget", "5000")["segments"] if "[Merged branch" in s["text"]]
    assert segs == [("summary", "[Merged branch side]\nside found the bug", [named]),
                    ("summary", "[Merged branch ]\nno branch named", [bare])]


def test_an_imported_subagent_is_named_on_the_call_that_spawned_it(corpus):
    """The five Task calls of an orchestrator transcript each name the session their subagent
    was imported as: the model's context says where each result came from."""
    from ctxstore import ContextManager, Repository
    from ctxstore.importers import import_paths

    repo = Repository.memory()
    name = "ccviewer_orchestrator-parallel-tasks_inline-sidechains_summary_v1.0.98.jsonl"
    report = import_paths(repo, [corpus / "claude-code" / name])
    main, *children = [s.session for s in report.sessions]
    bundle = ContextManager(repo, session=main, branch="main").build_context(budget=200_000)
    linked = [s for s in bundle.segments if s.data.get("subagent")]
    assert sorted(s.data["subagent"]["session"] for s in linked) == sorted(children)
    assert all(s.sources[-1] == s.data["subagent"]["session"] for s in linked)
