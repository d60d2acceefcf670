"""Issue 12's acceptance, measured: does `ctx` understand the transcripts people actually have?

    .venv/bin/python -m benchmarks.real_sessions                 # the corpus (tests/corpus.py)
    .venv/bin/python -m benchmarks.real_sessions PATH...         # any transcript files or folders
    .venv/bin/python -m benchmarks.real_sessions --matrix        # transcripts x checks, verdicts only
    .venv/bin/python -m benchmarks.real_sessions --json          # one JSON record per check

Each transcript file (*.jsonl; folders are searched, subagent files included) is imported alone
into a fresh temporary store through the CLI (`ctx init`, `ctx import FILE`), then read back with
`ctx sessions/state/stats/log --json`, `ctx compact --dry-run --json` and
`ctx context --budget B --json` (B = 8000, 32000). The expected values come from
tests/oracles/transcripts.py, which reads the raw JSONL itself and shares no code with the
importers. One table: per transcript and check, the measured value, the threshold, and
pass / FAIL / n/a, then "N of M checks hold" (n/a never counts as a pass).

A transcript can import as several sessions (Claude Code 1.0.x writes subagents inline): file
sets and token sums are taken over all of them; plan and resume chain are judged on the main
one (not a subagent; the largest if there are several); title, compaction, context and fill on
every session.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.oracles.transcripts import (
    Transcript,
    analyze,
    files_covered,
    has_markup,
    normalize_path,
    prompt_text,
    same_file,
    transcript_files,
)

BUDGETS = (8000, 32000)
CHECKS = ("files.modified", "files.read", "plan.steps", "tokens.input", "tokens.output",
          "tokens.branch", "prompts", "title",
          "pending", "resume_chain", "compaction.files", "compaction.replaced",
          *(f"context@{b}" for b in BUDGETS),
          *(f"fill@{b}" for b in BUDGETS))
PASS, FAIL, NA = "pass", "FAIL", "n/a"
#: A dry run that compacts nothing of a session this large (4x the default 2,000 tokens kept
#: verbatim) is not "nothing to check": the compaction check would never run on it.
NOOP_SUSPECT_TOKENS = 8000


@dataclass
class Result:
    transcript: str
    check: str
    measured: str
    threshold: str
    verdict: str
    reason: str = ""


class CtxFailed(Exception):
    """A ctx command exited non-zero; the message is its stderr."""


class Ctx:
    """`ctx --store ROOT ARGS` run in-process through click's CliRunner (the real CLI)."""

    def __init__(self, root: Path):
        from click.testing import CliRunner

        from ctxstore.cli.main import cli

        self.root, self.cli, self.runner = root, cli, CliRunner()

    def run(self, *args: str) -> str:
        res = self.runner.invoke(self.cli, ["--store", str(self.root), *args])
        if res.exit_code != 0:
            err = (res.stderr or res.stdout or repr(res.exception)).strip().splitlines()
            raise CtxFailed(f"ctx {' '.join(args[:2])} exited {res.exit_code}: "
                            f"{err[-1] if err else ''}")
        return res.stdout

    def json(self, *args: str):
        return json.loads(self.run(*args, "--json"))


# ---------------------------------------------------------------------------------------------
# Reading ctx's answers


def _paths(items) -> list[str]:
    """File paths from a `files.read`/`files.modified` list of strings or records."""
    out = []
    for it in items or []:
        if isinstance(it, str):
            out.append(it)
        elif isinstance(it, dict):
            p = next((it[k] for k in ("path", "file", "file_path", "name") if isinstance(it.get(k), str)),
                     None)
            if p:
                out.append(p)
    return out


def _step_texts(steps) -> list[str]:
    """Texts of plan steps given as strings or records (every string field counts)."""
    out = []
    for s in steps or []:
        if isinstance(s, str):
            out.append(s)
        elif isinstance(s, dict):
            out += [v for v in s.values() if isinstance(v, str)]
    return out


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * k / n:.0f}%)" if n else "0/0"


@dataclass
class SessionView:
    id: str
    kind: str
    title: str
    rev: str
    events: int
    state: dict | None = None
    stats: dict | None = None
    log: list | None = None
    error: str = ""


def _flatten(items) -> list[dict]:
    """Session records, children (a subagent tree nested under its parent) included."""
    out = []
    for s in items if isinstance(items, list) else []:
        if isinstance(s, dict) and s.get("id"):
            out.append(s)
            for key in ("children", "subagents", "sessions"):
                out += _flatten(s.get(key))
    return out


def _sessions(ctx: Ctx) -> list[SessionView]:
    out = []
    listed = ctx.json("sessions")
    if isinstance(listed, dict):  # {"sessions": [...]} also accepted
        listed = listed.get("sessions")
    for s in _flatten(listed):
        branches = s.get("branches") or {}
        branch = "main" if "main" in branches else next(iter(branches), "main")
        v = SessionView(id=s["id"], kind=str(s.get("kind", "")), title=s.get("title") or "",
                        rev=f"{s['id']}/{branch}", events=int(s.get("events") or 0))
        try:
            v.state = ctx.json("state", v.rev)
            v.stats = ctx.json("stats", v.rev)
            v.log = ctx.json("log", v.rev)
        except CtxFailed as e:
            v.error = str(e)
        out.append(v)
    return out


def _main_session(views: list[SessionView]) -> SessionView | None:
    top = [v for v in views if v.kind != "subagent"] or views
    return max(top, key=lambda v: v.events, default=None)


# ---------------------------------------------------------------------------------------------
# The checks


def _coverage(name: str, expected: list[str], listed: list[str] | None, need: float,
              why_missing: str) -> tuple[str, str, str, str]:
    if not expected:
        return "nothing to check", f">= {need:.0%}", NA, "the transcript has none"
    if listed is None:
        return "-", f">= {need:.0%}", FAIL, why_missing
    k, missing = files_covered(expected, listed)
    ok = k >= need * len(expected)
    _, extra = files_covered(list(dict.fromkeys(listed)), expected)
    reason = "" if ok else "missing: " + ", ".join(missing[:3]) + (" …" if len(missing) > 3 else "")
    if extra:  # shown, not judged: the acceptance asks for coverage only
        reason = (reason + "; " if reason else "") + f"{len(extra)} listed beyond the oracle's: " + \
            ", ".join(extra[:2]) + (" …" if len(extra) > 2 else "")
    return _pct(k, len(expected)), f">= {need:.0%}", PASS if ok else FAIL, reason


def _check_files(t: Transcript, views: list[SessionView], kind: str) -> tuple:
    expected = t.modified_files() if kind == "modified" else t.read_files()
    listed: list[str] | None = []
    for v in views:
        files = (v.state or {}).get("files")
        if not isinstance(files, dict) or kind not in files:
            listed = None
            break
        listed += _paths(files[kind])
    return _coverage(kind, expected, listed, 0.9, f"`ctx state --json` has no files.{kind}")


def _check_plan(t: Transcript, main: SessionView) -> tuple:
    steps = t.plan_steps()
    if not steps:
        return "nothing to check", ">= 80%", NA, "no TodoWrite/update_plan in the transcript"
    plan = (main.state or {}).get("plan")
    if not isinstance(plan, dict) or "steps" not in plan:
        return "-", ">= 80%", FAIL, "`ctx state --json` has no plan.steps"
    have = {_norm(x) for x in _step_texts(plan["steps"])}
    k = sum(_norm(s) in have for s in steps)
    ok = k >= 0.8 * len(steps)
    return _pct(k, len(steps)), ">= 80%", PASS if ok else FAIL, "" if ok else (
        f"ctx plan has {len(plan['steps'])} step(s)")


def _check_tokens(t: Transcript, views: list[SessionView], field: str) -> tuple:
    """What the session cost (`ctx stats` token_usage: every branch, each response once)
    against the oracle's whole-session count, summed over the file's sessions."""
    want = t.input_tokens if field == "input_tokens" else t.output_tokens
    if t.usage_records == 0 or (t.input_tokens == 0 and t.output_tokens == 0):
        return "nothing to check", "±2%", NA, "no usage recorded in the transcript"
    got = 0
    for v in views:
        tu = (v.stats or {}).get("token_usage")
        if not isinstance(tu, dict) or not isinstance(tu.get(field), int):
            return "-", "±2%", FAIL, f"`ctx stats --json` has no token_usage.{field}"
        got += tu[field]
    ok = abs(got - want) <= 0.02 * want
    return f"{got:,} vs {want:,}", "±2%", PASS if ok else FAIL, "" if ok else (
        f"{(got - want) / want:+.1%}" if want else "oracle 0")


def _check_branch_tokens(t: Transcript, views: list[SessionView]) -> tuple:
    """The checked-out branch's share (`ctx stats` branch_token_usage) against the oracle's
    count on the line the harness resumes; input and output both within 2%."""
    if t.tree_ambiguous:
        return "nothing to check", "±2%", NA, "ids repeat: the resumed line is not defined"
    want_in = t.input_tokens if t.branch_input_tokens is None else t.branch_input_tokens
    want_out = t.output_tokens if t.branch_output_tokens is None else t.branch_output_tokens
    if t.usage_records == 0 or (t.input_tokens == 0 and t.output_tokens == 0):
        return "nothing to check", "±2%", NA, "no usage recorded in the transcript"
    got_in = got_out = 0
    for v in views:
        tu = (v.stats or {}).get("branch_token_usage")
        if not isinstance(tu, dict) or not isinstance(tu.get("input_tokens"), int):
            return "-", "±2%", FAIL, "`ctx stats --json` has no branch_token_usage"
        got_in += tu["input_tokens"]
        got_out += int(tu.get("output_tokens") or 0)
    ok = abs(got_in - want_in) <= 0.02 * want_in and abs(got_out - want_out) <= 0.02 * want_out
    return (f"{got_in:,}/{got_out:,} vs {want_in:,}/{want_out:,}", "±2%", PASS if ok else FAIL,
            "" if ok else "in/out off the resumed line's")


def _prompt_key(text: str) -> str:
    return _norm(text)[:60]


def _check_prompts(t: Transcript, views: list[SessionView]) -> tuple:
    """Every real prompt of the transcript's own line is a UserPromptSubmitted of the file's
    sessions, once (issue 29: Codex Desktop prompts exist only as event_msg user_message; the
    CLI writes them twice). A file of many top-level sessions (an Aider history) has its
    prompts in all of them."""
    thr = ">= 90% once"
    expected = [text for _line, group, text in t.prompts if group == "main"]
    if not expected:
        return "nothing to check", thr, NA, "no real prompt on the transcript's own line"
    if t.tree_ambiguous:
        return "nothing to check", thr, NA, "ids repeat: the file's own line is not defined"
    # the event's text read by the oracle's own rule (harness markup removed), first 60 chars
    top = [v for v in views if v.kind != "subagent"] or views  # a subagent's own file: itself
    events = [_prompt_key(prompt_text(str((e.get("payload") or {}).get("text") or "")))
              for v in top for e in v.log or [] if e.get("type") == "UserPromptSubmitted"]
    found, twice = 0, []
    for key in dict.fromkeys(_prompt_key(x) for x in expected):
        want = sum(_prompt_key(x) == key for x in expected)
        got = sum(e == key for e in events)
        found += min(got, want)
        if got > want:
            twice.append(key[:30])
    ok = found >= 0.9 * len(expected) and not twice
    why = "" if ok else (f"counted more than once: {twice[:2]}" if twice else
                         f"{len(expected) - found} prompt(s) missing")
    return _pct(found, len(expected)), thr, PASS if ok else FAIL, why


def _check_title(t: Transcript, main: SessionView, views: list[SessionView]) -> tuple:
    """Every session with a real prompt (the main one: the transcript's first real prompt on its
    own line; others, e.g. inline subagents: a real prompt among their events' source lines) has
    a non-empty title without harness markup."""
    thr = "non-empty, no markup, no /command"
    if t.summary_title is not None:  # a Claude Code file of summary lines only (issue 29)
        ok = main.title.strip() == t.summary_title.strip()
        return (repr(main.title[:40]), "the summary's title", PASS if ok else FAIL,
                "" if ok else f"want {t.summary_title[:40]!r}")
    if not t.has_real_prompt:
        return "nothing to check", thr, NA, "no real prompt in the transcript"
    prompt_lines = {line for line, _, _ in t.prompts}
    judged = [main] + [v for v in views if v is not main
                       and prompt_lines & (_source_lines(v.log, t.path.name) or set())]
    bad = []
    for v in judged:
        title = v.title.strip()
        if not title:
            bad.append(f"{v.id[:8]}: empty title")
        elif has_markup(title):
            bad.append(f"{v.id[:8]}: markup in {title[:40]!r}")
        elif re.match(r"^/[A-Za-z][\w:.-]*(\s|$)", title):
            bad.append(f"{v.id[:8]}: a slash command as title {title[:40]!r}")
    title = main.title.strip()
    shown = repr(title[:40] + ("…" if len(title) > 40 else ""))
    if len(judged) > 1:
        shown = f"{len(judged) - len(bad)}/{len(judged)} sessions; main {shown}"
    return shown, thr, FAIL if bad else PASS, "; ".join(bad[:3]) + (" …" if len(bad) > 3 else "")


def _listed_pending(views: list[SessionView], bundles: list[dict]) -> set[str]:
    ids: set[str] = set()
    for v in views:
        pending = ((v.state or {}).get("tool_calls") or {}).get("pending") or {}
        ids |= set(pending) if isinstance(pending, dict) else {
            p.get("tool_call_id") if isinstance(p, dict) else str(p) for p in pending}
    for b in bundles:
        for seg in b.get("segments") or []:
            if seg.get("kept") and seg.get("tool_call_id") and "[result pending" in (seg.get("text") or ""):
                ids.add(seg["tool_call_id"])
    ids.discard(None)
    return ids


def _check_pending(t: Transcript, views: list[SessionView], bundles: list[dict]) -> tuple:
    listed = _listed_pending(views, bundles)
    unresolved = t.unresolved()
    thr = "0 abandoned or answered calls listed"
    if not listed and not unresolved:
        return "nothing to check", thr, NA, "every call has a result"
    calls = {c.id: c for c in t.calls}
    bad = []
    for cid in sorted(listed):
        c = calls.get(cid)
        if c is None:
            continue
        if c.status is not None:
            bad.append(f"{cid[:14]} has a result (line {c.result_line})")
        elif c.abandoned:
            why = ("aborted/error message" if c.aborted_message
                   else "later prompt" if c.later_prompt else "interrupted")
            bad.append(f"{cid[:14]} ({c.name}, line {c.line}): {why}")
    measured = (f"{len(listed)} listed; transcript: {len(unresolved)} without result, "
                f"{len(t.abandoned())} abandoned")
    return measured, thr, FAIL if bad else PASS, "; ".join(bad[:3]) + (" …" if len(bad) > 3 else "")


def _source_lines(log: list | None, name: str) -> set[int] | None:
    lines = set()
    for ev in log or []:
        src = (ev.get("payload") or {}).get("source")
        if isinstance(src, dict) and isinstance(src.get("line"), int):
            if not src.get("file") or Path(str(src["file"])).name == name:
                lines.add(src["line"])
    return lines if lines or not log else None


def _check_chain(t: Transcript, main: SessionView) -> tuple:
    if t.harness != "claude-code" or not t.chain_lines:
        return "nothing to check", ">= 99%", NA, "not a Claude Code transcript" if (
            t.harness != "claude-code") else "no user/assistant lines"
    lines = _source_lines(main.log, t.path.name)
    if lines is None:
        return "-", ">= 99%", FAIL, "`ctx log --json` events carry no payload.source.line"
    k = len(t.chain_lines & lines)
    n = len(t.chain_lines)
    ok = k >= 0.99 * n
    miss = sorted(t.chain_lines - lines)
    return _pct(k, n), ">= 99%", PASS if ok else FAIL, "" if ok else (
        f"{len(miss)} chain line(s) off main, e.g. line {miss[0]}" + (f"..{miss[-1]}" if len(miss) > 1 else ""))


def _replaced_lines(log: list | None, dry: dict, name: str) -> set[int] | None:
    """Source lines of the events a dry-run compaction would replace (its summarized_range,
    walked in `ctx log` order), or None when the range cannot be located."""
    rng = dry.get("summarized_range") if isinstance(dry, dict) else None
    if not isinstance(rng, dict) or not log:
        return None
    ids = [ev.get("id") for ev in log]
    try:
        hi, lo = ids.index(rng.get("last")), ids.index(rng.get("first"))
    except ValueError:
        return None
    return _source_lines(log[min(hi, lo):max(hi, lo) + 1], name) or set()


def _compaction_one(t: Transcript, ctx: Ctx, v: SessionView) -> tuple:
    """One session: if the range a dry-run compaction replaces holds successful writes, its
    file_writes_listed check must name at least one of their files."""
    thr = "names >= 1 modified file"
    lines = _source_lines(v.log, t.path.name) or set()
    writes = [c for c in t.calls if c.status == "ok" and c.writes and c.line in lines]
    if not writes:
        return "nothing to check", thr, NA, "no successful writes in the session"
    try:
        out = ctx.json("compact", "--dry-run", v.rev)
    except CtxFailed as e:
        return "-", thr, FAIL, str(e)
    if out.get("noop") or out.get("summarized_events") == 0:
        before = out.get("tokens_before")
        if isinstance(before, int) and before > NOOP_SUSPECT_TOKENS:
            return "-", thr, FAIL, f"the dry run compacts nothing of {before:,} tokens"
        return "nothing to check", thr, NA, "the dry run replaces nothing: " + str(out.get("noop", ""))[:60]
    replaced = _replaced_lines(v.log, out, t.path.name)
    in_range = [c for c in writes if replaced is None or c.line in replaced]
    if not in_range:
        return "nothing to check", thr, NA, "the replaced range holds no successful writes"
    expected = list(dict.fromkeys(normalize_path(p, c.cwd) for c in in_range for p in c.writes))
    check = next((c for c in out.get("checks") or [] if c.get("rule") == "file_writes_listed"), None)
    if check is None:
        return "-", thr, FAIL, "no file_writes_listed check in the dry run"
    text = json.dumps(check)
    named = [f for f in expected if f in text or any(same_file(f, w) for w in _words(text))]
    detail = str(check.get("detail", ""))[:50]
    ok = bool(named) and check.get("ok") is not False
    return (f"{len(named)}/{len(expected)} named", thr, PASS if ok else FAIL,
            "" if ok else f"check says {detail!r}" + ("" if check.get("ok") is not False else " (not ok)"))


#: Context segments that replay the conversation itself. State segments (goal, files, errors,
#: the current request) cite the events they were projected from, replaced ones included.
REPLAYED_KINDS = frozenset({"turn", "chatter", "tool_output", "artifact"})


def _replaced_by_compaction(ctx: Ctx, v: SessionView) -> tuple:
    """Issue 29's rule for one session: no kept segment of a context built after a compaction
    that replays the conversation (turns, chatter, tool outputs) comes from an event a
    compaction replaced (`ctx log` marks them compacted_by), and `ctx compact --dry-run` starts after the
    newest compaction's range."""
    thr = "0 replaced events kept; dry run after"
    replaced = {e["id"] for e in v.log or [] if e.get("compacted_by")}
    if not replaced:
        return "nothing to check", thr, NA, "no event replaced by a compaction"
    kept = set()
    for budget in (8000, 400_000):
        try:
            bundle = ctx.json("context", "--budget", str(budget), v.rev)
        except CtxFailed as e:
            return "-", thr, FAIL, str(e)
        for seg in bundle.get("segments") or []:  # the replayed conversation, not the state
            if seg.get("kept") and seg.get("kind") in REPLAYED_KINDS:
                kept |= replaced & set(seg.get("sources") or [])
    try:
        dry = ctx.json("compact", "--dry-run", v.rev)
    except CtxFailed as e:
        return "-", thr, FAIL, str(e)
    first = (dry.get("summarized_range") or {}).get("first")
    restart = first in replaced
    ok = not kept and not restart
    why = "" if ok else (f"{len(kept)} replaced event(s) kept in the context" if kept else
                         "the dry run summarizes replaced events again")
    return f"{len(replaced)} replaced, {len(kept)} kept", thr, PASS if ok else FAIL, why


def _combine(per: list[tuple[SessionView, tuple]], main: SessionView) -> tuple:
    """Per-session verdicts as one: FAIL if any session fails, n/a if every one is n/a; the
    measured value is the main session's (or the first judged one's), with k/n sessions."""
    judged = [(v, r) for v, r in per if r[2] != NA]
    if not judged:
        first = next((r for v, r in per if v is main), per[0][1])
        return first
    bad = [(v, r) for v, r in judged if r[2] == FAIL]
    shown = next((r for v, r in judged if v is main), judged[0][1])
    measured = shown[0] if len(judged) == 1 else f"{len(judged) - len(bad)}/{len(judged)} sessions; {shown[0]}"
    reason = "; ".join(f"{v.id[:8]}: {r[3]}" for v, r in bad[:2]) if len(judged) > 1 else (
        bad[0][1][3] if bad else "")
    return measured, shown[1], FAIL if bad else PASS, reason


def _words(text: str) -> list[str]:
    import re

    return [w for w in re.split(r"[\s,;:\"'()\[\]{}]+", text) if "/" in w or "." in w]


def _context(ctx: Ctx, v: SessionView, budget: int) -> tuple[dict | None, str]:
    try:
        return ctx.json("context", "--budget", str(budget), v.rev), ""
    except CtxFailed as e:
        return None, str(e)


def _check_context(bundle: dict | None, err: str, budget: int) -> tuple:
    if bundle is None:
        return "failed", "exit 0", FAIL, err
    return f"{bundle.get('used_tokens', '?')} used", "exit 0", PASS, ""


def _check_fill(bundle: dict | None, err: str, budget: int) -> tuple:
    thr = ">= 85% when offered > available"
    if bundle is None:
        return "-", thr, FAIL, "context failed: " + err
    avail = int(bundle.get("max_tokens", budget)) - int(bundle.get("reserved_output", 0) or 0)
    usage = (bundle.get("usage") or {}).get("by_tier")
    if not isinstance(usage, dict):
        return "-", thr, FAIL, "bundle has no usage.by_tier (offered tokens unknown)"
    offered = sum(int(u.get("kept", 0)) + int(u.get("dropped", 0)) for u in usage.values())
    used = int(bundle.get("used_tokens", 0))
    if offered <= avail:
        return f"offered {offered:,} <= {avail:,}", thr, NA, "everything offered fits"
    ok = used >= 0.85 * avail
    return f"{used:,}/{avail:,} ({used / avail:.0%})", thr, PASS if ok else FAIL, "" if ok else (
        f"offered {offered:,}")


# ---------------------------------------------------------------------------------------------
# Running


def label(path: Path, root: Path | None) -> str:
    """A short name for a transcript: its path under ROOT."""
    try:
        return str(path.relative_to(root)) if root else path.name
    except ValueError:
        return path.name


#: Sessions of one file on which the per-session builds (context, fill, the compaction dry
#: runs) are judged: an Aider history holds 1,134 sessions, and each build is a CLI call.
#: Files, tokens, prompts and titles are judged on every session.
BUILD_SAMPLE = 48


def _weight(v: SessionView) -> tuple[int, int, str]:
    tu = (v.stats or {}).get("token_usage") or {}
    size = sum(int(tu.get(k) or 0) for k in ("output_tokens", "input_tokens"))
    return (-size, -v.events, v.id)


def sampled(views: list[SessionView], main: SessionView) -> list[SessionView]:
    """Every session when there are at most BUILD_SAMPLE; else the main one, the heaviest
    (most tokens spent, then most events) for three quarters of the sample, where budgets are
    hard to fill or to meet, and an even spread of the rest in import order, so small
    sessions are built too. Deterministic: the same sessions on every run."""
    if len(views) <= BUILD_SAMPLE:
        return views
    heavy = sorted((v for v in views if v is not main), key=_weight)[:BUILD_SAMPLE * 3 // 4]
    rest = [v for v in views if v is not main and v not in heavy]
    step = max(1, len(rest) // (BUILD_SAMPLE - len(heavy) - 1))
    return [main, *heavy, *rest[::step]][:BUILD_SAMPLE]


def evaluate(path: Path, name: str | None = None) -> list[Result]:
    """Every check for one transcript, imported alone into a fresh temporary store."""
    name = name or path.name
    t = analyze(path)

    def res(check: str, m: str, thr: str, verdict: str, reason: str = "") -> Result:
        return Result(name, check, m, thr, verdict, reason)

    with tempfile.TemporaryDirectory(prefix="ctx-real-") as tmp:
        ctx = Ctx(Path(tmp))
        try:
            ctx.run("init", tmp)
            ctx.run("import", str(path))
            views = _sessions(ctx)
        except CtxFailed as e:
            return [res(c, "-", "-", FAIL, str(e)) for c in CHECKS]
        main = _main_session(views)
        if main is None:
            return [res(c, "-", "-", FAIL, "import made no session") for c in CHECKS]
        if main.error:
            return [res(c, "-", "-", FAIL, main.error) for c in CHECKS]
        built = sampled(views, main)
        contexts = {(v.id, b): _context(ctx, v, b) for v in built for b in BUDGETS}
        bundles = [bundle for bundle, _ in contexts.values() if bundle]
        out = [res("files.modified", *_check_files(t, views, "modified")),
               res("files.read", *_check_files(t, views, "read")),
               res("plan.steps", *_check_plan(t, main)),
               res("tokens.input", *_check_tokens(t, views, "input_tokens")),
               res("tokens.output", *_check_tokens(t, views, "output_tokens")),
               res("tokens.branch", *_check_branch_tokens(t, views)),
               res("prompts", *_check_prompts(t, views)),
               res("title", *_check_title(t, main, views)),
               res("pending", *_check_pending(t, views, bundles)),
               res("resume_chain", *_check_chain(t, main)),
               res("compaction.files", *_combine([(v, _compaction_one(t, ctx, v)) for v in built], main)),
               res("compaction.replaced",
                   *_combine([(v, _replaced_by_compaction(ctx, v)) for v in built], main))]
        out += [res(f"context@{b}", *_combine([(v, _check_context(*contexts[v.id, b], b)) for v in built],
                                             main)) for b in BUDGETS]
        out += [res(f"fill@{b}", *_combine([(v, _check_fill(*contexts[v.id, b], b)) for v in built], main))
                for b in BUDGETS]
    return out


def default_paths() -> list[Path]:
    from tests.corpus import corpus_root

    return [corpus_root()]


def run(paths: Iterable[str | os.PathLike]) -> list[Result]:
    results: list[Result] = []
    for p in paths:
        p = Path(p)
        root = p if p.is_dir() else None
        for f in transcript_files([p]):
            results += evaluate(f, label(f, root))
    return results


def summary(results: list[Result]) -> str:
    judged = [r for r in results if r.verdict != NA]
    held = sum(r.verdict == PASS for r in judged)
    na = len(results) - len(judged)
    return f"{held} of {len(judged)} checks hold ({na} n/a)"


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width // 2 - 1] + "…" + text[-(width - width // 2):]


def print_table(results: list[Result], out=sys.stdout) -> None:
    rows = [(_short(r.transcript, 48), r.check, r.measured, r.threshold, r.verdict,
             _short(r.reason, 70)) for r in results]
    head = ("transcript", "check", "measured", "threshold", "verdict", "why")
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + " |", file=out)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|", file=out)
    for row in rows:
        print("| " + " | ".join(c.replace("|", "/").ljust(w) for c, w in zip(row, widths, strict=True))
              + " |", file=out)
    print(f"\n{summary(results)}", file=out)


_ABBREV = {PASS: "pass", FAIL: "FAIL", NA: "–"}


def print_matrix(results: list[Result], out=sys.stdout) -> None:
    """One row per transcript, one column per check: pass / FAIL / – (n/a)."""
    names = list(dict.fromkeys(r.transcript for r in results))
    cell = {(r.transcript, r.check): _ABBREV[r.verdict] for r in results}
    head = ["transcript", *CHECKS, "holds"]
    rows = []
    for n in names:
        verdicts = [cell.get((n, c), "?") for c in CHECKS]
        judged = [v for v in verdicts if v in ("pass", "FAIL")]
        rows.append([_short(n, 48), *verdicts, f"{judged.count('pass')}/{len(judged)}"])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + " |", file=out)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|", file=out)
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |", file=out)
    print(f"\n{summary(results)}", file=out)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    as_json = "--json" in argv
    paths = [a for a in argv if not a.startswith("-")] or default_paths()
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        print(f"real_sessions: no such file or folder: {', '.join(missing)} "
              f"(set CTXSTORE_CORPUS or pass transcript paths)", file=sys.stderr)
        return 2
    results = run(paths)
    if as_json:
        print(json.dumps([asdict(r) for r in results], indent=1))
    elif "--matrix" in argv:
        print_matrix(results)
    else:
        print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
