"""Corpus-shaped events: batch lines built from the real Claude Code text of the corpus.

The synthetic events of `baselines.make_events` repeat a 40-word vocabulary, which compresses
and canonicalises unlike what agents write. These events carry the text of the corpus's genuine
Claude Code transcripts (prompts, model text, tool calls with their inputs, tool results), each
text cut at `MAX_TEXT` characters so that the mean event is near the ~730 bytes of JSON the
issue measured. Each event is a `ctx append --batch` line `{type, actor, payload, ts,
causality}`; the n events cycle through the corpus blocks with a copy number in the tool call
id, so no two lines are equal.

Shared by bench_store (put), bench_dag (`ctx append --batch`, ContextManager) and the tests.
"""

from __future__ import annotations

import json
from functools import lru_cache

from tests.corpus import corpus_root

#: Texts are cut here: the mean event is then ~730 bytes of JSON, as in the issue's measurement.
MAX_TEXT = 3000


def _texts(content) -> list[tuple[str, dict]]:
    """(type, payload) of each block of a Claude Code message content."""
    if isinstance(content, str):
        return [("text", {"text": content})]
    out = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            out.append(("text", {"text": block["text"]}))
        elif kind == "thinking" and block.get("thinking"):
            out.append(("thinking", {"text": block["thinking"]}))
        elif kind == "tool_use":
            out.append(("tool_use", {"tool_call_id": block.get("id", ""),
                                     "name": block.get("name", ""),
                                     "input": block.get("input") or {}}))
        elif kind == "tool_result":
            res = block.get("content")
            if isinstance(res, list):
                res = "\n".join(b.get("text", "") for b in res if isinstance(b, dict))
            out.append(("tool_result", {"tool_call_id": block.get("tool_use_id", ""),
                                        "output": str(res or ""),
                                        "is_error": bool(block.get("is_error"))}))
    return out


def _cut(value):
    if isinstance(value, str):
        return value[:MAX_TEXT]
    if isinstance(value, dict):
        return {k: _cut(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(v) for v in value[:8]]
    return value


_KINDS = {("user", "text"): ("UserPromptSubmitted", "user"),
          ("assistant", "text"): ("ModelResponseReceived", "model"),
          ("assistant", "thinking"): ("ModelResponseReceived", "model"),
          ("assistant", "tool_use"): ("ToolCallRequested", "model"),
          ("user", "tool_result"): ("ToolCallFinished", "tool")}


@lru_cache(maxsize=1)
def corpus_blocks() -> tuple[tuple[str, str, str, str], ...]:
    """(type, actor, ts, payload JSON) of every block of the genuine Claude Code transcripts."""
    root = corpus_root() / "claude-code"
    files = sorted(p for p in root.rglob("*.jsonl") if not p.name.startswith("FIXTURE"))
    if not files:
        raise SystemExit(f"no Claude Code transcripts under {root}: set CTXSTORE_CORPUS")
    out = []
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            msg = rec.get("message")
            if rec.get("type") not in ("user", "assistant") or not isinstance(msg, dict):
                continue
            for kind, payload in _texts(msg.get("content")):
                mapped = _KINDS.get((rec["type"], kind))
                if mapped is None:
                    continue
                out.append((*mapped, rec.get("timestamp", ""),
                            json.dumps(_cut(payload), ensure_ascii=False)))
    return tuple(out)


def corpus_lines(n: int) -> list[str]:
    """`n` batch lines (no newline) cycling through the corpus blocks, all distinct."""
    blocks = corpus_blocks()
    lines = []
    for i in range(n):
        kind, actor, ts, payload = blocks[i % len(blocks)]
        copy = i // len(blocks)
        lines.append(f'{{"type":"{kind}","actor":"{actor}","payload":{payload},"ts":"{ts}",'
                     f'"causality":{{"copy":{copy}}}}}')
    return lines


def corpus_events(n: int) -> list[dict]:
    """The same events as dicts (for the store-level benchmarks and baselines)."""
    return [json.loads(line) for line in corpus_lines(n)]


if __name__ == "__main__":
    lines = corpus_lines(len(corpus_blocks()))
    sizes = sorted(len(x.encode()) for x in lines)
    print(f"{len(lines)} blocks; mean {sum(sizes) / len(sizes):.0f} B, median "
          f"{sizes[len(sizes) // 2]} B, max {sizes[-1]} B")
