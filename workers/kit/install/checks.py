"""One doctor finding, and the readers every agent's doctor checks share."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from donebell.workers.kit.install.managed import is_managed_handler

OK, WARN, FAIL, UNKNOWN, SKIP = "ok", "warn", "fail", "unknown", "skip"
_VERSION = re.compile(r"(?<![\d.])(\d+)\.(\d+)\.(\d+)(?!\.?\d)")


@dataclass
class Check:
    """One doctor finding; ``fail`` means notifications are blocked until ``next_step`` is done."""

    name: str
    status: str
    summary: str
    next_step: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def program_missing(argv: list[Any] | None) -> str | None:
    if not argv:
        return None
    program = argv[0]
    if (
        isinstance(program, str)
        and os.path.isabs(program)
        and not (os.path.isfile(program) and os.access(program, os.X_OK))
    ):
        return program
    return None


def read_json(path: Path) -> tuple[Any, str | None]:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig")), None
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"{path}: unreadable or invalid JSON ({exc})"


def managed_handlers(doc: Any, event: str, args: tuple[str, ...]) -> list[dict[str, Any]]:
    groups = doc.get("hooks", {}).get(event) if isinstance(doc, dict) and isinstance(doc.get("hooks"), dict) else None
    found = []
    for group in groups if isinstance(groups, list) else []:
        for handler in group.get("hooks", []) if isinstance(group, dict) else []:
            if is_managed_handler(handler, args):
                found.append(handler)
    return found


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``2.1.332 (Claude Code)`` / ``codex-cli 0.171.0`` -> (2, 1, 332); None without a version."""
    match = _VERSION.search(text)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None
