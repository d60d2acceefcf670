"""What each provider adapter sends for the tools a caller declares (issue 35: mutants of
`to_anthropic`'s tool mapping survived every test, which looked at one field of one tool)."""

from __future__ import annotations

from ctxstore.context import (
    EstimateTokenizer,
    Segment,
    build_context,
    candidates_from_history,
    to_anthropic,
    to_openai,
)
from ctxstore.state import project

from .test_adapters import _history

TOOLS = [{"name": "bash", "description": "run a command",
          "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
         {"name": "noop"},                                    # neither description nor schema
         {"name": "read", "description": "", "parameters": {}}]  # empty schema: the default


def _bundle():
    hist = _history()
    state = project((i, e) for i, e, _ in hist)
    cands = candidates_from_history(state, hist, system_prompt="Be careful.",
                                    tokenizer=EstimateTokenizer(), tools=TOOLS)
    return build_context(state, cands, 10_000, tokenizer=EstimateTokenizer())


def test_anthropic_tools_carry_name_description_and_schema_with_defaults():
    assert to_anthropic(_bundle())["tools"] == [
        {"name": "bash", "description": "run a command",
         "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
        {"name": "noop", "description": "", "input_schema": {"type": "object"}},
        {"name": "read", "description": "", "input_schema": {"type": "object"}}]


def test_openai_tools_are_the_declarations_with_every_field():
    # the tool_schema segment fills in an empty description and parameters
    assert to_openai(_bundle())["tools"] == [
        {"type": "function", "function": TOOLS[0]},
        {"type": "function", "function": {"name": "noop", "description": "", "parameters": {}}},
        {"type": "function", "function": TOOLS[2]}]


def test_no_tools_no_tools_key():
    hist = _history()
    state = project((i, e) for i, e, _ in hist)
    cands = candidates_from_history(state, hist, tokenizer=EstimateTokenizer())
    bundle = build_context(state, cands, 10_000, tokenizer=EstimateTokenizer())
    assert "tools" not in to_anthropic(bundle) and "tools" not in to_openai(bundle)


def test_anthropic_skips_an_empty_message_and_goes_on():
    """A message with no text and no call has no block to send: it is skipped, and what follows
    still goes out (merged into the same role's message); an assistant message may come
    without a `tool_calls` key at all."""

    def seg(order, *messages):
        return Segment("chatter", text="x", order=order, group=f"g{order}",
                       sources=(f"m{order}",), messages=messages)

    segs = [seg(1, {"role": "user", "text": "first"}),
            seg(2, {"role": "assistant", "text": "", "tool_calls": ()}),
            seg(3, {"role": "user", "text": ""}),
            seg(4, {"role": "user", "text": "second"}),
            seg(5, {"role": "assistant", "text": "answer"})]
    bundle = build_context(None, segs, 1_000, tokenizer=EstimateTokenizer())
    assert to_anthropic(bundle)["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "first"},
                                     {"type": "text", "text": "second"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "answer"}]}]


def test_the_system_prompt_holds_instructions_and_state_but_no_tool_schema():
    bundle = _bundle()
    expected = ("Be careful.\n\n## Goal\nUser goal: fix the test\nCurrent task: go on\n\n"
                "Tool error: read [t2] no such file")
    assert to_anthropic(bundle)["system"] == expected
    assert to_openai(bundle)["messages"][0] == {"role": "system", "content": expected}
