"""The `llm:MODEL` summarizer (issue 12 item 9), offline: a mock model registered through llm's
plugin API answers with a recorded response (the structured summarizer's output for the same
request, or a broken variant of it). No network."""

from __future__ import annotations

import json

import pytest

llm = pytest.importorskip("llm")

from ctxstore import Repository  # noqa: E402
from ctxstore.compaction import StructuredSummarizer, compact  # noqa: E402
from ctxstore.compaction.llm_summarizer import PROMPT_VERSION, LlmSummarizer, render_request  # noqa: E402
from ctxstore.errors import CompactionRejected  # noqa: E402

from .sessions_factory import GOAL, coding_session  # noqa: E402

MODEL_ID = "ctx-test-recorded"


class Recorded(llm.Model):
    """Answers each prompt with `Recorded.answer(prompt_text)`; remembers what it was asked."""

    model_id = MODEL_ID
    can_stream = False
    prompts: list[tuple[str, str]] = []
    answer = staticmethod(lambda text: "{}")

    def execute(self, prompt, stream, response, conversation):
        Recorded.prompts.append((prompt.system or "", prompt.prompt))
        yield Recorded.answer(prompt.prompt)


class _Plugin:
    __name__ = "ctx_test_plugin"

    @llm.hookimpl
    def register_models(self, register):
        register(Recorded())


@pytest.fixture(autouse=True)
def mock_model(monkeypatch, tmp_path):
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm-home"))
    plugin = _Plugin()
    llm.pm.register(plugin, name="ctx_test_plugin")
    Recorded.prompts = []
    yield Recorded
    llm.pm.unregister(name="ctx_test_plugin")


def _answer_like_structured(break_it=None):
    """A recorded answer: what the structured summarizer says for the request the model got,
    optionally broken by `break_it(out)`."""
    holder = {}

    def answer(_text):
        out = StructuredSummarizer()(holder["request"])
        if break_it:
            break_it(out)
        return "```json\n" + json.dumps(out) + "\n```"

    return holder, answer


class Capturing(LlmSummarizer):
    def __init__(self, holder, *a, **kw):
        super().__init__(*a, **kw)
        self.holder = holder

    def __call__(self, request):
        self.holder["request"] = request
        return super().__call__(request)


def test_model_summary_passes_checks_and_records_model_and_prompt_version(mock_model):
    cm = coding_session(8, fail_every=3)
    holder, mock_model.answer = _answer_like_structured()
    res = compact(cm, keep_recent_tokens=300, summarizer=Capturing(holder, MODEL_ID))
    assert res.committed and res.summarizer == f"llm:{MODEL_ID}"
    rec = cm.repo.objects.get(res.compaction_id)
    assert rec.provenance["model"] == MODEL_ID
    assert rec.provenance["prompt_version"] == PROMPT_VERSION
    system, prompt = mock_model.prompts[-1]
    # given the structured request, asked for the structured fields
    assert "files:" in system and "next_steps" in system
    assert f"USER GOAL: {GOAL}" in prompt and "FILES MODIFIED:" in prompt
    assert "src/mod_0.py" in prompt and "ERRORS:" in prompt and "call_0" in prompt


def test_failing_model_summary_is_rejected_with_nothing_committed(mock_model):
    cm = coding_session(8)
    holder, mock_model.answer = _answer_like_structured(
        lambda out: out["files"].__setitem__("modified", []))
    tip, refs = cm.tip, dict(cm.repo.refs.iter_refs())
    with pytest.raises(CompactionRejected, match="file_writes_listed"):
        compact(cm, keep_recent_tokens=300, summarizer=Capturing(holder, MODEL_ID))
    assert cm.tip == tip and dict(cm.repo.refs.iter_refs()) == refs


def test_fallback_to_structured_is_said(mock_model):
    cm = coding_session(8)
    mock_model.answer = lambda text: "I could not do it, sorry."
    res = compact(cm, keep_recent_tokens=300, summarizer=LlmSummarizer(MODEL_ID),
                  fallback=StructuredSummarizer())
    assert res.committed and res.summarizer == "structured"
    assert res.note.startswith(f"llm:{MODEL_ID} was rejected") and "fell back to structured" in res.note
    rec = cm.repo.objects.get(res.compaction_id)
    assert rec.provenance["note"] == res.note


def test_long_ranges_are_cut_newest_kept():
    req = {"state": {"goal": {"user_goal": "g"}}, "events": [
        {"id": f"e{i:03d}", "type": "ModelResponseReceived", "text": f"event {i} " + "x" * 200}
        for i in range(500)]}
    text = render_request(req, max_chars=5000)
    assert len(text) <= 5200 and "event 499" in text and "event 0 " not in text
    assert "older event(s) left out" in text


def test_cli_llm_summarizer_and_fallback(mock_model, tmp_path):
    from .clitools import Ctx

    store = Repository.init(tmp_path)
    cm = coding_session(8, store=store)
    store.refs.set_head_symbolic(cm.ref)
    store.close()
    ctx = Ctx(tmp_path)
    mock_model.answer = lambda text: "not json"
    err = ctx.fails(11, "compact", "--keep-recent-tokens", "300", "--summarizer", f"llm:{MODEL_ID}")
    assert "summarizer_output" in err and "JSON" in err
    out = ctx("compact", "--keep-recent-tokens", "300", "--summarizer", f"llm:{MODEL_ID}",
              "--fallback").stdout
    assert "fell back to structured" in out and "Compaction" in out
    err = ctx.fails(10, "compact", "--summarizer", "llm:no-such-model-here")  # InvalidInput
    assert "no model 'no-such-model-here'" in err
