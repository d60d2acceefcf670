"""The Agents SDK's own session tests (its tests/memory: test_session.py, test_session_limit.py,
and the item shapes of test_session_persistence_sanitize.py), rewritten against CtxstoreSession.

What they check of SQLiteSession they check of ours: the Runner reads and writes history
through the session (run, run_sync, run_streamed), sessions sharing a store stay apart, pop and
limit semantics, unicode and SQL-looking text, concurrent writers, settings and RunConfig
overrides, a failed add writes nothing, and a write whose caller is cancelled still completes
before the cancellation propagates. Tests of SQLite internals (connection eviction, corrupt
rows planted through SQL, file locks) have no counterpart here and are left out."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import importlib
import os
import threading
from typing import Any

import pytest

if os.environ.get("CI") == "true":  # installed in CI through the extra: never skip there
    importlib.import_module("agents")
else:
    pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, SessionSettings, set_tracing_disabled  # noqa: E402
from agents.memory import Session  # noqa: E402
from agents.testing import ScriptedModel, assistant_message  # noqa: E402

from ctxstore.integrations.openai_agents import CtxstoreSession  # noqa: E402
from ctxstore.integrations.openai_agents import session as session_mod  # noqa: E402

set_tracing_disabled(True)  # no trace export attempts (no API key in tests)
RUNNERS = ["run", "run_sync", "run_streamed"]


def arun(fn):
    """Run an async test on a fresh event loop (no pytest-asyncio needed)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))
    return wrapper


def text(content: str):
    return assistant_message(content)


async def run_agent(method: str, agent, input_data, **kwargs):
    if method == "run":
        return await Runner.run(agent, input_data, **kwargs)
    if method == "run_sync":
        return await asyncio.to_thread(lambda: Runner.run_sync(agent, input_data, **kwargs))
    result = Runner.run_streamed(agent, input_data, **kwargs)
    async for _event in result.stream_events():
        pass
    return result


@pytest.fixture
def store(tmp_path):
    return tmp_path / "store"


@arun
async def test_it_is_a_session(store):
    """What the Runner relies on, beyond the names isinstance() looks at (a runtime-checkable
    Protocol checks only that the attributes exist): the session id given, the protocol's four
    methods as coroutines with its parameters, and a round trip through each."""
    import inspect

    s = CtxstoreSession("proto", store)
    try:
        assert isinstance(s, Session) and s.session_id == "proto"
        for name in ("get_items", "add_items", "pop_item", "clear_session"):
            ours, theirs = getattr(s, name), getattr(Session, name)
            assert inspect.iscoroutinefunction(ours), name
            assert list(inspect.signature(ours).parameters) == \
                list(inspect.signature(theirs).parameters)[1:], name
        items = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
        await s.add_items(items)
        assert await s.get_items() == items and await s.get_items(limit=1) == items[1:]
        assert await s.pop_item() == items[1] and await s.get_items() == items[:1]
        await s.clear_session()
        assert await s.get_items() == [] and await s.pop_item() is None
    finally:
        s.close()


# -- with the Runner ---------------------------------------------------------------------------

@pytest.mark.parametrize("method", RUNNERS)
@arun
async def test_memory_basic_functionality(store, method):
    session = CtxstoreSession("test_session_123", store)
    model = ScriptedModel()
    agent = Agent(name="test", model=model)
    model.enqueue([text("San Francisco")])
    r1 = await run_agent(method, agent, "What city is the Golden Gate Bridge in?",
                         session=session)
    assert r1.final_output == "San Francisco"
    model.enqueue([text("California")])
    r2 = await run_agent(method, agent, "What state is it in?", session=session)
    assert r2.final_output == "California"
    assert len(model.calls[-1].input) > 1  # the history came along
    assert len(await session.get_items()) == 4
    session.close()


@pytest.mark.parametrize("method", RUNNERS)
@arun
async def test_memory_different_sessions(store, method):
    model = ScriptedModel()
    agent = Agent(name="test", model=model)
    s1 = CtxstoreSession("session_1", store)
    model.enqueue([text("I like cats")])
    assert (await run_agent(method, agent, "I like cats", session=s1)).final_output == "I like cats"
    s2 = CtxstoreSession("session_2", store)
    model.enqueue([text("I like dogs")])
    await run_agent(method, agent, "I like dogs", session=s2)
    model.enqueue([text("Yes, you mentioned cats")])
    await run_agent(method, agent, "What did I say I like?", session=s1)
    seen = [i.get("content") for i in model.calls[-1].input if i.get("role") == "user"]
    assert seen == ["I like cats", "What did I say I like?"]
    s1.close()
    s2.close()


@pytest.mark.parametrize("method", RUNNERS)
@arun
async def test_list_input_is_appended_to_history(store, method):
    session = CtxstoreSession("test_validation", store)
    model = ScriptedModel()
    agent = Agent(name="test", model=model)
    history = [{"role": "user", "content": "Earlier message"},
               {"role": "assistant", "content": "Saved reply"}]
    await session.add_items(history)
    new = [{"role": "user", "content": "Test message"}]
    model.enqueue([text("This should run")])
    await run_agent(method, agent, new, session=session)
    assert model.calls[-1].input == history + new
    session.close()


@pytest.mark.parametrize("method", RUNNERS)
@arun
async def test_session_input_callback(store, method):
    session = CtxstoreSession("session_cb", store)
    model = ScriptedModel()
    agent = Agent(name="test", model=model)
    history = [{"role": "user", "content": "Hello there."},
               {"role": "assistant", "content": "Hi, I'm here to assist you."}]
    await session.add_items(history)

    def only_user(hist, new_input):
        return [item for item in hist if item["role"] == "user"] + new_input

    new = [{"role": "user", "content": "What your name?"}]
    model.enqueue([text("I'm gpt-4o")])
    await run_agent(method, agent, new, session=session,
                    run_config=RunConfig(session_input_callback=only_user))
    assert model.calls[-1].input == [history[0], new[0]]
    session.close()


@pytest.mark.parametrize("method", RUNNERS)
@arun
async def test_repeating_history_in_callback_does_not_grow_session(store, method):
    session = CtxstoreSession("session_repeat", store)
    model = ScriptedModel()
    agent = Agent(name="test", model=model)

    def repeat_first(hist, new_input):
        return new_input if not hist else hist + [hist[0]] + new_input

    for turn in range(3):
        model.enqueue([text(f"assistant {turn}")])
        await run_agent(method, agent, f"user {turn}", session=session,
                        run_config=RunConfig(session_input_callback=repeat_first))
    stored = await session.get_items()
    assert [i.get("content") for i in stored if i.get("role") == "user"] == \
        ["user 0", "user 1", "user 2"]
    assert len(stored) == 6
    session.close()


@arun
async def test_add_items_failure_propagates_in_streamed(store):
    session = CtxstoreSession("test_exception_session", store)

    async def failing(_items):
        raise RuntimeError("Simulated session.add_items failure")

    session.add_items = failing  # type: ignore[method-assign]
    model = ScriptedModel()
    model.enqueue([text("This should not be reached")])
    result = Runner.run_streamed(Agent(name="test", model=model), "Hello", session=session)

    async def consume():
        async for _event in result.stream_events():
            pass

    with pytest.raises(RuntimeError, match="Simulated session.add_items failure"):
        await asyncio.wait_for(consume(), timeout=5.0)
    session.close()


# -- the session directly ----------------------------------------------------------------------

@arun
async def test_memory_direct(store):
    session = CtxstoreSession("direct_test", store)
    items = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"}]
    await session.add_items(items)
    assert await session.get_items() == items
    await session.clear_session()
    assert await session.get_items() == []
    session.close()


@arun
async def test_closed_session_rejects_even_empty_add(store):
    session = CtxstoreSession("closed", store)
    session.close()
    with pytest.raises(Exception, match="closed"):
        await session.add_items([])


@arun
async def test_pop_item(store):
    session = CtxstoreSession("pop_test", store)
    assert await session.pop_item() is None
    items = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"},
             {"role": "user", "content": "How are you?"}]
    await session.add_items(items)
    assert len(await session.get_items()) == 3
    assert await session.pop_item() == items[2]
    assert (await session.get_items())[-1].get("content") == "Hi there!"
    assert await session.pop_item() == items[1]
    assert await session.pop_item() == items[0]
    assert await session.pop_item() is None
    assert await session.get_items() == []
    session.close()


@arun
async def test_pop_only_affects_its_session(store):
    s1 = CtxstoreSession("session_1", store)
    s2 = CtxstoreSession("session_2", store)
    await s1.add_items([{"role": "user", "content": "Session 1 message"}])
    await s2.add_items([{"role": "user", "content": "Session 2 message 1"},
                        {"role": "user", "content": "Session 2 message 2"}])
    assert (await s2.pop_item()).get("content") == "Session 2 message 2"
    assert [i["content"] for i in await s1.get_items()] == ["Session 1 message"]
    assert [i["content"] for i in await s2.get_items()] == ["Session 2 message 1"]
    s1.close()
    s2.close()


@arun
async def test_get_items_with_limit(store):
    session = CtxstoreSession("count_test", store)
    items = []
    for i in (1, 2, 3):
        items += [{"role": "user", "content": f"Message {i}"},
                  {"role": "assistant", "content": f"Response {i}"}]
    await session.add_items(items)
    assert await session.get_items() == items
    assert await session.get_items(limit=2) == items[-2:]
    assert await session.get_items(limit=4) == items[-4:]
    assert await session.get_items(limit=10) == items
    assert await session.get_items(limit=0) == []
    assert await session.get_items(limit=-1) == items  # SQLite's LIMIT -1: no limit
    session.close()


@arun
async def test_unicode_content(store):
    session = CtxstoreSession("unicode_test", store)
    items = [{"role": "user", "content": "こんにちは"}, {"role": "assistant", "content": "😊👍"},
             {"role": "user", "content": "Привет"}]
    await session.add_items(items)
    assert await session.get_items() == items
    session.close()


@arun
async def test_special_characters_and_sql_injection(store):
    session = CtxstoreSession("special_chars_test", store)
    items = [{"role": "user", "content": "O'Reilly"},
             {"role": "assistant", "content": "DROP TABLE sessions;"},
             {"role": "user", "content": '"SELECT * FROM users WHERE name = "admin";"'},
             {"role": "assistant", "content": "Robert'); DROP TABLE students;--"},
             {"role": "user", "content": "Normal message"}]
    await session.add_items(items)
    assert await session.get_items() == items
    session.close()


@arun
async def test_concurrent_access(store):
    session = CtxstoreSession("concurrent_test", store)
    items = [{"role": "user", "content": f"Message {i}"} for i in range(10)]

    def add_item(item):
        asyncio.run(session.add_items([item]))

    with concurrent.futures.ThreadPoolExecutor(max_workers=5) as pool:
        list(pool.map(add_item, items))
    got = await session.get_items()
    assert len(got) == 10
    assert {i["content"] for i in got} == {f"Message {i}" for i in range(10)}
    session.close()


@arun
async def test_sessions_of_one_store_share_one_repository_and_lock(store):
    s1 = CtxstoreSession("session_1", store)
    s2 = CtxstoreSession("session_2", store)
    assert s1.repo is s2.repo and s1._lock is s2._lock
    s1.close()
    await s2.add_items([{"role": "user", "content": "still open"}])  # s1's close left it open
    s2.close()
    assert not session_mod._Shared._open


@arun
async def test_failed_add_items_writes_nothing_and_session_stays_usable(store):
    session = CtxstoreSession("rollback_test", store)
    await session.add_items([{"role": "user", "content": "before"}])
    op_before = session.repo.refs.read_op_head()
    bad = [{"role": "user", "content": "fine"}, {"role": "user", "content": object()}]
    with pytest.raises(TypeError):
        await session.add_items(bad)
    assert session.repo.refs.read_op_head() == op_before  # no operation, no ref moved
    assert [i["content"] for i in await session.get_items()] == ["before"]
    await session.add_items([{"role": "user", "content": "after failure"}])
    assert [i["content"] for i in await session.get_items()] == ["before", "after failure"]
    session.close()


# -- settings ----------------------------------------------------------------------------------

def test_session_settings_default_and_constructor(store):
    s = CtxstoreSession("default_settings_test", store)
    assert isinstance(s.session_settings, SessionSettings) and s.session_settings.limit is None
    s.close()
    s = CtxstoreSession("constructor_settings_test", store,
                        session_settings=SessionSettings(limit=5))
    assert s.session_settings.limit == 5
    s.close()
    s = CtxstoreSession("dictionary_settings_test", store, session_settings={"limit": 0})
    assert isinstance(s.session_settings, SessionSettings) and s.session_settings.limit == 0
    assert s.session_settings.resolve({"limit": 4}).limit == 4
    s.close()


def test_session_settings_reject_unknown_fields(store):
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        CtxstoreSession("invalid_settings_test", store, session_settings={"limitt": 1})


@arun
async def test_get_items_uses_settings_limit_and_explicit_limit_wins(store):
    s = CtxstoreSession("uses_settings_limit_test", store,
                        session_settings=SessionSettings(limit=3))
    items = [{"role": "user", "content": f"Message {i}"} for i in range(10)]
    await s.add_items(items)
    assert await s.get_items() == items[-3:]
    assert await s.get_items(limit=2) == items[-2:]
    s.close()


@arun
async def test_runner_session_settings_override(store):
    session = CtxstoreSession("runner_override_test", store,
                              session_settings=SessionSettings(limit=100))
    await session.add_items([{"role": "user", "content": f"Turn {i}"} for i in range(10)])
    model = ScriptedModel()
    model.enqueue([text("Got it")])
    await Runner.run(Agent(name="test", model=model), "New question", session=session,
                     run_config=RunConfig(session_settings=SessionSettings(limit=2)))
    history = [i for i in model.calls[-1].input if i.get("content") != "New question"]
    assert [i["content"] for i in history] == ["Turn 8", "Turn 9"]
    session.close()


# -- test_session_limit.py ---------------------------------------------------------------------

@pytest.mark.parametrize("method", RUNNERS)
@arun
async def test_session_limit_parameter(store, method):
    session = CtxstoreSession("limit_test", store)
    model = ScriptedModel()
    agent = Agent(name="test", model=model)
    for i in (1, 2, 3):
        model.enqueue([text(f"Reply {i}")])
        await run_agent(method, agent, f"Message {i}", session=session)
    assert len(await session.get_items()) == 6
    model.enqueue([text("Reply 4")])
    await run_agent(method, agent, "Message 4", session=session,
                    run_config=RunConfig(session_settings=SessionSettings(limit=2)))
    last = model.calls[-1].input
    assert len(last) == 3
    assert last[0].get("content") == "Message 3"
    assert last[1].get("content")[0]["text"] == "Reply 3"
    assert last[2].get("content") == "Message 4"
    session.close()


@pytest.mark.parametrize("method", RUNNERS)
@arun
async def test_session_limit_drops_unmatched_function_call_output(store, method):
    session = CtxstoreSession("limit_tool_pair", store)
    history = [
        {"role": "user", "content": "What is the weather?"},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "It is sunny.", "annotations": []}]},
    ]
    await session.add_items(history)
    assert await session.get_items(limit=2) == history[-2:]
    model = ScriptedModel()
    model.enqueue([text("Tomorrow is sunny too.")])
    await run_agent(method, Agent(name="test", model=model), "What about tomorrow?",
                    session=session,
                    run_config=RunConfig(session_settings=SessionSettings(limit=2)))
    assert model.calls[-1].input == [history[-1],
                                     {"role": "user", "content": "What about tomorrow?"}]
    session.close()


@pytest.mark.parametrize("method", RUNNERS)
@arun
async def test_session_limit_zero_and_none_and_larger(store, method):
    model = ScriptedModel()
    agent = Agent(name="test", model=model)
    session = CtxstoreSession("limit_zero", store)
    for i in (1, 2):
        model.enqueue([text(f"Reply {i}")])
        await run_agent(method, agent, f"Message {i}", session=session)
    model.enqueue([text("Reply 3")])
    await run_agent(method, agent, "Message 3", session=session,
                    run_config=RunConfig(session_settings=SessionSettings(limit=0)))
    assert [i.get("content") for i in model.calls[-1].input] == ["Message 3"]
    model.enqueue([text("Reply 4")])
    await run_agent(method, agent, "Message 4", session=session,
                    run_config=RunConfig(session_settings=SessionSettings(limit=None)))
    assert len(model.calls[-1].input) == 7  # 6 history + 1 new
    model.enqueue([text("Reply 5")])
    await run_agent(method, agent, "Message 5", session=session,
                    run_config=RunConfig(session_settings=SessionSettings(limit=100)))
    assert len(model.calls[-1].input) == 9
    session.close()


# -- item shapes (test_session_persistence_sanitize.py) round-trip deep-equal -------------------

ITEMS: list[dict[str, Any]] = [
    *({"type": t, "id": f"{t}_abc123", "status": "completed"} for t in (
        "file_search_call", "web_search_call", "computer_call", "code_interpreter_call",
        "image_generation_call", "local_shell_call", "local_shell_call_output", "mcp_list_tools",
        "mcp_approval_request", "mcp_call", "item_reference", "program", "program_output")),
    {"type": "file_search_call", "id": "fs_call_abc", "queries": ["latest q3 revenue"],
     "status": "completed",
     "results": [{"file_id": "file_1", "filename": "q3.pdf", "score": 0.9, "text": "..."}]},
    {"type": "program", "id": "program_abc", "call_id": "call_program",
     "code": 'lookup_inventory(sku="A-1")', "fingerprint": "fingerprint"},
    {"type": "program_output", "id": "program_output_abc", "call_id": "call_program",
     "result": '{"available_units":42}', "status": "completed"},
    {"type": "message", "id": "msg_abc", "role": "assistant",
     "content": [{"type": "output_text", "text": "hi"}]},
    {"type": "function_call", "id": "fc_abc", "call_id": "call_abc", "name": "get_weather",
     "arguments": "{}"},
    {"type": "function_call_output", "id": "out_abc", "call_id": "call_abc", "output": "{}"},
    {"type": "computer_call_output", "id": "ccout_abc", "call_id": "call_abc", "output": {}},
    {"type": "tool_search_call", "id": "ts_abc", "status": "completed"},
    {"type": "shell_call", "id": "sh_abc", "call_id": "call_abc", "action": {}},
    {"type": "function_call", "id": "fc_prog", "call_id": "call_abc", "name": "get_weather",
     "arguments": "{}", "caller": {"type": "program", "caller_id": "call_program"}},
    {"type": "reasoning", "id": "rs_abc", "summary": [], "content": [],
     "provider_data": {"server": "metadata"}},
    {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque" * 2000},
    {"role": "user", "content": [{"type": "input_text", "text": "look"},
                                 {"type": "input_image", "image_url": "data:image/png;base64,AA=="}]},
    {"role": "system", "content": "be brief"},
    {"role": "developer", "content": "x" * 10000},
]


@arun
async def test_every_item_shape_round_trips_deep_equal(store):
    session = CtxstoreSession("shapes", store)
    await session.add_items(ITEMS)
    assert await session.get_items() == ITEMS
    session.close()
    again = CtxstoreSession("shapes", store)  # a new process would read the same
    assert await again.get_items() == ITEMS
    again.close()


# -- a write whose caller is cancelled -----------------------------------------------------------

@pytest.mark.parametrize("operation", ["add", "pop", "clear"])
@arun
async def test_cancellation_after_the_write_started_propagates_after_its_outcome(
        store, monkeypatch, operation):
    session = CtxstoreSession(f"post_commit_{operation}", store)
    item = {"role": "user", "content": "once"}
    if operation != "add":
        await session.add_items([item])
    started, release = threading.Event(), threading.Event()
    real = session.repo.transaction

    def paused_transaction(*args, **kwargs):
        started.set()
        assert release.wait(timeout=10)
        return real(*args, **kwargs)

    monkeypatch.setattr(session.repo, "transaction", paused_transaction)
    call = {"add": lambda: session.add_items([item]), "pop": session.pop_item,
            "clear": session.clear_session}[operation]
    task = asyncio.create_task(call())
    assert await asyncio.to_thread(started.wait, 10)
    task.cancel()
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    monkeypatch.setattr(session.repo, "transaction", real)
    assert await session.get_items() == ([item] if operation == "add" else [])
    session.close()
