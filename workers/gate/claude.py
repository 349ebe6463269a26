"""The Claude Code transcript gate: prompt epochs, goal markers, the transcript tail.

Checks, in order (docs/gate.md):

1. identity            session_id + prompt_id, else unknown evidence (weak identity)
2. prompt epoch        for an epoch-anchored candidate (``claude_epoch > 0``) the session record
                       ``claude/<sha256(session_id)>.json`` must exist and parse; missing /
                       corrupt / incompatible -> suppress ``claude-session-unverifiable``; a newer
                       epoch or another current prompt -> suppress ``superseded``
3. StopFailure         terminal by definition: promote as ``failed`` (after the epoch check);
                       so is a SessionEnd/scanner candidate whose transcript ends in an API error
4. settle              wait :data:`SETTLE_SECONDS` after the (latest) Stop: the transcript lags
                       the hook by ~100 ms and a goal's final marker is written after Stop returns
5. goal markers        newest main-chain ``goal_status`` inside our prompt, unless it is the
                       prompt's baseline: met+sentinel -> remove without receipt (``goal-cleared``),
                       met -> promote, failed -> promote as ``failed`` ("goal blocked"),
                       met:false -> hold (goal active); no new marker + active baseline -> hold
6. newer prompt        a later prompt's user record (e.g. a background task's
                       ``<task-notification>``) -> suppress ``superseded``
7. turn status         docs/agent-facts.md, "Turn status": the newest recognized record; "working" on our own prompt means
                       the transcript lags the authoritative Stop: wait up to :data:`LAG_SECONDS`
8. quiet window        transcript unchanged for ``idle_grace_seconds``
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from donebell.shared.keys import claude_session_key
from donebell.shared.statedir import InvalidRecord
from donebell.workers.gate.claude_transcript import TranscriptView, apply_index, baseline_state, index_cap, read_view
from donebell.workers.gate.commit import RETRY_BASE_SECONDS, first_seen
from donebell.workers.gate.context import GateContext
from donebell.workers.gate.verdict import Verdict
from donebell.workers.hooks.claude_outcome import transcript_index

SETTLE_SECONDS = 0.5
LAG_SECONDS = 3.0
GOAL_RETRY_SECONDS = 5.0
#: Candidates derived from the transcript when no Stop/StopFailure hook reported (docs/hooks.md).
RECOVERY_SOURCES = frozenset({"claude-sessionend", "claude-transcript"})


def _wait(reason: str, evidence: str, kind: Any, retry_in: float, watch: list[Any], **detail: Any) -> Verdict:
    return Verdict.wait(
        reason, evidence, kind=kind, retry_in=max(0.05, retry_in), watch=watch, detail={"reason": reason, **detail}
    )


def evaluate(record: dict[str, Any], ctx: GateContext) -> Verdict:
    """Decide one Claude candidate (strict or balanced; ``off`` never gets here)."""
    settings, now = ctx.settings, ctx.now
    deadline = first_seen(record, now) + settings.idle_probe_grace_seconds
    session_id, prompt_id = record.get("session_id"), record.get("prompt_id")
    transcript = record.get("transcript_path")
    watch = [Path(transcript)] if isinstance(transcript, str) and transcript else []
    assumed: list[str] = []

    def unknown(reason: str, evidence: str) -> Verdict | None:
        if now < deadline:
            attempts = int((record.get("probe") or {}).get("attempts") or 0)
            retry = min(
                RETRY_BASE_SECONDS * 2 ** min(attempts, 20), settings.unknown_retry_max_seconds or 60.0, deadline - now
            )
            return _wait(reason, evidence, "unknown", retry, watch, grace_deadline=deadline)
        if settings.idle_detection_mode == "strict":
            return Verdict.suppress("unverifiable", f"{reason}: {evidence}; unresolved after the probe grace")
        assumed.append(f"{reason}: {evidence}")
        return None

    if not (isinstance(session_id, str) and session_id and isinstance(prompt_id, str) and prompt_id):
        return unknown("no-ids", "candidate lacks a session id or prompt id (weak identity)") or _promote(
            record, None, assumed, ""
        )

    blocked = _check_epoch(record, ctx, session_id, prompt_id)
    if blocked is not None:
        return blocked
    sources = set(record.get("sources") or [record.get("source")])
    if "claude-stopfailure" in sources:
        return _promote(record, None, assumed, "StopFailure: terminal by definition", outcome="failed")
    if record.get("outcome") == "failed" and sources & RECOVERY_SOURCES:
        # The transcript's isApiErrorMessage record, read by SessionEnd or the scanner: the same fact.
        since = now - float(record.get("updated_at") or now)
        if sources == {"claude-sessionend"} and since < SETTLE_SECONDS:
            # In -p the StopFailure hook races SessionEnd: let its richer payload merge first.
            return _wait(
                "stopfailure-race",
                "SessionEnd came first; a StopFailure may follow",
                "busy",
                SETTLE_SECONDS - since,
                watch,
            )
        return _promote(record, None, assumed, "API error record in the transcript: terminal", outcome="failed")

    stopped_at = float(record.get("updated_at") or record.get("created_at") or now)
    # A recovery candidate was written after the transcript had been quiet: nothing to settle.
    if now - stopped_at < SETTLE_SECONDS and not sources <= RECOVERY_SOURCES:
        return _wait(
            "transcript-settling",
            "waiting for the transcript to catch up with the Stop",
            "busy",
            SETTLE_SECONDS - (now - stopped_at),
            watch,
        )

    if not isinstance(transcript, str) or not transcript:
        return unknown("no-transcript", "candidate has no transcript path") or _promote(record, None, assumed, "")
    index = transcript_index(ctx.state, transcript)
    view = read_view(transcript, prompt_id, index_cap(index, prompt_id, _size(transcript)))
    if index is not None:
        apply_index(view, index, prompt_id)
    if not view.exists or view.error:
        if now - stopped_at < LAG_SECONDS:
            return _wait("transcript-lag", "transcript not written yet", "busy", 0.25, watch)
        return unknown("transcript-missing", view.error or "transcript file missing") or _promote(
            record, None, assumed, ""
        )

    goal = _check_goal(record, view, settings.subagent_orphan_seconds, now, watch)
    if isinstance(goal, Verdict):
        return goal
    if view.newer_prompt is not None:
        return Verdict.suppress("superseded", f"later prompt {view.newer_prompt} in the transcript")
    if not view.reached_prompt:
        if now - max(stopped_at, view.mtime) < LAG_SECONDS:
            return _wait("transcript-lag", "our prompt is not in the transcript yet", "busy", 0.25, watch)
        v = unknown("prompt-not-in-transcript", f"no user record of prompt {prompt_id} in the tail")
        if v is not None:
            return v
    elif not view.status.is_done and goal is None:
        if now - max(stopped_at, view.mtime) < LAG_SECONDS:
            return _wait(
                "transcript-lag",
                f"newest record is {view.status.event}: the transcript lags the Stop",
                "busy",
                0.25,
                watch,
            )
        if view.status_meta:
            # A Stop hook blocked and the same prompt goes on; its next Stop refreshes this record.
            return _wait(
                "turn-continuing",
                "newest record is a meta user record (Stop hook feedback)",
                "busy",
                GOAL_RETRY_SECONDS,
                watch,
            )
    # An mtime in the future means the clock went back after the write: that write is older
    # than the jump, so the transcript counts as quiet rather than busy for the jump's length.
    quiet_for = now - view.mtime if view.mtime <= now + 1.0 else settings.idle_grace_seconds
    if quiet_for < settings.idle_grace_seconds:
        return _wait(
            "quiet-window",
            f"transcript changed {quiet_for:.2f}s ago",
            "busy",
            settings.idle_grace_seconds - quiet_for,
            watch,
        )
    status = f"turn status {'done' if view.status.is_done else view.status.event} ({view.status.key})"
    if goal == "met":
        return _promote(record, view, assumed, f"goal met; {status}", goal="met")
    if goal == "active-orphaned":
        silent = now - view.mtime
        return _promote(
            record, view, assumed, f"goal still active but the session silent {silent:.0f}s; {status}", goal=goal
        )
    if goal == "failed":
        return _promote(
            record,
            view,
            assumed,
            f"goal failed (impossible); {status}",
            outcome="failed",
            error="goal blocked",
            goal="blocked",
        )
    authority = "" if view.status.is_done else "; transcript never showed the end: the Stop is authoritative"
    return _promote(record, view, assumed, status + authority)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _check_epoch(record: dict[str, Any], ctx: GateContext, session_id: str, prompt_id: str) -> Verdict | None:
    epoch = record.get("claude_epoch")
    if not isinstance(epoch, int) or epoch <= 0:
        return None  # epoch-zero compatibility candidate: current-session behaviour
    key = claude_session_key(session_id)
    try:
        session = ctx.state.read("claude", key)
    except InvalidRecord as exc:
        ctx.state.dead_letter_invalid("claude", f"{key}.json", str(exc))
        return Verdict.suppress("claude-session-unverifiable", f"session record corrupt: {exc}")
    if session is None:
        return Verdict.suppress("claude-session-unverifiable", "session record missing at the commit boundary")
    current = session.get("epoch")
    if session.get("session_id") != session_id or not isinstance(current, int):
        return Verdict.suppress("claude-session-unverifiable", "session record incompatible (session id / epoch)")
    if current > epoch:
        return Verdict.suppress(
            "superseded", f"prompt epoch {epoch} < session epoch {current} (prompt {session.get('prompt_id')})"
        )
    if current < epoch or session.get("prompt_id") != prompt_id:
        return Verdict.suppress(
            "claude-session-unverifiable", f"session epoch {current} / prompt do not match candidate epoch {epoch}"
        )
    return None


def _check_goal(
    record: dict[str, Any], view: TranscriptView, orphan: float, now: float, watch: list[Any]
) -> Verdict | str | None:
    """A verdict that ends evaluation, or the goal state to label the promotion with."""
    baseline = record.get("goal_baseline")
    marker = view.marker
    if marker is not None and not marker.same_as(baseline):
        state = marker.state
        if state == "cleared":
            return Verdict.remove("goal-cleared", "goal_status met+sentinel: the user cleared the goal")
        if state == "active":
            return _goal_wait("goal_status met:false after the prompt", view, orphan, now, watch)
        return state  # "met" | "failed"
    if baseline_state(baseline) == "active":
        # Anchored to an active goal: only a different terminal marker proves finality.
        return _goal_wait("prompt began with an active goal and no newer marker", view, orphan, now, watch)
    return None


def _goal_wait(evidence: str, view: TranscriptView, orphan: float, now: float, watch: list[Any]) -> Verdict | str:
    """Hold for an active goal, unless the session has been silent for the orphan bound."""
    orphan_at = view.mtime + orphan
    if now >= orphan_at:
        return "active-orphaned"  # nobody drives it any more: the same liveness bound as a child
    return _wait("goal-active", evidence, "busy", GOAL_RETRY_SECONDS, watch, orphan_at=orphan_at)


def _promote(
    record: dict[str, Any],
    view: TranscriptView | None,
    assumed: list[str],
    evidence: str,
    *,
    outcome: str | None = None,
    error: str | None = None,
    goal: str | None = None,
) -> Verdict:
    fields: dict[str, Any] = {"outcome": outcome or record.get("outcome") or "done"}
    if error:
        fields["error"] = error
    if goal:
        fields["goal"] = goal
    reason = "balanced" if assumed else "idle"
    text = "; ".join(
        [evidence] + [f"assumed after grace: {a}" for a in assumed]
        if evidence
        else [f"assumed after grace: {a}" for a in assumed]
    )
    fingerprint = (view.size, view.mtime, view.marker.offset if view and view.marker else None) if view else ()
    return Verdict.promote(reason, text, fields=fields, fingerprint=fingerprint)
