"""The Codex cloud task link a push opens (``include_task_link``)."""

from __future__ import annotations

import re
from typing import Any

TASK_URL = "https://chatgpt.com/codex/tasks/{}"
_CANONICAL_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def task_url(record: dict[str, Any]) -> str | None:
    """The link, only for a canonical (lowercase, hyphenated) UUID thread id."""
    thread = record.get("thread_id")
    return TASK_URL.format(thread) if isinstance(thread, str) and _CANONICAL_UUID.match(thread) else None
