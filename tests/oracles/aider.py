"""The oracle for Aider chat histories (`.aider.chat.history.md`), from aider's own writer.

Aider (aider/io.py `append_chat_history`) appends to one markdown file per project:
`# aider chat started at YYYY-MM-DD HH:MM:SS` starts a session; the user's input is written as
`#### ` lines, each ending with two spaces; aider's own output as `> ` lines (a multi-line
message gets `> ` on its first line only; its last line ends with two spaces); the model's
reply as plain text between blank lines. What this oracle reads, per the rules in
docs/harnesses/aider.md:

- blocks, one per write: a header line; a run of `#### ` lines ending in two spaces (one
  input); one `> ` message (a line not ending in two spaces continues to the next line that
  does); any other run of lines (a reply). Blank lines: one before a header, an input or a
  reply and one after a header or a reply are theirs; the others belong to the next block
  (the file's leading ones to the first, its trailing ones to the last). A block starts on the
  1-based line of its first line; events carry these numbers as `payload.source.line`.
- prompts: each input block's text (the `#### ` prefix and the two closing spaces removed),
  unless it is an aider command (`/name`, a unique prefix of one, `!cmd`); `/ask`, `/code`,
  `/architect`, `/context` and `/help` with words send those words to a model: a prompt.
- files modified: every `> Applied edit to PATH` line (aider prints it for each file it
  wrote): a successful call at the quote block that holds it.
- tokens: every `> Tokens: N sent[, N cache write][, N cache hit|cached], N received.` line:
  input = sent + cache hit (sent already holds the cache writes; for a DeepSeek model it also
  holds the hits), cache read = cache hit, output = received; `2.3k` = 2300, `12k` = 12000,
  `5,244` = 5244.

It imports nothing from ctxstore.
"""

from __future__ import annotations

import re
from pathlib import Path

from .transcripts import MAIN, Call, Transcript, prompt_text

HISTORY_NAME = ".aider.chat.history.md"
_HEADER = re.compile(r"^# aider chat started at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
_HEADER_BYTES = re.compile(rb"(?:^|\n)# aider chat started at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
_ANNOUNCE = re.compile(r"^(?:Main model|Models?): (\S+) with ([\w-]+) edit format")
_ITEM = re.compile(r"(\d[\d,]*(?:\.\d+)?)([kKmM]?) (sent|cache write|cache hit|cached|received)\b")
_APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")

COMMANDS = ("add", "architect", "ask", "chat-mode", "clear", "clipboard", "code", "commit",
            "context", "copy", "copy-context", "diff", "drop", "edit", "editor", "editor-model",
            "exit", "git", "help", "lint", "load", "ls", "map", "map-refresh", "model", "models",
            "multiline-mode", "ok", "paste", "quit", "read-only", "reasoning-effort", "report",
            "reset", "run", "save", "settings", "test", "think-tokens", "tokens", "undo", "voice",
            "weak-model", "web")
ASKING = {"ask", "code", "architect", "context", "help"}


def detect(path: Path) -> bool:
    if not path.is_file():
        return False
    with open(path, "rb") as fh:
        head = fh.read(64 << 10)
    if b"\0" in head:
        return False
    return bool(_HEADER_BYTES.search(head)) or path.name == HISTORY_NAME


def units(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.md") if p.is_file() and not p.is_symlink() and detect(p))


def _strip(line: str) -> str:
    return line.rstrip("\n").rstrip("\r")


def split_blocks(lines: list[str]) -> list[tuple[str, int, int]]:
    """(kind, first index, end index) of each block, indexes into LINES (0-based): one per
    write of aider's, with the blank lines it wrote (one before a header, an input or a reply;
    one after a header or a reply; the others go to the next block)."""
    def user(s: str) -> bool:
        return s.startswith("#### ") and s.endswith("  ")

    def closing(s: str) -> bool:
        return s.endswith("  ") and s.strip() != ""

    n = len(lines)
    spans = []  # (kind, start, end) of the non-blank writes
    i = 0
    while i < n:
        s = _strip(lines[i])
        if not s.strip():
            i += 1
            continue
        start = i
        i += 1
        if _HEADER.match(s):
            kind = "header"
        elif user(s):
            kind = "user"
            while i < n and user(_strip(lines[i])):
                i += 1
        elif s.startswith("> "):
            kind = "quote"
            if not closing(s):
                while i < n and not _HEADER.match(_strip(lines[i])):
                    i += 1
                    if closing(_strip(lines[i - 1])):
                        break
        else:
            kind = "reply"
            while i < n:
                t = _strip(lines[i])
                if _HEADER.match(t) or user(t) or t.startswith("> "):
                    break
                i += 1
            while i > start + 1 and not lines[i - 1].strip():
                i -= 1
        spans.append((kind, start, i))
    out = []
    for k, (kind, start, end) in enumerate(spans):
        prev_end = spans[k - 1][2] if k else 0
        if k and spans[k - 1][0] in ("header", "reply") and start > prev_end:
            prev_end += 1
        nxt = spans[k + 1][1] if k + 1 < len(spans) else n
        if k + 1 < len(spans):
            end = end + 1 if kind in ("header", "reply") and nxt > end else end
        else:
            end = n
        out.append((kind, prev_end, end))
    return out


def _number(num: str, suffix: str) -> int:
    scale = {"": 1, "k": 1000, "m": 1000000}[suffix.lower()]
    return int(round(float(num.replace(",", "")) * scale))


def request(text: str) -> str:
    """The words an input sends to a model ("" for a command)."""
    s = text.strip()
    if s.startswith("!"):
        return ""
    if s.startswith("/"):
        word = s[1:].split()[0] if s[1:].split() else ""
        names = [c for c in COMMANDS if c == word] or [c for c in COMMANDS if c.startswith(word)]
        name = names[0] if len(names) == 1 else word
        rest = s[1 + len(word):].strip()
        return rest if name in ASKING else ""
    return s


def read_lines(path: Path) -> list[str]:
    """The file's lines as aider's "\n" ends them (not str.splitlines, which also splits at
    form feeds and other separators a reply may hold)."""
    with open(path, "rb") as fh:
        return [raw.decode("utf-8", errors="replace") for raw in fh]


def analyze(path: Path) -> Transcript:
    lines = read_lines(path)
    t = Transcript(path=path, harness="aider", lines=len(lines))
    model = ""
    for kind, a, z in split_blocks(lines):
        line_no = a + 1
        body = [_strip(x) for x in lines[a:z]]
        if kind == "header":
            model = ""
        elif kind == "user":
            words = []
            for s in body:
                if s.startswith("#### "):
                    s = s[5:]
                    words.append(s[:-2] if s.endswith("  ") else s)
            text = "\n".join(words)
            if text != "<blank>":
                real = prompt_text(request(text))
                if real:
                    t.prompts.append((line_no, MAIN, real))
        elif kind == "quote":
            said = []
            for s in body:
                s = s[2:] if s.startswith("> ") else s
                said.append(s[:-2] if s.endswith("  ") else s)
            for s in said:
                m = _ANNOUNCE.match(s)
                if m:
                    model = m.group(1)
                if s.startswith("Tokens: "):
                    items = {}
                    for it in _ITEM.finditer(s):
                        items.setdefault(it.group(3), _number(it.group(1), it.group(2)))
                    if "sent" in items and "received" in items:
                        hit = items.get("cache hit", items.get("cached", 0))
                        t.usage_records += 1
                        t.input_tokens += items["sent"] + (0 if "deepseek" in model.lower() else hit)
                        t.cache_read_tokens += hit
                        t.cache_write_tokens += items.get("cache write", 0)
                        t.output_tokens += items["received"]
                m = _APPLIED.match(s)
                if m:
                    t.calls.append(Call(id=f"applied-{line_no}-{len(t.calls)}", name="edit",
                                        args={"path": m.group(1)}, line=line_no,
                                        status="ok", result_line=line_no,
                                        writes=(m.group(1),)))
    return t
