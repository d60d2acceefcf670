"""Aider chat histories (`.aider.chat.history.md`): the corpus file and hand-made histories.

The hand-made ones are written the way aider's `append_chat_history` writes (aider/io.py): a
header with blank lines around it, `#### ` input lines and `> ` output lines ending with two
spaces (a multi-line tool message quoted on its first line only), replies between blank lines.
"""

from __future__ import annotations

import bisect
import io
import json
from pathlib import Path

import pytest

from ctxstore.importers import aider, detect, harnesses
from ctxstore.importers.records import event_line
from ctxstore.repo import Repository
from ctxstore.state.projector import Projector
from ctxstore.trace import session_token_usage
from tests.clitools import Ctx
from tests.corpus import require_corpus
from tests.hostiletools import record_opens
from tests.oracles import aider as oracle
from tests.oracles.transcripts import files_covered, has_markup

# -- writing a history as aider does ----------------------------------------------------------


def header(ts: str) -> str:
    return f"\n# aider chat started at {ts}\n\n"


def user(text: str) -> str:
    lines = text.splitlines() or ["<blank>"]
    return "\n#### " + "  \n#### ".join(lines).rstrip() + "  \n"


def ai(text: str) -> str:
    return "\n" + text.strip() + "\n\n"


def tool(message: str) -> str:
    return "> " + message.strip() + "  \n"


FENCE = "```"
SR = "<<<<<<< SEARCH\n{}=======\n{}>>>>>>> REPLACE\n"

SESSION_A = (
    header("2024-08-05 19:33:02")
    + tool("/usr/local/bin/aider --model sonnet")
    + tool("Aider v0.51.2-dev")
    + tool("Main model: claude-3-5-sonnet-20240620 with diff edit format, prompt cache")
    + user("make greet say hi\nand add a farewell")
    + ai("Here are the changes:\n\nsrc/greet.py\n" + FENCE + "python\n"
         + SR.format("print('hello')\n", "print('hi')\n") + FENCE + "\n\n"
         + "src/bye.py\n" + FENCE + "python\n" + SR.format("", "print('bye')\n") + FENCE
         + "\n\n#### A heading in the reply\n\nDone.")
    + tool("Tokens: 2.3k sent, 1.2k cache write, 15k cache hit, 120 received.\n"
           "Cost: $0.01 message, $0.01 session.")
    + tool("Applied edit to src/greet.py")
    + tool("Applied edit to src/bye.py")
    + tool("Commit 1234abc feat: hi and bye")
    + user("now change x in other.py")
    + ai("other.py\n" + FENCE + "\n" + SR.format("x = 1\n", "x = 2\n") + FENCE)
    + tool("Tokens: 1,234 sent, 56 received. Cost: $0.01 request, $0.02 session.")
    + tool("The LLM did not conform to the edit format.")
    + tool("https://aider.chat/docs/troubleshooting/edit-errors.html")
    + "".join(tool(x) if x else ">   \n" for x in (
        "# 1 SEARCH/REPLACE block failed to match!", "",
        "## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in "
        "lib/other.py", "<<<<<<< SEARCH", "x = 1", "=======", "x = 2", ">>>>>>> REPLACE"))
    + ai("Sorry, here is the right one:\n\nlib/other.py\n" + FENCE + "\n"
         + SR.format("x=1\n", "x = 2\n") + FENCE)
    + tool("Tokens: 1,300 sent, 60 received. Cost: $0.01 request, $0.03 session.")
    + tool("Applied edit to lib/other.py")
    + user("/ask what would you change in util.py?")
    + ai("I would change it like this:\n\nutil.py\n" + FENCE + "\n"
         + SR.format("a\n", "b\n") + FENCE)
    + tool("Tokens: 900 sent, 30 received. Cost: $0.01 message, $0.04 session.")
    + user("/add README.md")
    + tool("Added README.md to the chat")
    + user("")
    + user("/ex")
)
SESSION_B = (
    header("2024-08-05 20:39:59")
    + tool("/usr/local/bin/aider --model gpt-4o-mini")
    + tool("Model: gpt-4o-mini with whole edit format")
    + user("write hello.py")
    + ai("hello.py\n" + FENCE + "\nprint('hello')\n" + FENCE)
    + tool("Tokens: 812 sent, 40 received. Cost: $0.0001 request, $0.0001 session.")
    + tool("Applied edit to hello.py")
)
SESSION_C = (
    header("2024-08-05 21:00:00")
    + tool("/usr/local/bin/aider --apply fix.md")
    + tool("Applied edit to applied.py")
    + tool("Tokens: lots sent, none received.")
)
PRELUDE = "-*- mode: fundamental -*-\n" + tool("^C again to exit") + user("old question") + \
    ai("An old answer.")
HISTORY = PRELUDE + SESSION_A + SESSION_B + SESSION_C


def write_history(tmp_path: Path, text: str = HISTORY, name: str = ".aider.chat.history.md") -> Path:
    p = tmp_path / "project" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(text.encode("utf-8"))
    return p


def imported(tmp_path: Path, path: Path, *args: str) -> tuple[Ctx, dict]:
    ctx = Ctx(tmp_path / "store")
    (tmp_path / "store").mkdir(exist_ok=True)
    ctx("init", str(tmp_path / "store"))
    return ctx, ctx.json("import", *args, str(path))


def session_texts(repo: Repository) -> dict[str, tuple[int, str]]:
    """Each session's export, as `ctx export --format aider` writes it, without the export
    command's scan of every session for inline children (aider sessions have none; with a
    thousand sessions that scan costs a second per export)."""
    out = {}
    for sid in repo.session_ids():
        found: dict[int, object] = {}
        for eid in repo.graph.reachable_events(list(repo.branches(sid).values())):
            ev = repo.graph.event(eid)
            src = ev.payload.get("source")
            if isinstance(src, dict) and ({"record", "raw"} & set(src)):
                found.setdefault(int(src["line"]), ev)
        records = [(n, json.loads(event_line(repo.objects, ev.payload, ev.causality)))
                   for n, ev in sorted(found.items())]
        buf = io.StringIO()
        aider.export(records, buf)
        out[sid] = (records[0][0], buf.getvalue())
    return out


# -- the corpus ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_store(tmp_path_factory):
    root = require_corpus()
    path = root / "aider" / "aider_chat-history.md"
    tmp = tmp_path_factory.mktemp("aider-corpus")
    ctx, report = imported(tmp, path)
    return path, ctx, report, Repository.open(tmp / "store" / ".ctx")


def test_corpus_imports_every_session_and_reimport_writes_nothing(corpus_store):
    path, ctx, report, repo = corpus_store
    t = oracle.analyze(path)
    assert report["sessions"] == 1134  # 1,133 headers and the text before the first
    assert report["warnings"] == 0
    again = ctx.json("import", str(path))
    assert again["new_events"] == 0 and again["sessions"] == 1134
    listed = ctx.json("sessions")
    assert {s["format"] for s in listed} == {"aider"}
    titles = [s["title"] for s in listed]
    assert "Use the Spinner instead of the inlined custom spinner" in titles
    # every session whose blocks hold a request has a title, none with markup
    lines = oracle.read_lines(path)
    starts = [a + 1 for kind, a, _z in oracle.split_blocks(lines) if kind == "header"]
    with_request = {bisect.bisect_right(starts, line) for line, _, _ in t.prompts}
    assert len(with_request) == 563
    assert sum(bool(x) for x in titles) >= len(with_request)
    assert not [x for x in titles if has_markup(x)]


def test_corpus_tokens_match_the_oracle(corpus_store):
    path, _ctx, _report, repo = corpus_store
    t = oracle.analyze(path)
    total_in = total_out = cached = 0
    for sid in repo.session_ids():
        tu = session_token_usage(repo.graph, list(repo.branches(sid).values()))
        total_in += tu["input_tokens"]
        total_out += tu["output_tokens"]
        cached += tu["cache_read_tokens"]
    assert t.usage_records == 839
    assert (total_in, total_out, cached) == (t.input_tokens, t.output_tokens, t.cache_read_tokens)


def test_corpus_files_modified_are_the_applied_edits(corpus_store):
    path, _ctx, report, repo = corpus_store
    t = oracle.analyze(path)
    with_calls = {s["session"] for s in report["session_stats"] if s["tool_pairs"]}
    listed = []
    projector = Projector(repo)
    for sid in with_calls:
        st = projector.project(repo.branches(sid)["main"])
        listed += [f["path"] for f in st.files["modified"]]
    expected = t.modified_files()
    assert len(expected) == 48
    k, missing = files_covered(expected, listed)
    assert not missing
    assert len(set(listed) - set(expected)) <= 2  # aider's "other blocks were applied" reports


def test_corpus_sessions_export_byte_equal_and_together_give_the_file(corpus_store):
    path, ctx, _report, repo = corpus_store
    texts = session_texts(repo)
    whole = "".join(text for _line, text in sorted(texts.values()))
    assert whole.encode("utf-8") == path.read_bytes()
    # the real command, on the text before the first header, a session and the last one
    ordered = sorted(texts.items(), key=lambda kv: kv[1][0])
    for sid, (_line, text) in (ordered[0], ordered[1], ordered[-1]):
        out = ctx("export", sid, "--format", "aider").stdout
        assert out == text
    assert ordered[1][1][1].startswith("\n# aider chat started at 2024-08-05 19:33:02\n")


def test_corpus_is_detected_and_claims_no_other_harness_file():
    root = require_corpus()
    path = root / "aider" / "aider_chat-history.md"
    assert aider.sniff(path) and harnesses.sniff(path) == "aider"
    assert detect.detect_format(path) == "aider"
    assert aider.session_units(root / "aider") == [path]
    others = [p for p in root.rglob("*") if p.is_file() and "aider" not in p.parts]
    assert others
    for p in others:
        assert not aider.sniff(p), p
        assert not oracle.detect(p), p
    assert not aider.session_units(root / "cline") and not aider.session_units(root / "gemini")


# -- hand-made histories ------------------------------------------------------------------------


def test_blocks_sessions_calls_and_results(tmp_path):
    path = write_history(tmp_path)
    ctx, report = imported(tmp_path, path)
    assert report["sessions"] == 4
    warnings = report["warning_list"]
    assert len(warnings) == 1 and warnings[0]["file"] == path.name
    bad_line = HISTORY.splitlines().index("> Tokens: lots sent, none received.  ") + 1
    assert warnings[0]["line"] == bad_line and "Tokens:" in warnings[0]["message"]
    sessions = {s["title"]: s for s in ctx.json("sessions")}
    assert set(sessions) == {"old question", "make greet say hi", "write hello.py", ""}
    a = sessions["make greet say hi"]["id"]
    st = ctx.json("state", f"{a}/main")
    assert sorted(f["path"] for f in st["files"]["modified"]) == [
        "lib/other.py", "src/bye.py", "src/greet.py"]
    assert not st["tool_calls"]["pending"]
    log = ctx.json("log", f"{a}/main")
    types = [e["type"] for e in reversed(log)]
    assert types.count("UserPromptSubmitted") == 3        # two requests and /ask's words
    assert "aider:command" in types and types.count("ToolCallRequested") == 4
    failed = [e for e in log if e["type"] == "ToolCallFailed"]
    assert len(failed) == 1 and "SearchReplaceNoExactMatch" in failed[0]["payload"]["error"]
    prompts = [(e["payload"]["text"], e["payload"].get("command")) for e in log
               if e["type"] == "UserPromptSubmitted"]
    assert ("what would you change in util.py?", "/ask") in prompts
    stats = ctx.json("stats", f"{a}/main")["token_usage"]
    assert (stats["input_tokens"], stats["output_tokens"]) == (2300 + 15000 + 1234 + 1300 + 900,
                                                               120 + 56 + 60 + 30)
    assert stats["cache_read_tokens"] == 15000
    b = sessions["write hello.py"]["id"]
    assert [f["path"] for f in ctx.json("state", f"{b}/main")["files"]["modified"]] == ["hello.py"]
    c = sessions[""]["id"]
    assert [f["path"] for f in ctx.json("state", f"{c}/main")["files"]["modified"]] == ["applied.py"]
    # the oracle reads the same history the same way
    t = oracle.analyze(path)
    assert sorted(t.modified_files()) == ["applied.py", "hello.py", "lib/other.py", "src/bye.py",
                                          "src/greet.py"]
    assert (t.input_tokens, t.output_tokens) == (2300 + 15000 + 1234 + 1300 + 900 + 812,
                                                 120 + 56 + 60 + 30 + 40)
    assert [p for _, _, p in t.prompts] == ["old question", "make greet say hi\nand add a farewell",
                                            "now change x in other.py",
                                            "what would you change in util.py?", "write hello.py"]


def test_export_is_byte_equal_per_session_and_reimport_writes_nothing(tmp_path):
    path = write_history(tmp_path)
    ctx, _ = imported(tmp_path, path)
    parts = []
    for s in ctx.json("sessions"):
        out = ctx("export", s["id"], "--format", "aider").stdout
        parts.append(out)
        assert out in HISTORY
    assert "".join(sorted(parts, key=HISTORY.index)) == HISTORY
    assert ctx.json("import", str(path))["new_events"] == 0


def test_a_grown_history_extends_its_last_session(tmp_path):
    text = PRELUDE + SESSION_A + SESSION_B
    path = write_history(tmp_path, text)
    ctx, first = imported(tmp_path, path)
    path.write_text(text + user("one more") + ai("Sure."), encoding="utf-8")
    rep = ctx.json("import", str(path))
    assert rep["sessions"] == first["sessions"] == 3
    assert rep["new_events"] == 2  # the request and the reply
    assert len(ctx.json("sessions")) == 3


def test_blocks_rule():
    text = ("\n\n# aider chat started at 2024-01-01 00:00:00\n\n"
            "> first line of a message\nsecond line\n\nlast line  \n"
            "#### not a user line (no two spaces)\n\n"
            "#### a real one  \n####   \n#### second  \n\n"
            "A reply.\n\n> Tokens: 1 sent, 2 received.  \n> two  \n\n\n")
    lines = text.splitlines(keepends=True)
    blocks = list(aider.blocks(enumerate(lines, 1)))
    assert [(b.kind, b.line, b.text) for b in blocks] == [
        ("header", 1, "\n\n# aider chat started at 2024-01-01 00:00:00\n\n"),
        ("quote", 5, "> first line of a message\nsecond line\n\nlast line  \n"),
        ("reply", 9, "#### not a user line (no two spaces)\n\n"),
        ("user", 11, "#### a real one  \n####   \n#### second  \n"),
        ("reply", 14, "\nA reply.\n\n"),
        ("quote", 17, "> Tokens: 1 sent, 2 received.  \n"),
        ("quote", 18, "> two  \n\n\n")]
    assert [(k, a + 1) for k, a, _z in oracle.split_blocks(lines)] == [
        (b.kind, b.line) for b in blocks]
    assert aider.user_text(blocks[3]) == "a real one\n\nsecond"
    assert blocks[0].value() == {"kind": "header", "before": "\n\n",
                                 "text": "# aider chat started at 2024-01-01 00:00:00",
                                 "after": "\n\n"}


def test_blocks_of_a_growing_file_never_change():
    """Each block is one of aider's writes with the blank lines it wrote, so a block read
    before aider appended more reads the same after."""
    lines = HISTORY.splitlines(keepends=True)  # no separator but "\n" in it
    whole = [(b.kind, b.line, b.text) for b in aider.blocks(enumerate(lines, 1))]
    for cut in range(1, len(lines)):
        part = [(b.kind, b.line, b.text) for b in aider.blocks(enumerate(lines[:cut], 1))]
        # all but the last block (aider may still be writing it) are final
        assert part[:-1] == whole[:len(part) - 1], cut


@pytest.mark.parametrize("line, usage", [
    ("Tokens: 5,244 sent, 604 received. Cost: $0.02 request, $0.02 session.",
     {"input_tokens": 5244, "cached_input_tokens": 0, "output_tokens": 604}),
    ("Tokens: 15k sent, 13k cache write, 1.6k cache hit, 133 received.",
     {"input_tokens": 16600, "cached_input_tokens": 1600, "output_tokens": 133,
      "cache_write_input_tokens": 13000}),
    ("Tokens: 194 sent, 9,474 cached, 7 received. Cost: $0.000057 message",
     {"input_tokens": 9668, "cached_input_tokens": 9474, "output_tokens": 7}),
    ("Tokens: 1.2M sent, 3.4k received.", {"input_tokens": 1200000, "cached_input_tokens": 0,
                                           "output_tokens": 3400}),
])
def test_token_lines(line, usage):
    assert aider.parse_tokens(line) == usage


def test_deepseek_sent_already_holds_the_cache_hits():
    assert aider.parse_tokens("Tokens: 10k sent, 8k cache hit, 1k received.",
                              "deepseek/deepseek-coder")["input_tokens"] == 10000


def test_commands_and_requests():
    assert aider.prompt_of("/ask why?") == ("why?", "ask")
    assert aider.prompt_of("/ex") == ("", "exit")
    assert aider.prompt_of("/a foo") == ("", "a")  # ambiguous prefix: not a request
    assert aider.prompt_of("!ls") == ("", "run")
    assert aider.prompt_of("fix it") == ("fix it", "")


def test_invalid_utf8_is_named_with_its_line(tmp_path):
    data = HISTORY.encode("utf-8").replace(b"An old answer.", b"An old \xff answer.")
    path = write_history(tmp_path)
    path.write_bytes(data)
    _ctx, report = imported(tmp_path, path)
    bad = [w for w in report["warning_list"] if "UTF-8" in w["message"]]
    line = HISTORY.splitlines().index("An old answer.") + 1
    assert bad == [{"file": path.name, "line": line, "message": bad[0]["message"]}]


def test_binary_or_foreign_files_are_refused(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init", str(tmp_path))
    junk = tmp_path / "notes.md"
    junk.write_text("# Notes\n\nnothing of aider here\n")
    err = ctx.fails(10, "import", "aider", str(junk))
    assert "notes.md: not a Aider session" in err
    binary = tmp_path / ".aider.chat.history.md"
    binary.write_bytes(b"\0\1\2 not text")
    assert not aider.sniff(binary)
    assert "not a Aider session" in ctx.fails(10, "import", "aider", str(binary))
    assert "nothing to import" in ctx.fails(10, "import", str(binary))


def test_paths_named_in_the_history_are_never_opened(tmp_path, monkeypatch):
    secret = tmp_path / "outside" / "secret.py"
    secret.parent.mkdir()
    secret.write_text("SECRET = 1\n")
    text = (header("2024-08-05 19:33:02") + user(f"/add {secret}")
            + tool(f"Added {secret} to the chat") + user("edit it")
            + ai(f"{secret}\n{FENCE}\n" + SR.format("SECRET = 1\n", "SECRET = 2\n") + FENCE)
            + tool(f"Applied edit to {secret}") + tool("Applied edit to ../outside/secret.py"))
    path = write_history(tmp_path, text)

    opened = record_opens(monkeypatch)
    ctx, report = imported(tmp_path, path)
    monkeypatch.undo()
    assert report["sessions"] == 1
    assert str(path) in opened
    assert not [p for p in opened if "secret" in p]
    sid = ctx.json("sessions")[0]["id"]
    assert [f["path"] for f in ctx.json("state", f"{sid}/main")["files"]["modified"]] == [str(secret)]


def test_default_dirs_are_none_and_a_folder_walk_finds_histories(tmp_path):
    assert aider.default_dirs({"HOME": str(tmp_path)}, tmp_path) == []
    a = write_history(tmp_path)
    b = write_history(tmp_path / "other", name="old-history.md")
    (tmp_path / "project" / "README.md").write_text("# readme\n")
    assert aider.session_units(tmp_path) == sorted([a, b])
    assert oracle.units(tmp_path) == sorted([a, b])
    assert aider.sniff(a) and harnesses.sniff(a) == "aider"


def test_a_session_begun_between_the_two_passes_waits_for_the_next_import(tmp_path, monkeypatch):
    """The first pass (titles) saw one session less than the second: aider started one while
    the file was read. It is left for the next import, with a note."""
    path = write_history(tmp_path)
    first_pass = aider.index_sessions
    monkeypatch.setattr(aider, "index_sessions", lambda p: first_pass(p)[:-1])
    ctx, report = imported(tmp_path, path)
    assert report["sessions"] == 3
    assert any("left for the next import" in n for n in report["notes"])
    monkeypatch.undo()
    assert ctx.json("import", str(path))["sessions"] == 4
