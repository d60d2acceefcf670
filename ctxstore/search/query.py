"""Asking the index: the query language, the filters as SQL, BM25 order, and the hits.

A query is FTS5's own language with one kindness: a bare word is taken as a literal phrase
(so `test_parser.py` or `foo-bar` need no quoting), while `"exact phrase"`, `prefix*`,
`AND`, `OR`, `NOT` and parentheses keep their FTS5 meaning.
"""

from __future__ import annotations

import re
import sqlite3

from ..errors import InvalidInput
from .hits import HIT_TYPES, SearchFilters, SearchHit
from .index import catch_up, connect, full_id, index_path
from .snippets import STOPWORDS, make_snippet, query_terms

_TOKEN = re.compile(r'"(?:[^"]|"")*"\*?|\(|\)|[^\s()"]+')
_OPERATORS = {"AND", "OR", "NOT"}


def fts_query(query: str, literal: bool = False) -> str:
    """QUERY in FTS5 syntax (see the module docstring); InvalidInput when it holds no word.
    `literal`: every word as written, no operators (a question such as `why did cast() fail?`
    that is not valid FTS5 syntax is searched this way)."""
    out: list[str] = []
    if literal:
        words = [w for w in query.split() if query_terms(w)]
        return " ".join('"' + w.replace('"', '""') + '"' for w in words) or fts_query(query)
    for tok in _TOKEN.findall(query):
        if tok in _OPERATORS or tok in ("(", ")"):
            out.append(tok)
        elif tok.startswith('"'):
            out.append(tok)
        else:
            star = tok.endswith("*") and len(tok) > 1
            word = tok.rstrip("*") if star else tok
            out.append('"' + word.replace('"', '""') + '"' + ("*" if star else ""))
    if not query_terms(query):
        raise InvalidInput(f"search query {query!r} holds no word to look for")
    return " ".join(out)


def relaxed_query(query: str) -> str | None:
    """For a query of bare words (a question as a person types it): events holding any of its
    words but the stop words, so "where did we fix the flaky parser test" still finds the
    event that says only "parser test flaky". None for a query using FTS5 syntax."""
    toks = query.split()
    if any(t in _OPERATORS or t.startswith(("(", '"')) for t in toks):
        return None
    words = [(w, p) for w, p in query_terms(query) if w not in STOPWORDS]
    if len(words) < 2:
        return None
    return " OR ".join(f'"{w}"' + ("*" if p else "") for w, p in dict.fromkeys(words))


def _where(f: SearchFilters) -> tuple[list[str], list]:
    sql: list[str] = []
    args: list = []
    if f.harness:
        sql.append("s.harness = ?")
        args.append(f.harness)
    if f.cwd:
        cwd = f.cwd.rstrip("/") or "/"
        sql.append("(s.cwd = ? OR substr(s.cwd, 1, ?) = ?)")
        args += [cwd, len(cwd) + 1, cwd + "/"]
    if f.since is not None:
        sql.append("d.ts >= ?")
        args.append(int(f.since.timestamp() * 1000))
    if f.until is not None:
        sql.append("d.ts <= ?")
        args.append(int(f.until.timestamp() * 1000))
    if f.types:
        bad = [t for t in f.types if t not in HIT_TYPES]
        if bad:
            raise InvalidInput(f"unknown hit type {bad[0]!r}: use {', '.join(HIT_TYPES)}")
        sql.append(f"d.kind IN ({', '.join('?' * len(f.types))})")
        args += [HIT_TYPES.index(t) for t in f.types]
    if f.tool:
        sql.append("d.tool IN (SELECT id FROM names WHERE lower(text) = lower(?))")
        args.append(f.tool)
    if f.file:
        path = f.file
        sql.append("EXISTS (SELECT 1 FROM files x WHERE x.doc = d.rowid AND (x.path = ? OR "
                   "substr(x.path, -?) = ?))")
        args += [path, len(path) + 1, "/" + path.lstrip("/")]
    if f.session:
        sql.append("s.id = ?")
        args.append(f.session)
    if f.branch:
        sql.append("EXISTS (SELECT 1 FROM member m JOIN branches b ON b.bid = m.bid "
                   "WHERE m.doc = d.rowid AND b.name = ?)")
        args.append(f.branch)
    return sql, args


def search(repo, query: str, *, limit: int = 20, filters: SearchFilters | None = None,
           refresh: bool = True) -> list[SearchHit]:
    """The LIMIT best hits for QUERY (BM25, best first) among the events, summaries and
    memories FILTERS allow: those holding every word, then (for a query of bare words) those
    holding some of them. Catches the index up with the store first (`refresh`)."""
    match = fts_query(query)
    flt = filters or SearchFilters()
    if refresh:
        catch_up(repo)
    where, args = _where(flt)
    columns = ("SELECT d.rowid, d.key, s.id, d.kind, e.text, d.ts, t.text, f.text, d.src_line, "
               "s.harness, {score} AS score FROM {source} JOIN docs d ON d.rowid = {alias}.rowid "
               "LEFT JOIN sessions s ON s.sid = d.sid LEFT JOIN names e ON e.id = d.etype "
               "LEFT JOIN names t ON t.id = d.tool LEFT JOIN names f ON f.id = d.src ")
    if where:  # the filters inside the ranking: the top LIMIT among the rows they keep
        sql = (columns.format(score="-bm25(fts)", source="fts", alias="fts") + "WHERE fts MATCH ? "
               + "".join(f" AND {w}" for w in where) + " ORDER BY bm25(fts) LIMIT ?")
    else:  # rank first, then read the LIMIT rows' columns (a frequent word matches 5% of 1M)
        sql = columns.format(score="-m.r", alias="m", source=(
            "(SELECT rowid, bm25(fts) AS r FROM fts WHERE fts MATCH ? ORDER BY r LIMIT ?) m")) \
            + "ORDER BY m.r"
    limit = max(0, int(limit))
    con = connect(index_path(repo))
    try:
        try:
            rows = con.execute(sql, [match, *args, limit]).fetchall()
        except sqlite3.OperationalError as exc:
            if "syntax" not in str(exc):
                raise
            rows = con.execute(sql, [fts_query(query, literal=True), *args, limit]).fetchall()
        relaxed = relaxed_query(query) if len(rows) < limit else None
        if relaxed:  # every word first, then the events holding some of them
            have = {r[0] for r in rows}
            rows += [r for r in con.execute(sql, [relaxed, *args, limit]).fetchall()
                     if r[0] not in have][:limit - len(rows)]
        hits = [_hit(repo, con, row, query) for row in rows]
    except sqlite3.OperationalError as exc:
        if "fts5" in str(exc) or "syntax" in str(exc):
            raise InvalidInput(f"cannot read search query {query!r}: {exc}") from None
        raise
    finally:
        con.close()
    return hits


def _hit(repo, con: sqlite3.Connection, row: tuple, query: str) -> SearchHit:
    from ..clock import iso_from_ms
    from .documents import event_document, memory_document

    doc, key, sid, kind, etype, ts, tool, src_file, src_line, harness, score = row
    oid_hex = full_id(repo, key)
    if sid is None:
        from ..objects.memory import Memory

        text = memory_document(repo.objects.get_typed(oid_hex, Memory)).text
        branch = None
    else:
        text = event_document(repo, repo.graph.event(oid_hex), harness, effects=False).text
        names = [r[0] for r in con.execute(
            "SELECT b.name FROM member m JOIN branches b ON b.bid = m.bid WHERE m.doc = ?",
            (doc,))]
        branch = "main" if "main" in names else (min(names) if names else None)
    rep = con.execute("SELECT cid FROM replaced WHERE key = ? ORDER BY cid LIMIT 1",
                      (key,)).fetchone()
    return SearchHit(event=oid_hex, session=sid, branch=branch, type=HIT_TYPES[kind],
                     event_type=etype,
                     score=round(float(score), 4), snippet=make_snippet(text, query),
                     ts=iso_from_ms(ts) if ts else "", source_file=src_file,
                     source_line=src_line, replaced_by=rep[0].hex() if rep else None,
                     tool=tool)
