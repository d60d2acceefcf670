"""Aider chat histories (`.aider.chat.history.md`, one file per project, many sessions).

Aider appends everything it shows to one markdown file in the project root (aider/io.py
`append_chat_history`): `# aider chat started at YYYY-MM-DD HH:MM:SS` opens a session, the
user's input is written as `#### ` lines, the model's reply as plain text between blank lines,
and aider's own output (startup banner, `Applied edit to …`, `Tokens: …`, lint and test output,
questions and answers) as `> ` lines. Every line aider writes for the user or for itself ends
with two spaces (a markdown line break); a multi-line tool message gets `> ` on its first line
only, and its last line ends with the two spaces.

Records are aider's writes ("blocks"), each with its exact text (line endings and blank lines
included), numbered by the file line it starts on:

- `header`: the `# aider chat started at` line (a new session);
- `user`: a run of `#### ` lines ending in two spaces (one input);
- `quote`: one `> ` tool message; a line without the two spaces continues to the next line
  that has them (aider's multi-line tool messages);
- `reply`: any other run of lines (the model's reply; such text as the very first block of a
  session, before anything aider wrote, e.g. an editor modeline atop the file, is `aider:text`).

Blank lines go with the write that wrote them (one before a header, an input or a reply, one
after a header or a reply; the rest to the next block), so a block never changes when aider
appends to the file. Text before the file's first header is a session of its own (a history
that starts mid-way). `ctx export --format aider` of a session writes its blocks back in
order: byte-equal to the session's part of the file, and the sessions of a file in order give
back the whole file.

Edits: a reply's SEARCH/REPLACE blocks (and whole-file listings in a session that announced the
`whole` edit format) are the model's tool calls; aider's `Applied edit to PATH` lines (the
quote blocks up to the next input or reply) are their results, the failure messages it prints
("The LLM did not conform to the edit format", `SearchReplaceNoExactMatch`, "Skipping edits
to") their errors, and an edit aider never confirmed is closed as not applied. A confirmation
for a file none of the reply's blocks names is a call of its own (`edit`), so the files
modified are exactly the confirmed ones. Usage comes from `> Tokens:` lines (see `parse_tokens`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..errors import InvalidInput
from ..objects import TextBlock, ToolCallBlock
from ..state.prompts import prompt_text, title_of
from ..userfiles import open_input
from .common import ImportContext, SessionBuilder, preview, tool_requested_payload

FMT = "aider"
LABEL = "Aider"
HISTORY_NAME = ".aider.chat.history.md"
HEADER_PREFIX = "# aider chat started at "
_HEADER = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
_HEADER_ANYWHERE = re.compile(rb"(?:^|\n)# aider chat started at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
SNIFF_BYTES = 64 << 10

#: aider's slash commands (aider/commands.py `cmd_*`, `_` written `-`); a typed prefix that
#: names exactly one of them runs it, as aider's `matching_commands` does.
COMMANDS = ("add", "architect", "ask", "chat-mode", "clear", "clipboard", "code", "commit",
            "context", "copy", "copy-context", "diff", "drop", "edit", "editor", "editor-model",
            "exit", "git", "help", "lint", "load", "ls", "map", "map-refresh", "model", "models",
            "multiline-mode", "ok", "paste", "quit", "read-only", "reasoning-effort", "report",
            "reset", "run", "save", "settings", "test", "think-tokens", "tokens", "undo", "voice",
            "weak-model", "web")
#: commands whose words go to a model: their text is the prompt
PROMPT_COMMANDS = frozenset({"ask", "code", "architect", "context", "help", "ok"})
#: chat modes in which a reply's edit blocks are not applied (aider's ask/help/context coders)
NO_EDIT_MODES = frozenset({"ask", "help", "context"})

_ANNOUNCE = re.compile(r"^(?:Main model|Models?): (\S+) with ([\w-]+) edit format")
_CHAT_MODE = re.compile(r"^/chat-mode\s+([\w-]+)")
_TOKENS = re.compile(r"^Tokens: ")
_TOKEN_ITEM = re.compile(r"([\d][\d,]*(?:\.\d+)?)([kKmM]?) (sent|cache write|cache hit|cached|received)\b")
_APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")
_NO_MATCH = re.compile(r"^## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match "
                       r"lines in (.+?)\s*$")
_SKIPPING = re.compile(r"^Skipping edits to (.+?)\s*$")
_DRY_RUN = re.compile(r"^Did not apply edit to (.+?) \(--dry-run\)\s*$")
_NOT_CONFORM = "The LLM did not conform to the edit format."
_OTHERS_APPLIED = re.compile(r"^# The other \d+ SEARCH/REPLACE blocks? were applied successfully\.")

_SR_HEAD = re.compile(r"^<{5,9} SEARCH>?\s*$")
_SR_DIVIDER = re.compile(r"^={5,9}\s*$")
_SR_UPDATED = re.compile(r"^>{5,9} REPLACE\s*$")
_FENCES = ("```", "````", "<source>", "<code>", "<pre>", "<codeblock>", "<sourcecode>")


# ---------------------------------------------------------------------------------------------
# The surface every harness module has (harnesses.py)


def sniff(path: Path) -> bool:
    """An aider history: a `# aider chat started at` header in the first 64 KB, or a text file
    named `.aider.chat.history.md`."""
    try:
        if not path.is_file():
            return False
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return False
    if b"\0" in head:
        return False
    return bool(_HEADER_ANYWHERE.search(head)) or path.name == HISTORY_NAME


def session_units(root: Path) -> list[Path]:
    """The aider histories under a folder: `.aider.chat.history.md` files and other `*.md`
    files that start like one."""
    out = []
    for p in root.rglob("*.md"):
        if p.is_file() and not p.is_symlink() and sniff(p):
            out.append(p)
    return sorted(out)


def default_dirs(env: Mapping[str, str], home: Path) -> list[Path]:
    """None: aider keeps its history in each project (`--chat-history-file`, default
    `.aider.chat.history.md` in the git root), not in a central folder; import one with
    `ctx import aider PATH`."""
    return []


def export(records: list[tuple[int, Any]], out: TextIO) -> int:
    """The session's blocks written back in order; returns the number of lines written."""
    n = 0
    for _line, value in records:
        text = record_text(value)
        out.write(text)
        n += text.count("\n")
    return n


def record_text(value: Any) -> str:
    if not isinstance(value, dict):
        return ""
    return "".join(str(value.get(k) or "") for k in ("before", "text", "after"))


# ---------------------------------------------------------------------------------------------
# Reading the file into blocks


@dataclass
class Block:
    kind: str       # header | user | quote | reply
    line: int       # the 1-based line it starts on
    lines: list[str] = field(default_factory=list)  # its lines, line endings included

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def value(self) -> dict[str, Any]:
        """The record kept for the block: its text split into leading blank lines, the
        block itself and the trailing whitespace (a reply's middle part is its message's text,
        so the record names the message instead of holding the text twice)."""
        text = self.text
        i = 0
        for ln in self.lines:
            if ln.strip():
                break
            i += len(ln)
        core = text[i:].rstrip()
        out: dict[str, Any] = {"kind": self.kind, "text": core}
        if i:
            out["before"] = text[:i]
        if len(text) > i + len(core):
            out["after"] = text[i + len(core):]
        return out


def _body(line: str) -> str:
    return line.rstrip("\r\n")


def read_lines(ctx: ImportContext | None, path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text with its line ending), streamed; undecodable bytes are replaced and
    reported with file and line."""
    step, pending = 1 << 20, 0
    with open_input(path) as fh:
        head = fh.read(SNIFF_BYTES)
        if b"\0" in head:
            raise InvalidInput(f"{path}: not an aider chat history (binary data)")
        fh.seek(0)
        for n, raw in enumerate(fh, 1):
            pending += len(raw)
            if ctx is not None and pending >= step:
                ctx.advance(pending, str(path))
                pending = 0
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                if ctx is not None:
                    ctx.warn(path.name, n, f"invalid UTF-8 ({exc.reason}); undecodable bytes "
                                           f"replaced (this line will not export byte-equal)")
                text = raw.decode("utf-8", errors="replace")
            yield n, text
    if ctx is not None:
        ctx.advance(pending, str(path))


def _pieces(lines: Iterator[tuple[int, str]]) -> Iterator[tuple[str, int, list[str]]]:
    """(kind, first line, lines) of each run of blank lines ("blank") and each write of aider
    between them: a header line, an input, one tool message, a reply (blank lines inside it
    included, the trailing ones not). One pass, each line looked at once."""
    kind, first, cur = "", 0, []     # the piece being read ("" none)
    tail: list[str] = []             # blank lines after a reply's last text line
    for n, line in lines:
        b = line.rstrip("\r\n")
        if kind == "quote":  # inside a multi-line tool message
            if not b.startswith(HEADER_PREFIX):
                cur.append(line)
                if b.endswith("  ") and b.strip():
                    yield kind, first, cur
                    kind = ""
                continue
            yield kind, first, cur
            kind = ""
        blank = not b.strip()
        if kind == "reply":
            if blank:
                tail.append(line)
                continue
            if not (b.startswith(("> ", HEADER_PREFIX))
                    or (b.startswith("#### ") and b.endswith("  "))):  # still the reply
                if tail:
                    cur += tail
                    tail = []
                cur.append(line)
                continue
            yield kind, first, cur
            if tail:
                yield "blank", first + len(cur), tail
                tail = []
            kind = ""
        elif kind == "blank":
            if blank:
                cur.append(line)
                continue
            yield kind, first, cur
            kind = ""
        elif kind == "user":
            if b.startswith("#### ") and b.endswith("  "):
                cur.append(line)
                continue
            yield kind, first, cur
            kind = ""
        first, cur = n, [line]
        if blank:
            kind = "blank"
        elif b.startswith(HEADER_PREFIX):
            yield "header", n, cur
        elif b.startswith("#### ") and b.endswith("  "):
            kind = "user"
        elif b.startswith("> "):
            if b.endswith("  ") and b.strip():
                yield "quote", n, cur
            else:
                kind = "quote"  # a multi-line message: on to the line that closes it
        else:
            kind = "reply"
    if kind:
        yield kind, first, cur
    if tail:
        yield "blank", first + len(cur), tail


#: aider writes a blank line before a header, an input and a reply, and one after a header and
#: a reply (io.py: "\n# aider chat started at …\n\n", "\n#### …", "\n" + reply + "\n\n")
_OWN_AFTER = ("header", "reply")
_OWN_BEFORE = ("header", "user", "reply")


def blocks(lines: Iterator[tuple[int, str]]) -> Iterator[Block]:
    """The file's blocks: one per write of aider's (see the module docstring), each with the
    blank lines aider wrote with it. Of the blank lines between two blocks, the first belongs
    to a header or reply before them, the rest to the block after them; the file's leading
    blank lines to its first block, its trailing ones to its last. So a block never changes
    when aider appends to the file."""
    prev: Block | None = None
    blanks: list[str] = []
    blank_line = 0
    for kind, n, got in _pieces(lines):
        if kind == "blank":
            blanks, blank_line = got, n
            continue
        lead: list[str] = []
        if blanks:
            take = 1 if prev is not None and prev.kind in _OWN_AFTER else 0
            if prev is not None:
                prev.lines += blanks[:take]
            lead = blanks[take:]
        if prev is not None:
            yield prev
        prev = Block(kind, blank_line + (len(blanks) - len(lead)) if lead else n, lead + got)
        blanks = []
    if prev is not None:
        prev.lines += blanks
        yield prev
    elif blanks:  # a file of blank lines only
        yield Block("reply", 1, blanks)


# ---------------------------------------------------------------------------------------------
# What the blocks say


def unquote(block: Block) -> list[str]:
    """A quote block's lines as aider printed them: `> ` and the closing two spaces removed."""
    out = []
    for line in block.lines:
        b = _body(line)
        if b.startswith("> "):
            b = b[2:]
        if b.endswith("  "):
            b = b[:-2]
        out.append(b)
    return out


def user_text(block: Block) -> str:
    """What the user typed: each `#### ` line without its prefix and the two closing spaces."""
    out = []
    for line in block.lines:
        b = _body(line)
        if not b.startswith("#### "):
            continue
        b = b[5:]
        out.append(b[:-2] if b.endswith("  ") else b)
    text = "\n".join(out)
    return "" if text == "<blank>" else text


def command_of(text: str) -> tuple[str, str] | None:
    """(command, its argument text) when the input is an aider command (`/name …`, a unique
    prefix of one, or `!cmd` for /run), else None."""
    s = text.strip()
    if s.startswith("!"):
        return "run", s[1:].strip()
    if not s.startswith("/"):
        return None
    word, _, rest = s[1:].partition(" ")
    word = word.split("\n")[0]
    rest = s[1 + len(word):].strip()
    if word in COMMANDS:
        return word, rest
    matches = [c for c in COMMANDS if c.startswith(word)] if word else []
    return (matches[0] if len(matches) == 1 else word), rest


def prompt_of(text: str) -> tuple[str, str]:
    """(request text, command name): the words a user input sends to a model ("" for a
    command that asks no model anything, a blank input or harness markup)."""
    cmd = command_of(text)
    if cmd is None:
        return prompt_text(text), ""
    name, rest = cmd
    if name in PROMPT_COMMANDS:
        if name == "ok" and not rest:
            rest = "Ok, please go ahead and make those changes."
        return prompt_text(rest), name
    return "", name


def parse_number(num: str, suffix: str) -> int:
    """`5,244` → 5244, `2.3k` → 2300, `15k` → 15000, `1.2M` → 1200000 (aider prints counts
    under 1,000 exactly, `x.yk` under 10,000 and `NNk` above: the lost digits stay lost)."""
    value = float(num.replace(",", ""))
    return int(round(value * {"": 1, "k": 1000, "m": 1_000_000}[suffix.lower()]))


def parse_tokens(text: str, model: str = "") -> dict[str, int] | None:
    """The usage of one `Tokens: … sent, … received.` line, in the OpenAI convention ctxstore
    keeps: input = sent + cache hit (aider's "sent" holds the prompt and the cache writes, its
    "cache hit"/"cached" the cache reads, as Anthropic reports them; a DeepSeek model's sent
    count already holds its hits), cached = cache hit, output = received. None when the line
    does not read as one."""
    if not _TOKENS.match(text):
        return None
    items: dict[str, int] = {}
    for m in _TOKEN_ITEM.finditer(text):
        items.setdefault(m.group(3), parse_number(m.group(1), m.group(2)))
    if "sent" not in items or "received" not in items:
        return None
    hit = items.get("cache hit", items.get("cached", 0))
    sent = items["sent"]
    usage = {"input_tokens": sent if "deepseek" in model.lower() else sent + hit,
             "cached_input_tokens": hit, "output_tokens": items["received"]}
    if items.get("cache write"):
        usage["cache_write_input_tokens"] = items["cache write"]
    return usage


def strip_filename(line: str) -> str:
    """A file name written on the line before an edit block (aider's strip_filename)."""
    s = line.strip()
    if s == "...":
        return ""
    for fence in _FENCES:
        if s.startswith(fence):
            rest = s[len(fence):]
            return rest if rest and ("." in rest or "/" in rest) else ""
    s = s.rstrip(":").lstrip("#").strip().strip("`").strip("*")
    return s


def _find_filename(before: list[str]) -> str:
    """The nearest of the (up to 3) lines before a SEARCH that names a file, going back only
    through fence lines (aider's find_filename without the list of files in the chat)."""
    names = []
    for line in reversed(before[-3:]):
        name = strip_filename(line)
        if name:
            names.append(name)
        if not line.startswith(_FENCES):
            break
    for name in names:
        if "." in name:
            return name
    return names[0] if names else ""


def search_replace_blocks(text: str) -> list[tuple[str, str, str, int, int]]:
    """(path, search, replace, first line, last line) of each SEARCH/REPLACE block in a reply,
    in order (lines: 0-based indexes of its `<<<<<<< SEARCH` and `>>>>>>> REPLACE` lines); a
    block without a file name takes the previous block's; parsing stops at a malformed block
    (aider then refuses the whole reply)."""
    lines = text.splitlines(keepends=True)
    out: list[tuple[str, str, str, int, int]] = []
    i, current = 0, ""
    while i < len(lines):
        if not _SR_HEAD.match(lines[i].strip()):
            i += 1
            continue
        head = i
        name = _find_filename(lines[max(0, i - 3):i]) or current
        if not name:
            return out
        current = name
        i += 1
        search: list[str] = []
        while i < len(lines) and not _SR_DIVIDER.match(lines[i].strip()):
            search.append(lines[i])
            i += 1
        if i >= len(lines):
            return out
        i += 1
        replace: list[str] = []
        while i < len(lines) and not (_SR_UPDATED.match(lines[i].strip())
                                      or _SR_DIVIDER.match(lines[i].strip())):
            replace.append(lines[i])
            i += 1
        if i >= len(lines):
            return out
        out.append((name, "".join(search), "".join(replace), head, i))
        i += 1
    return out


def whole_file_blocks(text: str) -> list[tuple[str, str, int, int]]:
    """(path, content, first line, last line) of each fenced file listing of a `whole`-format
    reply (lines: 0-based indexes of the listing's first and last content line; last < first
    for an empty one): the line before the opening fence names the file (aider's wholefile
    coder); a listing without a name is left out."""
    lines = text.splitlines(keepends=True)
    out: list[tuple[str, str, int, int]] = []
    name: str | None = None
    body: list[str] = []
    start = 0
    for i, line in enumerate(lines):
        if line.startswith("```"):
            if name is not None:
                if name:
                    out.append((name, "".join(body), start, i - 1))
                name, body = None, []
                continue
            start = i + 1
            prev = lines[i - 1].strip() if i > 0 else ""
            prev = prev.strip("*").rstrip(":").strip("`").lstrip("#").strip()
            name = prev if 0 < len(prev) <= 250 and " " not in prev else ""
            continue
        if name is not None:
            body.append(line)
    return out


def same_path(a: str, b: str) -> bool:
    """One file written two ways: equal, or one a path suffix of the other (aider matches a
    block's bare file name against the files in the chat)."""
    a, b = a.strip().lstrip("./"), b.strip().lstrip("./")
    if a == b:
        return True
    return a.endswith("/" + b) or b.endswith("/" + a)


# ---------------------------------------------------------------------------------------------
# Sessions


@dataclass
class SessionInfo:
    source_id: str
    started: str = ""      # the header's "YYYY-MM-DD HH:MM:SS", "" for text before any header
    title: str = ""


def started_at(blk: Block) -> str:
    """The "YYYY-MM-DD HH:MM:SS" of a header block."""
    for line in blk.lines:
        m = _HEADER.match(line)
        if m:
            return m.group(1)
    return ""


def _session_id(started: str, seen: dict[str, int], first_line: str) -> str:
    """The session's id: its start time (a second session started in the same second gets
    `-2`, ...); text before the file's first header: `prelude-` and a hash of its first line."""
    if not started:
        return "prelude-" + hashlib.sha1(first_line.encode("utf-8", "replace")).hexdigest()[:12]
    base = started.replace(" ", "T")
    seen[base] = seen.get(base, 0) + 1
    return base if seen[base] == 1 else f"{base}-{seen[base]}"


def index_sessions(path: Path) -> list[SessionInfo]:
    """A first pass: each session's id and title (aider records none: the first request; a
    session of commands only has no title)."""
    out: list[SessionInfo] = []
    seen: dict[str, int] = {}
    cur: SessionInfo | None = None
    for blk in blocks(read_lines(None, path)):
        if blk.kind == "header":
            started = started_at(blk)
            cur = SessionInfo(_session_id(started, seen, ""), started)
            out.append(cur)
            continue
        if cur is None:
            cur = SessionInfo(_session_id("", seen, blk.text.strip().split("\n")[0]))
            out.append(cur)
        if blk.kind == "user" and not cur.title:
            request, _cmd = prompt_of(user_text(blk))
            if request:
                cur.title = title_of(request)
    return out


def import_file(ctx: ImportContext, path: Path) -> None:
    """Every session of one history file (two passes: titles first, then the events)."""
    infos = index_sessions(path)
    if not infos:
        ctx.report.notes.append(f"{path.name}: no aider session in the file (it is empty)")
        return
    it = iter(infos)
    reader: SessionReader | None = None
    for blk in blocks(read_lines(ctx, path)):
        if reader is None or blk.kind == "header":
            if reader is not None:
                reader.finish()
            info = next(it, None)
            if info is None:  # aider started a session while the file was read
                ctx.report.notes.append(f"{path.name}: a session begun while the file was read "
                                        f"(line {blk.line}) is left for the next import")
                return
            reader = SessionReader(ctx, path, info)
        reader.feed(blk)
    if reader is not None:
        reader.finish()


@dataclass
class Call:
    tcid: str
    name: str
    args: dict
    path: str
    outcome: tuple[int, bool, str] | None = None  # (quote index or -1, is_error, result text)
    requested: str = ""   # its ToolCallRequested event
    own: bool = False     # a confirmation no block of the reply names: a call of its own
    span: tuple[int, int] | None = None  # the reply lines the call was read from


def prose(text: str, calls: list[Call]) -> str:
    """A reply's text with each edit it holds replaced by a line naming its call (the edit's
    text is the call's arguments: a context then carries it once)."""
    spans = sorted(((c.span, c) for c in calls if c.span is not None), key=lambda x: x[0])
    if not spans:
        return text
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    i = 0
    for (a, z), c in spans:
        out += lines[i:a]
        what = "SEARCH/REPLACE block" if c.name == "search_replace" else "file listing"
        out.append(f"[{what} for {c.path}: call {c.tcid}]\n")
        i = max(i, z + 1)
    out += lines[i:]
    return "".join(out)


class SessionReader:
    """Maps one session's blocks to events. A turn (a block that is not a quote, with the
    quote blocks after it) is mapped at once, so a reply's calls know their confirmations and
    its usage line."""

    def __init__(self, ctx: ImportContext, path: Path, info: SessionInfo) -> None:
        self.ctx = ctx
        self.b = SessionBuilder(
            ctx, fmt=FMT, file=path.name, source_id=info.source_id,
            ts=info.started.replace(" ", "T"), nonce=info.source_id,
            origin={"format": FMT, "id": info.source_id}, kind="main", title=info.title)
        self.model = ""
        self.edit_format = ""
        self.chat_mode = ""       # set by /chat-mode
        self.turn_mode = ""       # the command of the input being answered (/ask, /code, ...)
        self.seen_block = False  # a reply as the session's first block is text, not a reply
        self.pending: list[Block] = []

    def feed(self, blk: Block) -> None:
        if blk.kind == "quote" and self.pending:
            self.pending.append(blk)
            return
        self.flush()
        self.pending = [blk]

    def finish(self) -> None:
        self.flush()
        self.b.finish()

    # -- one turn ------------------------------------------------------------------------------
    def flush(self) -> None:
        if not self.pending:
            return
        turn, self.pending = self.pending, []
        lead = turn[0] if turn[0].kind != "quote" else None
        quotes = turn[1:] if lead is not None else turn
        said = [unquote(q) for q in quotes]
        is_reply = lead is not None and lead.kind == "reply" and self.seen_block
        self.seen_block = True
        calls = self._calls(lead) if is_reply else []
        self._outcomes(calls, said, lead.line if lead is not None else quotes[0].line)
        tokens = self._tokens(quotes, said)
        reply_usage = tokens.pop(0)[1] if is_reply and tokens else None
        if lead is not None:
            self._lead(lead, is_reply, calls, reply_usage)
        if not is_reply:  # confirmations with no reply before them: calls of their own
            for c in calls:
                c.own = True
        for qi, (q, text) in enumerate(zip(quotes, said, strict=True)):
            self._quote(q, text, qi, calls, [u for i, u in tokens if i == qi])
            self._announce(text)
        for c in calls:
            if c.outcome is not None and c.outcome[0] == -1 and c.requested:
                self._result(c)

    def _calls(self, lead: Block) -> list[Call]:
        mode = self.turn_mode or self.chat_mode or self.edit_format
        if mode in NO_EDIT_MODES:
            return []
        text = lead.value()["text"]
        calls: list[Call] = []
        for k, (path, search, replace, a, z) in enumerate(search_replace_blocks(text)):
            calls.append(Call(f"aider-{lead.line}-{k}", "search_replace",
                              {"path": path, "search": search, "replace": replace}, path,
                              span=(a, z)))
        if not calls and self.edit_format.startswith(("whole", "editor-whole")):
            for k, (path, content, a, z) in enumerate(whole_file_blocks(text)):
                calls.append(Call(f"aider-{lead.line}-{k}", "whole_file",
                                  {"path": path, "content": content}, path, span=(a, z)))
        return calls

    def _outcomes(self, calls: list[Call], said: list[list[str]], line: int) -> None:
        """Each call's result from the turn's tool messages (see the module docstring); a
        confirmation naming a file no call names becomes an `edit` call (added to `calls`).
        Aider writes a multi-line error one line at a time, so the messages are read as one
        run of lines."""
        def open_calls(path: str | None = None) -> list[Call]:
            return [c for c in calls
                    if c.outcome is None and (path is None or same_path(c.path, path))]

        flat = [(qi, t) for qi, text in enumerate(said) for t in text]

        def report(k: int, stop) -> str:
            """Lines k.. of the run, up to (not including) the first for which `stop` holds."""
            out = [flat[k][1]]
            for _qi, t in flat[k + 1:]:
                if stop(t):
                    break
                out.append(t)
            return "\n".join(out).strip()

        for qi, t in flat:
            m = _APPLIED.match(t)
            if m:
                path = m.group(1)
                found = open_calls(path)
                if not found and not any(same_path(c.path, path) and c.outcome
                                         and not c.outcome[1] for c in calls):
                    found = [Call(f"aider-{line}-e{len(calls)}", "edit", {"path": path}, path)]
                    calls += found
                for c in found:
                    c.outcome = (qi, False, t)
                continue
            m = _SKIPPING.match(t) or _DRY_RUN.match(t)
            if m:
                for c in open_calls(m.group(1)):
                    c.outcome = (qi, True, t)
        for k, (qi, t) in enumerate(flat):
            m = _NO_MATCH.match(t)
            if m:
                text = report(k, lambda x: bool(_NO_MATCH.match(x) or _OTHERS_APPLIED.match(x)
                                                or _APPLIED.match(x)))
                for c in open_calls(m.group(1)):
                    c.outcome = (qi, True, text)
        for qi, t in flat:
            if _OTHERS_APPLIED.match(t):
                for c in open_calls():
                    c.outcome = (qi, False, t)
        for k, (qi, t) in enumerate(flat):
            if t.strip() == _NOT_CONFORM or t.startswith("Exception while updating files"):
                text = report(k, lambda x: bool(_APPLIED.match(x) or _TOKENS.match(x)))
                for c in open_calls():
                    c.outcome = (qi, True, text)
        last = len(said) - 1  # -1: no quote block; the result is written with the reply
        for c in open_calls():
            c.outcome = (last, True, f"aider printed no `Applied edit to {c.path}` for this "
                                     f"edit: it was not applied")

    def _tokens(self, quotes: list[Block], said: list[list[str]]) -> list[tuple[int, dict]]:
        out = []
        for qi, text in enumerate(said):
            for j, t in enumerate(text):
                if not _TOKENS.match(t):
                    continue
                usage = parse_tokens(t, self.model)
                if usage is None:
                    self.ctx.warn(self.b.file, quotes[qi].line + j,
                                  f"a `Tokens:` line that does not read as aider's usage report "
                                  f"({t[:80]!r}); its usage is not counted")
                    continue
                out.append((qi, usage))
        return out

    def _lead(self, blk: Block, is_reply: bool, calls: list[Call], usage: dict | None) -> None:
        b = self.b
        value = blk.value()
        b.begin(blk.line, value, blk.text)
        ts = b.last_ts
        if blk.kind == "header":
            b.append(f"{FMT}:header", "system", {"started": started_at(blk)}, ts=ts)
            self.turn_mode = ""
            return
        if blk.kind == "user":
            text = user_text(blk)
            request, cmd = prompt_of(text)
            cm = _CHAT_MODE.match(text.strip())
            if cm:
                self.chat_mode = cm.group(1)
            if not text.strip():  # `#### <blank>`: an empty input, nothing sent
                b.append(f"{FMT}:blank", "user", {}, ts=ts)
                return
            if cmd and cmd not in PROMPT_COMMANDS:
                b.append(f"{FMT}:command", "user", {"command": "/" + cmd, "text": preview(text)},
                         ts=ts)
                return
            self.turn_mode = cmd
            body = request or text
            mid = b.message("user", [TextBlock(body)], meta={"command": "/" + cmd} if cmd else None)
            payload: dict[str, Any] = {"text": preview(body)}
            if cmd:
                payload["command"] = "/" + cmd
            b.append("UserPromptSubmitted", "user", payload, {"message_id": mid}, ts)
            return
        if not is_reply:
            b.append(f"{FMT}:text", "system", {"text": preview(value["text"])}, ts=ts)
            return
        text = prose(value["text"], calls)
        mid = b.message("assistant", [TextBlock(text)] + [ToolCallBlock(c.tcid, c.name, c.args)
                                                          for c in calls],
                        meta={"model": self.model} if self.model else None)
        payload = {"text": preview(text)}
        if self.model:
            payload["model"] = self.model
        if usage is not None:
            payload["usage"] = usage
        b.append("ModelResponseReceived", "model", payload, {"message_id": mid}, ts)
        self._request(calls, mid, ts)

    def _request(self, calls: list[Call], mid: str, ts: str) -> None:
        for c in calls:
            c.requested = self.b.append("ToolCallRequested", "model",
                                        tool_requested_payload(c.tcid, c.name, c.args),
                                        {"tool_call_id": c.tcid, "message_id": mid}, ts)

    def _quote(self, blk: Block, text: list[str], qi: int, calls: list[Call],
               usages: list[dict]) -> None:
        """A tool message: the usage, calls and results it carries (the first of them carries
        the block), else an `aider:output` bookkeeping event."""
        b = self.b
        b.begin(blk.line, blk.value(), blk.text)
        ts = b.last_ts
        n = b.stats.events
        for u in usages:  # a usage line with no reply of its own in the turn
            payload: dict[str, Any] = {"text": "", "usage": u}
            if self.model:
                payload["model"] = self.model
            b.append("ModelResponseReceived", "model", payload, ts=ts)
        own = [c for c in calls if c.own and not c.requested and c.outcome and c.outcome[0] == qi]
        if own:
            mid = b.message("assistant", [ToolCallBlock(c.tcid, c.name, c.args) for c in own],
                            meta={"aider": "an edit aider confirmed without a reply before it"})
            self._request(own, mid, ts)
        for c in calls:
            if c.requested and c.outcome is not None and c.outcome[0] == qi:
                self._result(c)
        if b.stats.events == n:
            first = next((t for t in text if t.strip()), "")
            b.append(f"{FMT}:output", "system", {"text": preview(first), "lines": len(text)},
                     ts=ts)

    def _result(self, c: Call) -> None:
        _qi, is_error, text = c.outcome
        self.b.tool_result(c.tcid, c.name, c.requested, text, is_error, self.b.last_ts)

    def _announce(self, text: list[str]) -> None:
        for t in text:
            m = _ANNOUNCE.match(t)
            if m:
                self.model, self.edit_format = m.group(1), m.group(2)
                self.chat_mode = ""
