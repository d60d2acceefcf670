"""Per-store settings in `.ctx/config.json`, replaced only through the lock-file helper."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import CorruptStore, InvalidInput, Unsupported
from .lockfile import write_file_atomically

FORMAT_VERSION = 1

DEFAULTS: dict[str, Any] = {
    "format": FORMAT_VERSION,
    "durability": "batch",  # always | batch | never
    "compression_level": 3,
    "artifact_threshold": 4096,  # tool outputs above this many bytes become artifacts
    "chunking": {"threshold": 1 << 20, "min": 64 << 10, "avg": 256 << 10, "max": 1 << 20},
}
DURABILITY = ("always", "batch", "never")


def load(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CorruptStore(f"{path} is missing: not a ctxstore directory?") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptStore(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise CorruptStore(f"{path} must hold a JSON object")
    if raw.get("format", FORMAT_VERSION) > FORMAT_VERSION:
        raise Unsupported(f"store format {raw['format']} is newer than this ctx supports "
                          f"({FORMAT_VERSION}); upgrade ctxstore")
    cfg = dict(DEFAULTS)
    cfg.update(raw)
    validate(cfg)
    return cfg


def validate(cfg: dict[str, Any]) -> None:
    if cfg.get("durability") not in DURABILITY:
        raise InvalidInput(f"durability must be one of {', '.join(DURABILITY)}, "
                           f"not {cfg.get('durability')!r}")


def save(path: Path, cfg: dict[str, Any]) -> None:
    validate(cfg)
    write_file_atomically(path, (json.dumps(cfg, indent=2, sort_keys=True) + "\n").encode())
