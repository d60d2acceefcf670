"""The redaction policy applied to everything the MCP server returns.

What an agent reads through `ctx mcp` enters its context window exactly as a built context
does, so the same policy governs it (ctxstore/redaction/policy.py): the store's policy, the
session's keys winning, and `on_build` deciding whether secrets are replaced. A built context
is already redacted by the builder; every other answer (events, states, recalls, hits,
memories) is walked here, string by string, and each secret becomes `[REDACTED:<type>]`.
The secret itself is never returned, logged or counted by value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...redaction.detect import Redactor
from ...redaction.policy import RedactionPolicy, policy_for
from ...repo import Repository


class Scrubber:
    """Redacts JSON-shaped values under the policy of the session they come from."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self._policies: dict[str | None, RedactionPolicy] = {}
        self._redactors: dict[RedactionPolicy, Redactor] = {}
        self.replaced = 0  #: secrets replaced since the last `take_count`

    def policy(self, session: str | None) -> RedactionPolicy:
        p = self._policies.get(session)
        if p is None:
            p = self._policies[session] = policy_for(self.repo, session)
        return p

    def redactor(self, session: str | None) -> Redactor | None:
        policy = self.policy(session)
        if not policy.on_build:
            return None
        r = self._redactors.get(policy)
        if r is None:
            r = self._redactors[policy] = Redactor(policy)
        return r

    def scrub(self, value: Any, session: str | None) -> Any:
        """VALUE as plain JSON values (dicts, lists, str, numbers), every string (keys too)
        redacted by SESSION's policy."""
        return self._walk(value, self.redactor(session))

    def _walk(self, value: Any, redactor: Redactor | None) -> Any:
        if isinstance(value, str):
            if redactor is None:
                return value
            text, fired = redactor.redact(value)
            self.replaced += len(fired)
            return text
        if isinstance(value, Mapping):
            return {str(self._walk(k, redactor)): self._walk(v, redactor)
                    for k, v in value.items()}
        if isinstance(value, (list, tuple, set, frozenset)):
            return [self._walk(v, redactor) for v in value]
        if isinstance(value, bytes):
            return value.hex()
        if hasattr(value, "to_dict"):
            return self._walk(value.to_dict(), redactor)
        return value

    def take_count(self) -> int:
        """Secrets replaced since the previous call (what a tool result reports)."""
        n, self.replaced = self.replaced, 0
        return n
