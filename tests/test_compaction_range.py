"""Compaction checks against the replaced range's projected state (issue 12 item 8), "n/a" for
checks with nothing to look at, no-op exit codes and small-branch merges (issue 14 item 4),
imported compactions' counts in `ctx log`."""

from __future__ import annotations

import pytest

from ctxstore import ContextManager, Repository
from ctxstore.compaction import CallableSummarizer, StructuredSummarizer, compact, merge_branch
from ctxstore.compaction.checks import MERGE_MIN_SUMMARY_TOKENS
from ctxstore.errors import CompactionRejected

from .sessions_factory import coding_session


def _checks(res):
    return {c.rule: c for c in res.checks}


def _drop(field, key=None):
    def fn(req):
        out = StructuredSummarizer()(req)
        if key:
            out[field][key] = []
        else:
            out[field] = []
        return out
    return CallableSummarizer(fn, name="dropping")


def test_file_writes_listed_names_the_modified_files_of_the_range():
    cm = coding_session(8)
    res = compact(cm, keep_recent_tokens=300, dry_run=True)
    files = _checks(res)["file_writes_listed"]
    assert files.status == "pass" and "src/mod_0.py" in files.detail
    bad = compact(cm, keep_recent_tokens=300, dry_run=True,
                  summarizer=_drop("files", "modified"))
    files = _checks(bad)["file_writes_listed"]
    assert files.status == "fail" and "not in files.modified: src/mod_0.py" in files.detail


def test_files_written_after_the_cut_are_named_not_checked():
    cm = coding_session(3, write_files=False)
    for t in range(6):
        cm.add_user_message(f"talk {t} " + "w " * 80)
    cm.record_file_write("src/late.py", "written near the end")
    cm.add_user_message("done?")
    res = compact(cm, keep_recent_tokens=60, dry_run=True)
    files = _checks(res)["file_writes_listed"]
    assert files.status == "n/a" and "kept verbatim: src/late.py" in files.detail


def test_checks_with_nothing_to_check_say_na():
    store = Repository.memory()
    cm = ContextManager.start(store, "t", "")
    for t in range(20):
        cm.add_user_message(f"chat {t} " + "words " * 40)
    res = compact(cm, keep_recent_tokens=200, dry_run=True)
    c = _checks(res)
    for rule in ("file_writes_listed", "tool_errors_listed", "tool_pairs_intact", "plan_carried",
                 "goal_verbatim", "hard_constraints_verbatim"):
        if rule == "goal_verbatim" and c[rule].status != "n/a":
            continue  # the first prompt becomes the goal
        assert c[rule].status == "n/a" and c[rule].ok, (rule, c[rule])
    assert c["smaller_than_replaced"].status == "pass"


def test_plan_carried_can_fail():
    cm = coding_session(8)
    cm.update_state({"plan": {"steps": [{"id": "a", "text": "Write the regression test",
                                         "status": "pending"}]}})
    for t in range(6):
        cm.add_user_message(f"more {t} " + "w " * 60)
    ok = compact(cm, keep_recent_tokens=300, dry_run=True)
    assert _checks(ok)["plan_carried"].status == "pass"

    def no_plan(req):
        out = StructuredSummarizer()(req)
        out["progress"] = {"done": [], "in_progress": []}
        out["next_steps"] = ["carry on"]
        return out

    bad = compact(cm, keep_recent_tokens=300, dry_run=True,
                  summarizer=CallableSummarizer(no_plan))
    assert _checks(bad)["plan_carried"].status == "fail"
    with pytest.raises(CompactionRejected, match="plan_carried"):
        compact(cm, keep_recent_tokens=300, summarizer=CallableSummarizer(no_plan))


def test_errors_are_checked_one_by_one():
    cm = coding_session(8, fail_every=2)

    def drop_one(req):
        out = StructuredSummarizer()(req)
        out["errors"] = out["errors"][1:]
        return out

    res = compact(cm, keep_recent_tokens=300, dry_run=True, summarizer=CallableSummarizer(drop_one))
    errs = _checks(res)["tool_errors_listed"]
    assert errs.status == "fail" and "call_0" in errs.detail


def test_a_small_branch_can_be_merged():
    cm = coding_session(2)
    alt = cm.fork("tiny")
    alt.update_state({"decisions_add": ["use the cache"]})
    res = merge_branch(cm, "tiny", dry_run=True)
    size = _checks(res)["smaller_than_replaced"]
    assert res.tokens_before < MERGE_MIN_SUMMARY_TOKENS and size.ok, size.detail
    assert "small branch" in size.detail
    done = merge_branch(cm, "tiny")
    assert done.committed


def test_cli_noop_merge_and_compact_exit_zero(tmp_path):
    from .clitools import Ctx

    store = Repository.init(tmp_path)
    cm = coding_session(1, store=store)
    cm.fork("same")
    store.refs.set_head_symbolic(cm.ref)
    store.close()
    ctx = Ctx(tmp_path)
    out = ctx("merge", "same").stdout
    assert out.startswith("nothing to merge") and "FAIL" not in out
    out = ctx("compact", "--dry-run").stdout
    assert out.startswith("nothing to compact") and "FAIL" not in out
    assert ctx.json("merge", "same")["noop"]


def test_imported_compaction_shows_its_counts_in_log(tmp_path):
    from .clitools import Ctx
    from .corpus import require_corpus

    root = require_corpus()
    ctx = Ctx(tmp_path)
    ctx.import_alone(root / "pi" / "pi-mono_before-compaction_v1-format_genuine.jsonl")
    lines = [ln for ln in ctx("log", "--oneline", "-n", "2000").stdout.splitlines()
             if "CompactionCompleted" in ln]
    assert len(lines) == 2
    for ln in lines:
        assert "?" not in ln and "summarized" in ln and "→" in ln
    assert any("summarized 381 events: 185,014 →" in ln for ln in lines)
