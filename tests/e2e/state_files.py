"""Read a donebell state dir as the e2e product sees it: its JSON records, a process's liveness,
and a one-line brief of a queue record for the diagnostics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

JSON = dict[str, Any]


def brief(rec: JSON) -> str:
    keep: JSON = {
        k: rec.get(k)
        for k in (
            "provider",
            "source",
            "sources",
            "outcome",
            "classification",
            "reason",
            "thread_id",
            "turn_id",
            "session_id",
            "prompt_id",
            "verdict",
        )
        if k in rec
    }
    probe = rec.get("probe") or {}
    history = probe.get("history") or rec.get("probe_history") or []
    keep["probe"] = [{k: h.get(k) for k in ("decision", "reason", "evidence", "count")} for h in history[-6:]]
    return json.dumps(keep)[:1500]


def read_json(path: Path) -> JSON | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def pid_alive(pid: int) -> bool:
    """A live, non-zombie process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
