"""Finding and replacing secrets in text: detect-secrets' plugins plus ctxstore's own patterns.

`Redactor.redact(text)` returns the text with every secret replaced by `[REDACTED:<type>]`
and the detectors that fired; it never returns or records the secret itself.

Why both: detect-secrets (Yelp, the well-kept scanner pre-commit setups use) knows many
providers' token shapes; its plugins are regex detectors we run ourselves over the whole
string (its file scanner, baselines and verification by network are not for us). Two of its
shapes need more than it gives: PrivateKeyDetector matches only the `BEGIN ... PRIVATE KEY`
header, and GitHubTokenDetector's regex captures only the `ghp` prefix — replacing what it
reports would leave the key in place. So the built-in patterns replace a whole private key
block, and a capture group is used as the secret only when it is at least MIN_GROUP chars
(BasicAuth's password, the AWS secret key after `aws_secret...=`); otherwise the whole match
goes. The built-in patterns also cover the common shapes when detect-secrets is not
installed (extra `redact`); `Redactor.engines` says which ran, and the bundle says so too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import InvalidInput
from .policy import RedactionPolicy

MIN_GROUP = 6
#: name -> (label, regex). Order matters: a private key block goes before anything inside it.
BUILTIN_PATTERNS: tuple[tuple[str, str, str], ...] = (
    ("private-key-block", "Private Key",
     r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----[\s\S]*?"
     r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)"),
    ("aws-access-key-id", "AWS Access Key", r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    ("aws-secret-access-key", "AWS Secret Key",
     r"(?i)aws.{0,20}?(?:secret|key).{0,20}?[\s\"'=:]([0-9a-zA-Z/+]{40})(?![0-9a-zA-Z/+])"),
    ("github-token", "GitHub Token", r"\b(?:gh[pousr]_[A-Za-z0-9_]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("slack-token", "Slack Token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("slack-webhook", "Slack Webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"),
    ("openai-key", "OpenAI Token",
     r"\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{32,})"),
    ("anthropic-key", "Anthropic Key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    ("jwt", "JSON Web Token", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    ("url-password", "Password in URL",
     r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@'\"<>]+:([^\s/@'\"<>]+)@"),
)


@dataclass(frozen=True)
class _Rule:
    detector: str  # "detect-secrets/AWSKeyDetector", "builtin/private-key-block", "pattern/NAME"
    label: str  # what the replacement says: [REDACTED:<label>]
    regex: re.Pattern
    #: literals one of which every match contains (None: no such literal, always run);
    #: lower-case when the regex ignores case
    needles: tuple[str, ...] | None = None
    ignore_case: bool = False


def _rule(detector: str, label: str, regex: re.Pattern) -> _Rule:
    return _Rule(detector, label, regex, needles(regex), bool(regex.flags & re.IGNORECASE))


def needles(regex: re.Pattern) -> tuple[str, ...] | None:
    """Literal strings one of which any match must contain, read off the parsed regex: the
    longest run of literals in its top-level sequence, or a literal prefix joined with the
    leading literals of each branch of an alternation. A substring test (memchr-fast) then
    skips the regex for the great majority of strings, which hold none of them: Python's
    `re` scans ~10 MB/s per pattern, and a policy has dozens. None when no literal of at
    least 2 characters is required."""
    import re._constants as c
    import re._parser as sre

    def flat(seq) -> list:
        out = []
        for op, av in seq:  # a group is matched in place: its items join the sequence
            if op is c.SUBPATTERN:
                out.extend(flat(av[-1].data))
            else:
                out.append((op, av))
        return out

    items = flat(sre.parse(regex.pattern, regex.flags).data)
    best: tuple[str, ...] | None = None

    def consider(cands: tuple[str, ...]) -> None:
        nonlocal best
        if cands and all(cands) and (best is None or min(map(len, cands)) > min(map(len, best))):
            best = cands

    def lead(seq) -> str:
        out = ""
        for op, av in seq:
            if op is not c.LITERAL:
                break
            out += chr(av)
        return out

    run = ""
    for op, av in [*items, (None, None)]:
        if op is c.LITERAL:
            run += chr(av)
            continue
        if op is c.BRANCH:
            consider(tuple(run + lead(flat(b)) for b in av[1]))
        consider((run,) if run else ())
        run = ""
    if best is None or min(map(len, best)) < 2:
        return None
    return tuple(n.lower() for n in best) if regex.flags & re.IGNORECASE else best


def _detect_secrets_rules(names: Iterable[str]) -> list[_Rule]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    by_name = {cls.__name__: cls for cls in get_mapping_from_secret_type_to_class().values()}
    rules = []
    for name in names:
        cls = by_name.get(name)
        if cls is None:
            raise InvalidInput(f"unknown detect-secrets plugin {name!r} in \"redaction.detectors\""
                               f" (known: {', '.join(sorted(by_name))})")
        if not issubclass(cls, RegexBasedDetector):
            raise InvalidInput(f"detect-secrets plugin {name} is not pattern-based; ctxstore "
                               f"runs only RegexBasedDetector plugins")
        for rx in cls.denylist:
            rules.append(_rule(f"detect-secrets/{name}", cls.secret_type, rx))
    return rules


def detect_secrets_available() -> bool:
    try:
        import detect_secrets  # noqa: F401
    except ImportError:
        return False
    return True


class Redactor:
    """Compiled rules of one policy. Thread-compatible; keeps a memo of recent answers
    (transcripts repeat the same strings: an event's preview and its message's text)."""

    MEMO_LIMIT = 50_000

    def __init__(self, policy: RedactionPolicy | None = None) -> None:
        self.policy = policy or RedactionPolicy()
        rules: list[_Rule] = []
        if self.policy.builtin_patterns:
            rules += [_rule(f"builtin/{n}", label, re.compile(rx))
                      for n, label, rx in BUILTIN_PATTERNS]
        rules += [_rule(f"pattern/{n}", n, re.compile(rx)) for n, rx in self.policy.patterns]
        self.engines: tuple[str, ...] = ("builtin",) if self.policy.builtin_patterns else ()
        if self.policy.patterns:
            self.engines += ("patterns",)
        if self.policy.detectors and detect_secrets_available():
            rules += _detect_secrets_rules(self.policy.detectors)
            self.engines += ("detect-secrets",)
        self.rules = tuple(rules)
        self._memo: dict[str, tuple[str, tuple[str, ...]]] = {}

    def redact(self, text: str) -> tuple[str, tuple[str, ...]]:
        """(redacted text, detectors that fired — one entry per replacement)."""
        if len(text) < 8:
            return text, ()
        hit = self._memo.get(text)
        if hit is not None:
            return hit
        out, fired = text, []
        lowered = None
        for rule in self.rules:
            if rule.needles is not None:
                if rule.ignore_case:
                    if lowered is None:
                        lowered = out.lower()
                    hay = lowered
                else:
                    hay = out
                for n in rule.needles:
                    if n in hay:
                        break
                else:
                    continue
            if rule.regex.search(out) is None:
                continue
            out, n = _replace(rule, out)
            if n:
                fired.extend([rule.detector] * n)
                lowered = None
        result = (out, tuple(fired))
        if len(self._memo) >= self.MEMO_LIMIT:
            self._memo.clear()
        self._memo[text] = result
        return result

    def redact_bytes(self, data: bytes) -> tuple[bytes, tuple[str, ...]]:
        """Bytes that are UTF-8 text are redacted; other bytes are returned as they are
        (`None` detectors) — callers report binary content they could not scan."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data, ()
        new, fired = self.redact(text)
        return (new.encode("utf-8") if fired else data), fired


def _replace(rule: _Rule, text: str) -> tuple[str, int]:
    parts: list[str] = []
    pos = n = 0
    marker = f"[REDACTED:{rule.label}]"
    for m in rule.regex.finditer(text):
        start, end = m.span()
        if m.re.groups:
            g = next((i for i in range(1, m.re.groups + 1) if m.group(i)), 0)
            if g and len(m.group(g)) >= MIN_GROUP and rule.detector != "builtin/private-key-block":
                start, end = m.span(g)
        if start < pos or end == start:
            continue
        parts.append(text[pos:start])
        parts.append(marker)
        pos = end
        n += 1
    if not n:
        return text, 0
    parts.append(text[pos:])
    return "".join(parts), n


def summarize(fired: Iterable[str]) -> dict[str, int]:
    """{detector: count}, sorted by detector name."""
    out: dict[str, int] = {}
    for d in fired:
        out[d] = out.get(d, 0) + 1
    return dict(sorted(out.items()))
