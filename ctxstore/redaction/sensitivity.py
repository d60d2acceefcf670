"""The one notion of "sensitive" that artifacts, memories and bundle segments share.

An artifact says it with `Artifact.sensitive` (a bool); a memory or any other record may carry
a `sensitivity` (or `sensitive`) field, a bool or a level name; a candidate segment carries it
in `Segment.data["sensitive"]`. Whatever the spelling, `is_sensitive` decides, so a new record
type needs no new rule: levels at or above SENSITIVE_LEVELS' first entry are sensitive.

Sensitive material stays out of a bundle unless the session's redaction policy admits it
(`RedactionPolicy.admit_sensitive`, see policy.py); the bundle then names what it withheld.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Level names that count as sensitive (case-insensitive). Everything else — "", "public",
#: "normal", "internal", False, None — does not.
SENSITIVE_LEVELS = ("sensitive", "secret", "confidential", "private", "restricted", "high")


def is_sensitive(value: Any) -> bool:
    """True for `True`, a sensitive level name, or a record/map whose `sensitive`,
    `sensitivity` or `access_policy.sensitive` field says so."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() in SENSITIVE_LEVELS
    if isinstance(value, Mapping):
        for key in ("sensitive", "sensitivity"):
            if key in value and is_sensitive(value[key]):
                return True
        policy = value.get("access_policy") or value.get("accessPolicy")
        return isinstance(policy, Mapping) and is_sensitive(policy.get("sensitive"))
    for attr in ("sensitive", "sensitivity"):
        if hasattr(value, attr) and is_sensitive(getattr(value, attr)):
            return True
    return False
