"""Issue 29 item 1: a compaction's summary stands for its range, for every kind of compaction.

The rule: the events from a compaction's `first_event` through `last_event` never appear in a
context built after it (no kept turn / chatter / tool_output / current_request segment is
sourced from one), and the next compaction (`ctx compact`, dry run or not) starts after
`last_event`. Checked on the corpus transcripts with compactions (Claude Code compact_boundary
+ isCompactSummary, Codex `compacted`, pi `compaction` with firstKeptEntryId), through the CLI,
and as one hypothesis property over compactions made here, imported from each harness, and
chained (imported then made here, several in a row).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxstore import ContextManager
from ctxstore.compaction import compact
from ctxstore.errors import CompactionRejected
from ctxstore.importers import import_paths
from ctxstore.objects import Compaction
from ctxstore.repo import Repository

from .clitools import Ctx
from .corpus import require_corpus

#: segments that replay history verbatim: none may come from a replaced event
VERBATIM = ("turn", "chatter", "tool_output", "current_request")

CORPUS_FILES = (
    "claude-code/FIXTURE_claude-code-log_dag-rewind-branch-compact-boundary.jsonl",
    "claude-code/FIXTURE_agent-sessions_schema-composite_compact-boundary_v2.1.x.jsonl",
    "codex/rollout-FIXTURE_agent-sessions_schema-composite_compacted_v0.146.jsonl",
    "pi/FIXTURE_agent-sessions_pi-v3_fixture-provider_compaction.jsonl",
    "pi/pi-mono_before-compaction_v1-format_genuine.jsonl",
)


# -- the rule, as one checker ----------------------------------------------------------------

def line_and_records(repo, tip):
    """(first-parent line oldest first, compaction records on it newest first)."""
    line, recs = [], []
    for eid, ev in repo.graph.first_parents(tip):
        line.append(eid)
        if ev.type == "CompactionCompleted":
            rec = repo.objects.get(ev.causality.get("compaction_id", ""))
            if isinstance(rec, Compaction) and rec.kind == "compaction":
                recs.append(rec)
    line.reverse()
    return line, recs


def replaced_by(recs) -> set[str]:
    out: set[str] = set()
    for rec in recs:
        out.update(rec.source_event_ids)
    return out


def leaks(segments, replaced: set[str]) -> list[dict]:
    """Kept verbatim segments sourced from a replaced event (segments as dicts)."""
    return [s for s in segments if s["kept"] and s["kind"] in VERBATIM
            and set(s["sources"]) & replaced]


def check_next_range(line: list[str], recs, first: str | None, last: str | None) -> None:
    """A proposed (or made) range FIRST..LAST holds no replaced event and starts after the
    newest earlier compaction's last_event."""
    if first is None:
        return
    pos = {e: i for i, e in enumerate(line)}
    i, j = pos[first], pos[last]
    assert not set(line[i:j + 1]) & replaced_by(recs), "the range re-summarizes replaced events"
    ends = [pos[r.last_event] for r in recs if r.last_event in pos]
    if ends:
        assert i > max(ends), "the range starts before the last compaction's last_event"


def assert_rule(cm: ContextManager) -> dict:
    """Both halves of the rule at the tip of CM's branch; returns figures for messages."""
    repo = cm.repo
    line, recs = line_and_records(repo, cm.tip)
    replaced = replaced_by(recs)
    bundle = cm.build_context(budget=400_000, auto_compact=False).to_dict()
    bad = leaks(bundle["segments"], replaced)
    assert not bad, [(s["kind"], s["text"][:60]) for s in bad]
    dry = compact(cm, dry_run=True, keep_recent_tokens=40)
    if dry.summarized:
        check_next_range(line, recs, dry.first_event, dry.last_event)
    return {"segments": sum(s["kept"] for s in bundle["segments"]),
            "tokens": bundle["used_tokens"], "dry_run": dry}


# -- the corpus, through the CLI -------------------------------------------------------------

@pytest.mark.parametrize("name", CORPUS_FILES, ids=lambda n: n.split("/")[-1][:48])
def test_corpus_compactions_replace_their_range(tmp_path, name):
    path = require_corpus() / name
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("import", str(path))
    repo = Repository.discover(str(tmp_path))
    seen = 0
    for s in ctx.json("sessions"):
        ctx("checkout", s["id"])
        for branch, tip in ctx.json("branch")["branches"].items():
            ctx("checkout", branch)
            line, recs = line_and_records(repo, tip)
            seen += len(recs)
            bundle = ctx.json("context", "--budget", "400000")
            assert not leaks(bundle["segments"], replaced_by(recs)), (s["id"], branch)
            dry = ctx.json("compact", "--dry-run", "--keep-recent-tokens", "40")
            rng = dry["summarized_range"]
            check_next_range(line, recs, rng["first"], rng["last"])
    assert seen, "the transcript has a compaction"


def test_claude_code_boundary_keeps_only_what_follows_it(tmp_path):
    """The rewind/compact fixture: the summary stands for Start..Kept going; the context holds
    the summary and the two turns after the boundary, and there is nothing to compact."""
    ctx = Ctx(tmp_path)
    ctx.import_alone(require_corpus() / CORPUS_FILES[0])
    bundle = ctx.json("context", "--budget", "400000")
    texts = [s["text"] for s in bundle["segments"] if s["kept"] and s["kind"] in VERBATIM]
    assert texts == ["After compaction", "Final answer"]
    summary = [s for s in bundle["segments"] if s["kind"] == "summary"]
    assert summary and "the user asked for a plan" in summary[0]["text"]
    dry = ctx.json("compact", "--dry-run")
    assert dry["summarized_events"] == 0 and dry["noop"].startswith("nothing to compact")
    assert dry["tokens_before"] < 60  # was 277: the replaced turns were counted again


def test_codex_compacted_dry_run_starts_after_the_last_compaction(tmp_path):
    ctx = Ctx(tmp_path)
    ctx.import_alone(require_corpus() / CORPUS_FILES[2])
    dry = ctx.json("compact", "--dry-run")
    # before the fix: 46 events from SessionStarted, 28,360 tokens before
    assert dry["summarized_events"] == 0 and dry["tokens_before"] < 2000


def test_pi_first_kept_entries_stay_verbatim():
    """pi keeps the entries from firstKeptEntryId on (they precede the compaction entry): they
    are live, the replaced entries before them are not."""
    repo = Repository.memory()
    report = import_paths(repo, [require_corpus() / CORPUS_FILES[4]])
    cm = ContextManager(repo, report.sessions[0].session, "main")
    line, recs = line_and_records(repo, cm.tip)
    assert recs[0].first_kept and recs[0].first_kept in line
    hist, rec, _ = cm.compiler.history(cm.tip)
    ids = [eid for eid, _ev, _m in hist]
    assert rec is recs[0] or rec.source_event_ids == recs[0].source_event_ids
    assert ids[0] == recs[0].first_kept
    assert not set(ids) & replaced_by(recs)
    assert_rule(cm)


# -- one property over every kind of compaction ------------------------------------------------

def _ts(n: int) -> str:
    return f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


def claude_code_lines(plan) -> list[dict]:
    out, prev, n = [], None, 0
    for step in plan:
        n += 1
        if step == "compact":
            cb = f"cb{n}"
            out.append({"type": "system", "subtype": "compact_boundary", "timestamp": _ts(n),
                        "parentUuid": None, "logicalParentUuid": prev, "isSidechain": False,
                        "sessionId": "s", "version": "2.1.0", "cwd": "/tmp", "uuid": cb,
                        "content": "Conversation compacted", "level": "info",
                        "compactMetadata": {"trigger": "auto", "preTokens": 1000}})
            out.append({"type": "user", "timestamp": _ts(n), "parentUuid": cb, "isSidechain": False,
                        "sessionId": "s", "version": "2.1.0", "cwd": "/tmp", "uuid": f"cs{n}",
                        "isCompactSummary": True, "message": {"role": "user", "content": [
                            {"type": "text", "text": f"This session is being continued. Summary {n}."}]}})
            prev = f"cs{n}"
            continue
        u, a, r, f = f"u{n}", f"a{n}", f"r{n}", f"f{n}"
        out.append({"type": "user", "timestamp": _ts(n), "parentUuid": prev, "isSidechain": False,
                    "sessionId": "s", "version": "2.1.0", "cwd": "/tmp", "uuid": u,
                    "message": {"role": "user", "content": [{"type": "text", "text": f"prompt {n}"}]}})
        out.append({"type": "assistant", "timestamp": _ts(n), "parentUuid": u, "isSidechain": False,
                    "sessionId": "s", "version": "2.1.0", "cwd": "/tmp", "uuid": a,
                    "requestId": f"req{n}", "message": {
                        "id": f"msg{n}", "type": "message", "role": "assistant", "model": "m",
                        "content": [{"type": "text", "text": f"answer {n}"},
                                    {"type": "tool_use", "id": f"tu{n}", "name": "Bash",
                                     "input": {"command": f"ls {n}"}}],
                        "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}})
        out.append({"type": "user", "timestamp": _ts(n), "parentUuid": a, "isSidechain": False,
                    "sessionId": "s", "version": "2.1.0", "cwd": "/tmp", "uuid": r,
                    "message": {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": f"tu{n}", "content": f"listing {n}"}]}})
        out.append({"type": "assistant", "timestamp": _ts(n), "parentUuid": r, "isSidechain": False,
                    "sessionId": "s", "version": "2.1.0", "cwd": "/tmp", "uuid": f,
                    "requestId": f"req{n}b", "message": {
                        "id": f"msg{n}b", "type": "message", "role": "assistant", "model": "m",
                        "content": [{"type": "text", "text": f"done {n}"}], "stop_reason": "end_turn",
                        "usage": {"input_tokens": 10, "output_tokens": 5}}})
        prev = f
    return out


def codex_lines(plan) -> list[dict]:
    out = [{"timestamp": _ts(0), "type": "session_meta",
            "payload": {"id": "0199aaaa-0000-7000-8000-000000000001", "timestamp": _ts(0),
                        "cwd": "/tmp", "originator": "codex_cli_rs", "cli_version": "0.58.0"}}]
    for n, step in enumerate(plan, 1):
        if step == "compact":
            out.append({"timestamp": _ts(n), "type": "compacted", "payload": {
                "message": f"Summary {n}.", "replacement_history": [
                    {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": f"prompt {n - 1}"}]}]}})
            continue
        item = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"prompt {n}"}]},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": f"answer {n}"}]},
                {"type": "function_call", "name": "shell", "call_id": f"c{n}",
                 "arguments": json.dumps({"command": ["ls", str(n)]})},
                {"type": "function_call_output", "call_id": f"c{n}",
                 "output": json.dumps({"output": f"listing {n}", "metadata": {"exit_code": 0}})},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": f"done {n}"}]}]
        out.extend({"timestamp": _ts(n), "type": "response_item", "payload": p} for p in item)
    return out


def pi_lines(plan, keeps) -> list[dict]:
    out = [{"type": "session", "version": 3, "id": "0199bbbb-0000-7000-8000-000000000001",
            "timestamp": _ts(0), "cwd": "/tmp"}]
    prev, since, n = None, [], 0
    usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    for k, step in enumerate(plan):
        n += 1
        if step == "compact":
            kept = since[min(keeps[k % len(keeps)], len(since) - 1)] if since else prev
            out.append({"type": "compaction", "id": f"c{n}", "parentId": prev, "timestamp": _ts(n),
                        "summary": f"Summary {n}.", "firstKeptEntryId": kept, "tokensBefore": 100})
            prev, since = f"c{n}", []
            continue
        for mid, role, content in (
                (f"u{n}", "user", [{"type": "text", "text": f"prompt {n}"}]),
                (f"a{n}", "assistant", [{"type": "text", "text": f"answer {n}"},
                                        {"type": "toolCall", "id": f"t{n}", "name": "bash",
                                         "arguments": {"command": f"ls {n}"}}]),
                (f"r{n}", "toolResult", None),
                (f"f{n}", "assistant", [{"type": "text", "text": f"done {n}"}])):
            if role == "toolResult":
                msg = {"role": "toolResult", "toolCallId": f"t{n}", "toolName": "bash",
                       "content": [{"type": "text", "text": f"listing {n}"}], "isError": False}
            else:
                msg = {"role": role, "content": content}
                if role == "assistant":
                    msg.update(api="openai-completions", provider="p", model="m", usage=usage,
                               stopReason="toolUse" if len(content) > 1 else "stop")
            out.append({"type": "message", "id": mid, "parentId": prev, "timestamp": _ts(n),
                        "message": msg})
            prev = mid
            since.append(mid)
    return out


def _import(tmp_path, harness: str, plan, keeps) -> ContextManager:
    lines = {"claude-code": lambda: claude_code_lines(plan), "codex": lambda: codex_lines(plan),
             "pi": lambda: pi_lines(plan, keeps)}[harness]()
    name = {"claude-code": "s.jsonl", "codex": "rollout-2026-01-01T00-00-00-x.jsonl",
            "pi": "2026-01-01_pi.jsonl"}[harness]
    path = tmp_path / name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    repo = Repository.memory()
    report = import_paths(repo, [path], format=harness)
    main = report.sessions[0]
    assert main.compactions == plan.count("compact"), (harness, plan)
    return ContextManager(repo, main.session, "main")


PLAN = st.lists(st.sampled_from(["turn", "turn", "compact"]), min_size=1, max_size=9)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(harness=st.sampled_from(["claude-code", "codex", "pi", "here"]), plan=PLAN,
       keeps=st.lists(st.integers(0, 3), min_size=1, max_size=4),
       here=st.lists(st.integers(1, 4), max_size=3))
# found by the property: pi kept a tool result whose call its compaction replaced; a compaction
# made here after it saw "a result without its call" and refused (the call lies before the
# live history, so no cut of ours split that pair)
@example(harness="pi", plan=["turn", "compact"], keeps=[2], here=[2])
def test_property_a_compaction_replaces_its_range(tmp_path_factory, harness, plan, keeps, here):
    """Whatever made the compactions (a harness, this store, both in a row), after each one
    the context holds nothing of any replaced range and the next compaction starts after it."""
    tmp = tmp_path_factory.mktemp("h")
    if harness == "here":
        from ctxstore import Repository

        cm = ContextManager.start(Repository.memory(), "here", "Fix the bug.")
        here = here or [3, 2]
    elif "turn" not in plan:
        plan = ["turn", *plan]
        cm = _import(tmp, harness, plan, keeps)
    else:
        cm = _import(tmp, harness, plan, keeps)
    assert_rule(cm)
    n = 0
    for turns in here:  # chain compactions made here on top of whatever came before
        for _ in range(turns):
            n += 1
            cm.add_user_message(f"more work {n} " + "word " * 30)
            cm.record_tool_call(f"h{n}", "bash", {"cmd": f"make {n}"})
            cm.record_tool_result(f"h{n}", f"built {n} " + "ok " * 300)
            cm.add_assistant_message(f"built step {n}")
        line, recs = line_and_records(cm.repo, cm.tip)
        try:
            res = compact(cm, keep_recent_tokens=40)
        except CompactionRejected as exc:  # e.g. a range too short to summarize smaller
            assert "smaller_than_replaced" in str(exc), exc
            continue
        if res.committed:
            check_next_range(line, recs, res.first_event, res.last_event)
        assert_rule(cm)
