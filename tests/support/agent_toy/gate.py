"""The toy's gate: its log per session is its only evidence that a turn is over."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from donebell.workers.kit.verdict import Verdict

if TYPE_CHECKING:
    from donebell.workers.kit.gate_context import GateContext


def evaluate(record: dict[str, Any], ctx: GateContext) -> Verdict:
    """Promote once the toy's log has ``{"turn": <this turn>, "status": "done"}``; wait until then."""
    path = record.get("transcript_path")
    try:
        with open(str(path), encoding="utf-8") as log:
            lines = [json.loads(line) for line in log if line.strip()]
    except (OSError, ValueError) as exc:
        return Verdict.wait("toy-log-unreadable", f"{type(exc).__name__}", kind="unknown")
    done = any(line.get("turn") == record.get("turn_id") and line.get("status") == "done" for line in lines)
    if done:
        return Verdict.promote("toy-done", "the toy's log says the turn is done")
    return Verdict.wait("toy-busy", "the toy's log has no done line for the turn yet", retry_in=0.2)
