"""A Claude Code session's title, for ``include_thread_title``: the transcript's own title records.

Claude Code appends its session titles to the transcript JSONL as top-level records: a title
the user gave (``/rename``: ``{"type": "custom-title", "customTitle": …}``), one it generated
(``{"type": "ai-title", "aiTitle": …}``) and conversation summaries (``{"type": "summary",
"summary": …}``). A user-given title wins; otherwise the newest generated title or summary. Only
the transcript's bounded tail and head are read (titles are short lines), at send time.
"""

from __future__ import annotations

import json
import os
from typing import Any

#: Bytes read from each end of the transcript.
READ_BYTES = 1 << 20
_FIELDS = {"custom-title": "customTitle", "ai-title": "aiTitle", "summary": "summary"}


def claude_title(record: dict[str, Any]) -> str | None:
    path = record.get("transcript_path")
    if not isinstance(path, str) or not path:
        return None
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(min(size, READ_BYTES))
            f.seek(max(len(head), size - READ_BYTES))
            tail = f.read(READ_BYTES)
    except OSError:
        return None
    custom: str | None = None
    generated: str | None = None
    for line in (head + b"\n" + tail).splitlines():
        if b'"type"' not in line or not any(name.encode() in line for name in _FIELDS):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict) or obj.get("type") not in _FIELDS:
            continue
        text = obj.get(_FIELDS[obj["type"]])
        if not isinstance(text, str) or not text.strip():
            continue
        if obj["type"] == "custom-title":
            custom = text.strip()
        else:
            generated = text.strip()
    return custom or generated
