"""LangGraph's own checkpointer conformance suite (langgraph-checkpoint-conformance), every
capability, against CtxstoreSaver on an on-disk store and on a memory repository."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langgraph")
conformance = pytest.importorskip("langgraph.checkpoint.conformance")

from langgraph.checkpoint.conformance import checkpointer_test, validate  # noqa: E402
from langgraph.checkpoint.conformance.capabilities import Capability  # noqa: E402

from ctxstore.integrations.langgraph import CtxstoreSaver  # noqa: E402
from ctxstore.repo import Repository  # noqa: E402

CAPABILITIES = [c.value for c in Capability]


def _report(factory, capability: str):
    registered = checkpointer_test(name=f"CtxstoreSaver-{capability}")(factory)
    return asyncio.run(validate(registered, capabilities={capability}))


@pytest.mark.parametrize("durability", ["batch", "always"])
@pytest.mark.parametrize("capability", CAPABILITIES)
def test_conformance_on_disk(tmp_path, capability, durability):
    counter = iter(range(1000))

    async def factory():
        saver = CtxstoreSaver(tmp_path / f"store-{next(counter)}", durability=durability)
        try:
            yield saver
        finally:
            saver.close()

    result = _report(factory, capability).results[capability]
    assert result.detected, f"{capability} not detected"
    assert result.passed, "\n".join(result.failures)
    assert result.tests_failed == 0 and result.tests_passed > 0


@pytest.mark.parametrize("capability", CAPABILITIES)
def test_conformance_in_memory(capability):
    async def factory():
        yield CtxstoreSaver(Repository.memory())

    result = _report(factory, capability).results[capability]
    assert result.passed, "\n".join(result.failures)


def test_full_report_is_full(tmp_path):
    async def factory():
        saver = CtxstoreSaver(tmp_path / "store")
        try:
            yield saver
        finally:
            saver.close()

    registered = checkpointer_test(name="CtxstoreSaver")(factory)
    report = asyncio.run(validate(registered))
    assert report.conformance_level() == "FULL", report.to_dict()
    assert sorted(report.results) == sorted(CAPABILITIES)
