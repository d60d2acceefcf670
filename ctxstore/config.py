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
COMPRESSION_LEVELS = (1, 22)  # zstd's levels, --ultra included


def load(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CorruptStore(f"{path} is missing: not a ctxstore directory?") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptStore(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise CorruptStore(f"{path} must hold a JSON object")
    fmt = raw.get("format", FORMAT_VERSION)
    if _is_int(fmt) and fmt > FORMAT_VERSION:
        raise Unsupported(f"store format {fmt} is newer than this ctx supports "
                          f"({FORMAT_VERSION}); upgrade ctxstore")
    cfg = dict(DEFAULTS)
    cfg.update(raw)
    problem = check(cfg)
    if problem:
        raise CorruptStore(f"{path}: {problem}")
    return cfg


def _is_int(value: Any) -> bool:
    return type(value) is int  # not bool, which JSON `true` would give


def check(cfg: dict[str, Any]) -> str | None:
    """What is wrong with the known settings in `cfg` (naming the key), or None.

    Unknown keys are left alone, so a newer ctx's settings do not break an older one."""
    fmt = cfg.get("format")
    if not _is_int(fmt) or fmt < 1:
        return f"\"format\" must be a positive integer, not {fmt!r}"
    if cfg.get("durability") not in DURABILITY:
        return (f"\"durability\" must be one of {', '.join(DURABILITY)}, "
                f"not {cfg.get('durability')!r}")
    level = cfg.get("compression_level")
    if not _is_int(level) or not COMPRESSION_LEVELS[0] <= level <= COMPRESSION_LEVELS[1]:
        return (f"\"compression_level\" must be an integer from {COMPRESSION_LEVELS[0]} to "
                f"{COMPRESSION_LEVELS[1]}, not {level!r}")
    threshold = cfg.get("artifact_threshold")
    if not _is_int(threshold) or threshold < 1:
        return f"\"artifact_threshold\" must be a positive integer, not {threshold!r}"
    chunking = cfg.get("chunking")
    if not isinstance(chunking, dict):
        return f"\"chunking\" must be an object, not {chunking!r}"
    sizes = {**DEFAULTS["chunking"], **chunking}
    for key in DEFAULTS["chunking"]:
        if not _is_int(sizes[key]) or sizes[key] < 1:
            return f"\"chunking.{key}\" must be a positive integer, not {sizes[key]!r}"
    if not sizes["min"] <= sizes["avg"] <= sizes["max"]:
        return (f"\"chunking\" must have min <= avg <= max, not {sizes['min']}, "
                f"{sizes['avg']}, {sizes['max']}")
    return None


def validate(cfg: dict[str, Any]) -> None:
    """InvalidInput naming the key, for settings given by the user (`ctx init --durability`)."""
    problem = check(cfg)
    if problem:
        raise InvalidInput(problem)


def save(path: Path, cfg: dict[str, Any]) -> None:
    validate(cfg)
    write_file_atomically(path, (json.dumps(cfg, indent=2, sort_keys=True) + "\n").encode())
