"""Redaction policy: which detectors run, which extra patterns apply, and where redaction is
the default (context builds, export, pack, push).

The policy is read from the store's `.ctx/config.json` key "redaction" and then the session's
config key "redaction" (the session's keys win):

    "redaction": {
      "on_build": true,          # redact every built context (default: true)
      "on_export": false,        # `ctx export` redacts unless --no-redact (default: false)
      "on_pack": false,          # `ctx pack` likewise
      "on_push": false,          # a git push likewise (ctxstore.redaction.redacted_view)
      "detectors": ["AWSKeyDetector", ...],   # detect-secrets plugins (default: DEFAULT_DETECTORS)
      "patterns": {"internal-token": "itk_[A-Za-z0-9]{32}"},  # name -> regex, added
      "builtin_patterns": true,  # ctxstore's own patterns (private key blocks, ...)
      "admit_sensitive": false   # sensitive artifacts/memories may enter bundles
    }

A mistake (unknown key, wrong type, a regex that does not compile) is one InvalidInput line
naming the key and where it was read from; nothing is ignored silently.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInput

#: detect-secrets plugins used by default: the pattern-based ones with few false positives.
#: Left out: the entropy detectors and KeywordDetector (they flag hashes, ids and code on real
#: transcripts), IPPublicDetector (an address is not a secret). Any plugin can be named.
DEFAULT_DETECTORS = (
    "AWSKeyDetector", "ArtifactoryDetector", "AzureStorageKeyDetector", "BasicAuthDetector",
    "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector", "JwtTokenDetector",
    "MailchimpDetector", "NpmDetector", "OpenAIDetector", "PrivateKeyDetector",
    "PypiTokenDetector", "SendGridDetector", "SlackDetector", "SquareOAuthDetector",
    "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
)

_BOOLS = ("on_build", "on_export", "on_pack", "on_push", "builtin_patterns", "admit_sensitive")
KEYS = (*_BOOLS, "detectors", "patterns")
#: The actions a policy can make redaction the default for.
ACTIONS = ("build", "export", "pack", "push")


@dataclass(frozen=True)
class RedactionPolicy:
    on_build: bool = True
    on_export: bool = False
    on_pack: bool = False
    on_push: bool = False
    detectors: tuple[str, ...] = DEFAULT_DETECTORS
    patterns: tuple[tuple[str, str], ...] = ()
    builtin_patterns: bool = True
    admit_sensitive: bool = False
    #: where the settings came from, for messages ("store config", "session 1a2b3c4d")
    origin: tuple[str, ...] = field(default=(), compare=False)

    def default_for(self, action: str) -> bool:
        """Whether ACTION (build, export, pack, push) redacts when not told either way."""
        if action not in ACTIONS:
            raise ValueError(f"unknown redaction action {action!r}")
        return bool(getattr(self, f"on_{action}"))

    def merged(self, settings: Any, where: str) -> RedactionPolicy:
        """This policy with SETTINGS (a "redaction" config map) applied over it."""
        if settings is None:
            return self
        if not isinstance(settings, Mapping):
            raise InvalidInput(f"{where}: \"redaction\" must be an object, not {settings!r}")
        changes: dict[str, Any] = {}
        for key, value in settings.items():
            if key not in KEYS:
                raise InvalidInput(f"{where}: unknown key \"redaction.{key}\" "
                                   f"(known: {', '.join(KEYS)})")
            if key in _BOOLS:
                if type(value) is not bool:
                    raise InvalidInput(f"{where}: \"redaction.{key}\" must be true or false, "
                                       f"not {value!r}")
                changes[key] = value
            elif key == "detectors":
                if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                    raise InvalidInput(f"{where}: \"redaction.detectors\" must be a list of "
                                       f"detect-secrets plugin names")
                changes[key] = tuple(value)
            else:
                changes[key] = self.patterns + _patterns(value, where)
        out = RedactionPolicy(**{**self.__dict__, **changes, "origin": (*self.origin, where)})
        return out


def _patterns(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{where}: \"redaction.patterns\" must map a name to a regex")
    out = []
    for name, rx in value.items():
        if not isinstance(rx, str) or not rx:
            raise InvalidInput(f"{where}: \"redaction.patterns.{name}\" must be a regex string")
        try:
            re.compile(rx)
        except re.error as exc:
            raise InvalidInput(f"{where}: \"redaction.patterns.{name}\" is not a valid regex "
                               f"({exc})") from None
        out.append((str(name), rx))
    return tuple(out)


def policy_for(repo, session: str | None = None) -> RedactionPolicy:
    """The policy in force for SESSION (or for the store when None)."""
    policy = RedactionPolicy().merged(repo.config.get("redaction"), "store config")
    if session:
        cfg = repo.session(session).config
        policy = policy.merged(cfg.get("redaction"), f"session {session[:12]} config")
    return policy


def choose(flag: bool | None, policy: RedactionPolicy, action: str) -> bool:
    """An explicit --redact/--no-redact wins; otherwise the policy's default for ACTION."""
    return policy.default_for(action) if flag is None else flag
