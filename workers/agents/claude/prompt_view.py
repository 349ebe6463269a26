"""What a Claude transcript's tail says about one prompt: goal markers, turn status, newer prompts.

One bounded reverse read (``bounded_read.reverse_lines``; memory: one chunk + one line) that stops
once it has passed the first user record of the candidate's prompt, or at :data:`SCAN_CAP`. When
the local scanner has indexed the transcript (its ``watch/claude/`` cursor), only the bytes after
the index are read and the prompt's start and goal marker come from it (:func:`apply_index`), so
a prompt or marker any distance back costs the same.
Sidechain records (a subagent's chain) never count; API-error envelopes are not completions.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from donebell.shared.bounded_read import reverse_lines
from donebell.workers.agents.claude.goal_status import marker_of, marker_state
from donebell.workers.agents.turn_status import UNKNOWN, TurnStatus, classify_claude, parse_line

SCAN_CAP = 16 << 20
INDEX_SLACK = 64 << 10  # read a little before the index's offset: its last line is then seen too


@dataclass
class Marker:
    """One ``attachment.goal_status`` record."""

    uuid: str | None
    offset: int
    met: bool
    failed: bool
    sentinel: bool

    @property
    def state(self) -> str:
        """``cleared`` | ``met`` | ``failed`` | ``active`` (``hooks.transcript.marker_state``)."""
        return marker_state({"met": self.met, "failed": self.failed, "sentinel": self.sentinel})

    def same_as(self, baseline: object) -> bool:
        """Is this the marker recorded as the prompt's baseline (uuid, else byte offset)?"""
        if not isinstance(baseline, dict):
            return False
        if self.uuid and baseline.get("uuid"):
            return bool(self.uuid == baseline.get("uuid"))
        return baseline.get("offset") == self.offset


def baseline_state(baseline: object) -> str | None:
    """The goal state the prompt started with (None: no goal marker at prompt time)."""
    return marker_state(baseline) if isinstance(baseline, dict) else None


@dataclass
class TranscriptView:
    """The facts the Claude gate needs from one transcript."""

    exists: bool
    size: int = 0
    mtime: float = 0.0
    marker: Marker | None = None  # newest main-chain goal_status marker inside our prompt (or later)
    status: TurnStatus = UNKNOWN  # seed-001 turn status (first recognized event, newest first)
    status_prompt: str | None = None  # promptId of the user record that decided "working"
    status_meta: bool = False  # that user record is isMeta (e.g. "Stop hook feedback": the turn goes on)
    newer_prompt: str | None = None  # a user record of another, later prompt
    reached_prompt: bool = False  # our prompt's user records were found (markers can be placed)
    error: str | None = None
    tail_prompt: str | None = None  # another prompt's user record in what was read (ours or not)
    tail_marker: Marker | None = None  # the newest marker in what was read
    read_bytes: int = 0  # how many bytes back from the end the reverse scan could read


def read_view(path: str, prompt_id: str | None, cap: int = SCAN_CAP) -> TranscriptView:
    """Scan ``path`` backward for ``prompt_id``'s evidence."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return TranscriptView(False)
    except OSError as exc:
        return TranscriptView(False, error=exc.strerror)
    out = TranscriptView(True, st.st_size, st.st_mtime)
    out.read_bytes = min(cap, st.st_size)
    status_found = False
    seen_own = False
    first_marker: Marker | None = None
    other_prompt: str | None = None
    try:
        for line, offset in reverse_lines(path, cap):
            obj = parse_line(line)
            if obj is None or obj.get("isSidechain") is True:
                continue
            if first_marker is None:
                first_marker = _marker(obj, offset)
            if not status_found:
                found = classify_claude(obj, line)
                if found is not None:
                    verdict, key, at, event = found
                    out.status = TurnStatus(verdict == "done", key, at, event)
                    status_found = True
                    if verdict == "working":
                        out.status_prompt = _str(obj.get("promptId"))
                        out.status_meta = obj.get("isMeta") is True
            if obj.get("type") != "user":
                continue
            pid = _str(obj.get("promptId"))
            if pid is not None and pid == prompt_id:
                seen_own = True
                # A marker newer than one of our prompt's user records belongs to our prompt (or later).
                if first_marker is not None and out.marker is None:
                    out.marker = first_marker
            elif seen_own:
                out.reached_prompt = True  # an older prompt: everything further back is history
                break
            elif pid is not None and other_prompt is None:
                other_prompt = pid
    except OSError as exc:
        out.error = exc.strerror
    if seen_own:
        out.reached_prompt = True
        out.newer_prompt = other_prompt  # seen before ours, so later than ours
    out.tail_prompt, out.tail_marker = other_prompt, first_marker
    return out


def index_cap(index: dict[str, Any] | None, prompt_id: str, size: int, cap: int = SCAN_CAP) -> int:
    """How far back to read when the scanner's index (its cursor) covers our prompt up to its offset."""
    if index is None or index["fold"].get("prompt_id") != prompt_id:
        return cap
    return min(cap, max(0, size - int(index["offset"])) + INDEX_SLACK)


def apply_index(view: TranscriptView, index: dict[str, Any], prompt_id: str) -> bool:
    """Fill in what lies before the bytes read from the index: our prompt's start, its marker."""
    fold = index["fold"]
    if view.reached_prompt or fold.get("prompt_id") != prompt_id or view.tail_prompt is not None:
        return False
    if int(index["offset"]) < view.size - view.read_bytes:
        return False  # a gap between the indexed bytes and the bytes read
    view.reached_prompt = True
    view.marker = view.tail_marker
    goal, start = fold.get("goal"), fold.get("prompt_offset")
    if view.marker is None and isinstance(goal, dict) and isinstance(start, int) and int(goal["offset"]) > start:
        view.marker = _from_dict(goal)
    return True


def _marker(obj: dict[str, Any], offset: int) -> Marker | None:
    found = marker_of(obj)
    return None if found is None else _from_dict({**found, "offset": offset})


def _from_dict(found: dict[str, Any]) -> Marker:
    """A marker in the baseline/index form (``hooks.transcript.marker_of`` plus ``offset``)."""
    return Marker(
        _str(found.get("uuid")),
        int(found["offset"]),
        found.get("met") is True,
        found.get("failed") is True,
        found.get("sentinel") is True,
    )


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
