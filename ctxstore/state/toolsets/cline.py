"""cline's tools (being written)."""

from __future__ import annotations
