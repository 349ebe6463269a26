"""Claude's ``goal_status`` marker: the one parser, and the newest marker of a transcript's tail.

Claude has its own transcript gate (docs/agent-facts.md, "Claude Code"): at UserPromptSubmit the newest session-level
``attachment.goal_status`` marker becomes the prompt's baseline, so historical markers cannot
label or cancel later ordinary turns. The synchronous hook reads at most :data:`TAIL_CAP` bytes
from the end of the file (``shared/bounded_read.py``: the cut first line and an unterminated last
line are never decoded). :func:`marker_of` is the only reader of a marker record and
:func:`marker_state` the only reading of its flags: the hook's baseline, the scanner's fold and
the gate all go through them. Standard library only.
"""

from __future__ import annotations

from donebell.shared.bounded_read import parse_record, read_tail

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

TAIL_CAP = 1 << 20
_NEEDLE = b"goal_status"
#: What a baseline keeps of a marker: identity (uuid, timestamp, byte offset) and its state.
_MARKER_FIELDS = ("met", "failed", "sentinel")


def newest_goal_marker(path: str | None, cap: int = TAIL_CAP) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """``(marker, scan)``: the newest main-thread goal_status marker in the tail, and how we looked.

    ``scan["status"]``: ``found``; ``none`` (the whole file was read, no marker); ``not-in-window``
    (only the last ``cap`` bytes were read; an older marker may exist); ``missing`` (no such
    regular file yet: Claude creates the transcript on its first flush); ``no-path``.
    """
    if not path:
        return None, {"status": "no-path"}
    try:
        tail = read_tail(path, cap)
    except OSError:
        return None, {"status": "missing"}
    window, offset, size = tail.data, tail.offset, tail.size
    start, end = tail.complete_region()
    scan: dict[str, Any] = {"status": "none" if offset == 0 else "not-in-window", "size": size, "window": len(window)}
    pos = end
    while pos > start:
        hit = window.rfind(_NEEDLE, start, pos)
        if hit < 0:
            break
        newline = window.rfind(b"\n", start, hit)
        line_start = start if newline < 0 else newline + 1
        line_end = window.find(b"\n", hit, end)
        marker = _parse_marker(window[line_start:line_end])
        if marker is not None:
            marker["offset"] = offset + line_start
            scan["status"] = "found"
            return marker, scan
        pos = line_start
    return None, scan


def _parse_marker(line: bytes) -> dict[str, Any] | None:
    record = parse_record(line)
    return None if record is None else marker_of(record)


def marker_of(record: dict[str, Any]) -> dict[str, Any] | None:
    """The baseline form of a main-chain ``attachment.goal_status`` record, else None."""
    if record.get("type") != "attachment" or record.get("isSidechain") is True:
        return None
    attachment = record.get("attachment")
    if not isinstance(attachment, dict) or attachment.get("type") != "goal_status":
        return None
    marker: dict[str, Any] = {
        "uuid": record.get("uuid") if isinstance(record.get("uuid"), str) else None,
        "timestamp": record.get("timestamp") if isinstance(record.get("timestamp"), str) else None,
    }
    for name in _MARKER_FIELDS:
        marker[name] = attachment.get(name) is True
    return marker


def marker_state(marker: dict[str, Any]) -> str:
    """``cleared`` | ``met`` | ``failed`` | ``active`` of a marker in :func:`marker_of`'s form.

    Claude's own rule for which goal to restore: met with the sentinel is a goal the user cleared.
    """
    met, failed, sentinel = (marker.get(name) is True for name in _MARKER_FIELDS)
    if met and sentinel:
        return "cleared"
    if met:
        return "met"
    if failed:
        return "failed"
    return "active"
