"""One line of a hit's text around its matches, with each match marked and nothing in it
able to act on a terminal.

Transcripts hold whatever tools printed: escape sequences, carriage returns, bidi overrides,
markup. A snippet shows every control or format character (Unicode categories Cc and Cf) as
a visible escape (`\\x1b`, `\\u202e`) and the text's own guillemets as ‹ ›, so the « » that
mark a match can only be ours, in the terminal and in JSON alike.
"""

from __future__ import annotations

import re
import unicodedata

#: Characters of text shown around the first match.
SNIPPET_WIDTH = 160
MARK_OPEN, MARK_CLOSE = "«", "»"

#: Words a question is made of that say nothing about what it asks for.
STOPWORDS = frozenset(
    "a an and are as at be by can could did do does for from had has have how i in into is it "
    "its me my of on or our should so that the their them then there this to us was we were "
    "what when where which who why will with would you your about any".split())
_QUERY_TOKEN = re.compile(r'"((?:[^"]|"")*)"(\*?)|([^\s()"]+)')


def _fold(text: str) -> str:
    """As FTS5's unicode61 tokenizer compares: lower case, diacritics removed."""
    nfkd = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in nfkd if not unicodedata.combining(c))


_SUFFIXES = ("ations", "ation", "izers", "izer", "ings", "ing", "ers", "er", "ied", "ies", "ed",
             "es", "s", "ly")


def _stem(word: str) -> str:
    """A crude stem, to mark `merged` for the query `merge` as the index (FTS5's porter
    tokenizer) matched it; marking only, never matching."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[:-len(suffix)].rstrip("e")
    return word.rstrip("e") if len(word) > 3 else word


def query_terms(query: str) -> list[tuple[str, bool]]:
    """(word, is_prefix) for each word of QUERY, folded; operators left out."""
    out: list[tuple[str, bool]] = []
    for phrase, star, bare in _QUERY_TOKEN.findall(query):
        if bare in ("AND", "OR", "NOT"):
            continue
        text, prefix = (phrase.replace('""', '"'), bool(star)) if not bare else (
            bare.rstrip("*"), bare.endswith("*") and len(bare) > 1)
        words = [_fold(w) for w in re.findall(r"[^\W_]+", text)]
        out.extend((w, prefix and i == len(words) - 1) for i, w in enumerate(words))
    return out


def inert(text: str) -> str:
    """TEXT with every control and format character shown as an escape, on one line."""
    out: list[str] = []
    for ch in text:
        if ch in "\n\r\t":
            out.append(" ")
        elif ch == MARK_OPEN:
            out.append("‹")
        elif ch == MARK_CLOSE:
            out.append("›")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def make_snippet(text: str, query: str, width: int = SNIPPET_WIDTH) -> str:
    """The part of TEXT around its first match of QUERY's words, matches marked « »."""
    terms = query_terms(query)
    terms = [t for t in terms if t[0] not in STOPWORDS] or terms
    stems = {_stem(t) for t, p in terms if not p}
    prefixes = tuple(t for t, p in terms if p)
    spans = []
    for m in re.finditer(r"[^\W_]+", text):
        w = _fold(m.group())
        if _stem(w) in stems or (prefixes and w.startswith(prefixes)):
            spans.append((m.start(), m.end()))
    start = max(0, spans[0][0] - width // 3) if spans else 0
    end = min(len(text), start + width)
    pieces: list[str] = ["…" if start else ""]
    pos = start
    for a, b in spans:
        if a < start or b > end:
            continue
        pieces += [inert(text[pos:a]), MARK_OPEN, inert(text[a:b]), MARK_CLOSE]
        pos = b
    pieces.append(inert(text[pos:end]))
    if end < len(text):
        pieces.append("…")
    return " ".join("".join(pieces).split())
