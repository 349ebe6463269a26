"""The Claude Code transcript gate: prompt epochs, goal markers, the transcript tail.

A ladder of checks (:mod:`.ladder`; docs/gate.md, "Claude decision order"); the first that
decides ends the evaluation:

1. identity            session_id + prompt_id, else unknown evidence (weak identity)
2. prompt-epoch        for an epoch-anchored candidate (``claude_epoch > 0``) the session record
                       ``claude/<sha256(session_id)>.json`` must exist and parse; missing /
                       corrupt / incompatible -> suppress ``claude-session-unverifiable``; a newer
                       epoch or another current prompt -> suppress ``superseded``
3. stop-failure        terminal by definition: promote as ``failed`` (after the epoch check);
                       so is a SessionEnd/scanner candidate whose transcript ends in an API error
4. settle              wait :data:`SETTLE_SECONDS` after the (latest) Stop: the transcript lags
                       the hook by ~100 ms and a goal's final marker is written after Stop returns
5. transcript          the transcript tail can be read (missing: lag, then unknown evidence)
6. goal-markers        newest main-chain ``goal_status`` inside our prompt, unless it is the
                       prompt's baseline: met+sentinel -> remove without receipt (``goal-cleared``),
                       met -> promote, failed -> promote as ``failed`` ("goal blocked"),
                       met:false -> hold (goal active); no new marker + active baseline -> hold
7. newer-prompt        a later prompt's user record (e.g. a background task's
                       ``<task-notification>``) -> suppress ``superseded``
8. turn-status         docs/agent-facts.md, "Turn status": the newest recognized record; "working" on our own prompt means
                       the transcript lags the authoritative Stop: wait up to :data:`LAG_SECONDS`
9. quiet-window        transcript unchanged for ``idle_grace_seconds``
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from donebell.shared.keys import claude_session_key
from donebell.shared.statedir import CLAUDE, InvalidRecord
from donebell.workers.agents.claude.outcome import transcript_index
from donebell.workers.agents.claude.prompt_view import TranscriptView, apply_index, baseline_state, index_cap, read_view
from donebell.workers.kit import ladder
from donebell.workers.kit.gate_context import GateContext
from donebell.workers.kit.ladder import SKIP_REST, Evaluation, Outcome
from donebell.workers.kit.verdict import Verdict

SETTLE_SECONDS = 0.5
LAG_SECONDS = 3.0
LAG_RETRY_SECONDS = 0.25
GOAL_RETRY_SECONDS = 5.0
#: Candidates derived from the transcript when no Stop/StopFailure hook reported (docs/hooks.md).
RECOVERY_SOURCES = frozenset({"claude-sessionend", "claude-transcript"})


class ClaudeEvaluation(Evaluation):
    """The evidence the Claude checks gather about one candidate, in ladder order."""

    #: The transcript settles within hundreds of milliseconds: a shorter poll only spins.
    min_wait = 0.05

    def __init__(self, record: dict[str, Any], ctx: GateContext) -> None:
        super().__init__(record, ctx)
        transcript = record.get("transcript_path")
        self.transcript = transcript if isinstance(transcript, str) and transcript else None
        if self.transcript is not None:
            self.watch.append(Path(self.transcript))
        self.session_id = ""
        self.prompt_id = ""
        self.sources = set(record.get("sources") or [record.get("source")])
        self.stopped_at = stop_moment(record, ctx.now)
        self.view: TranscriptView | None = None
        self.goal: str | None = None  # "met" | "failed" | "active-orphaned" from the goal markers

    def promote(self) -> Verdict:
        view, goal = self.view, self.goal
        if view is None:  # balanced assumed the transcript itself: nothing more to say
            return self.promote_with(None, "")
        status = f"turn status {'done' if view.status.is_done else view.status.event} ({view.status.key})"
        if goal == "met":
            return self.promote_with(view, f"goal met; {status}", goal="met")
        if goal == "active-orphaned":
            silent = self.now - view.mtime
            return self.promote_with(
                view, f"goal still active but the session silent {silent:.0f}s; {status}", goal=goal
            )
        if goal == "failed":
            evidence = f"goal failed (impossible); {status}"
            return self.promote_with(view, evidence, outcome="failed", error="goal blocked", goal="blocked")
        authority = "" if view.status.is_done else "; transcript never showed the end: the Stop is authoritative"
        return self.promote_with(view, status + authority)

    def promote_with(
        self,
        view: TranscriptView | None,
        evidence: str,
        *,
        outcome: str | None = None,
        error: str | None = None,
        goal: str | None = None,
    ) -> Verdict:
        fields: dict[str, Any] = {"outcome": outcome or self.record.get("outcome") or "done"}
        if error:
            fields["error"] = error
        if goal:
            fields["goal"] = goal
        reason = "balanced" if self.assumed else "idle"
        assumed = [f"assumed after grace: {a}" for a in self.assumed]
        text = "; ".join([evidence, *assumed] if evidence else assumed)
        fingerprint = (view.size, view.mtime, view.marker.offset if view.marker else None) if view else ()
        return Verdict.promote(reason, text, fields=fields, fingerprint=fingerprint)

    def since_stop(self) -> float:
        """Seconds since the latest Stop, or since the transcript last changed if that is later."""
        changed = self.view.mtime if self.view is not None else self.stopped_at
        return self.now - max(self.stopped_at, changed)


#: A hook's ``signal_at`` older than its record's last update by more than this belongs to an
#: earlier signal (another source updated the record since): the update time counts instead.
SIGNAL_TO_WRITE_SECONDS = 1.0


def stop_moment(record: dict[str, Any], default: float) -> float:
    """When the latest Stop happened: the moment Claude ran the hook (``signal_at``, the hook
    process's start) when the record's last update was that hook's write, else the update time.
    The hook writes ~15-25 ms after it starts (interpreter and imports), and the transcript's
    last write comes in between, so counting the settle from the write put the whole start-up
    after every quiet window (docs/benchmarks.md, end-to-end latency)."""
    updated = record.get("updated_at") or record.get("created_at")
    written = float(updated) if isinstance(updated, (int, float)) else default
    signal_at = record.get("signal_at")
    if isinstance(signal_at, (int, float)) and 0.0 <= written - signal_at <= SIGNAL_TO_WRITE_SECONDS:
        return float(signal_at)
    return written


# --- the checks, in ladder order -------------------------------------------------------------


def check_identity(ev: ClaudeEvaluation) -> Outcome:
    """Session id and prompt id name the candidate's prompt."""
    session_id, prompt_id = ev.record.get("session_id"), ev.record.get("prompt_id")
    if isinstance(session_id, str) and session_id and isinstance(prompt_id, str) and prompt_id:
        ev.session_id, ev.prompt_id = session_id, prompt_id
        return None
    return ev.unknown("no-ids", "candidate lacks a session id or prompt id (weak identity)") or SKIP_REST


def check_prompt_epoch(ev: ClaudeEvaluation) -> Outcome:
    """An epoch-anchored candidate's prompt is still the session's current one."""
    epoch = ev.record.get("claude_epoch")
    if not isinstance(epoch, int) or epoch <= 0:
        return None  # epoch-zero compatibility candidate: current-session behaviour
    key = claude_session_key(ev.session_id)
    try:
        session = ev.ctx.state.read(CLAUDE, key)
    except InvalidRecord as exc:
        ev.ctx.state.dead_letter_invalid(CLAUDE, f"{key}.json", str(exc))
        return Verdict.suppress("claude-session-unverifiable", f"session record corrupt: {exc}")
    if session is None:
        return Verdict.suppress("claude-session-unverifiable", "session record missing at the commit boundary")
    current = session.get("epoch")
    if session.get("session_id") != ev.session_id or not isinstance(current, int):
        return Verdict.suppress("claude-session-unverifiable", "session record incompatible (session id / epoch)")
    if current > epoch:
        return Verdict.suppress(
            "superseded", f"prompt epoch {epoch} < session epoch {current} (prompt {session.get('prompt_id')})"
        )
    if current < epoch or session.get("prompt_id") != ev.prompt_id:
        return Verdict.suppress(
            "claude-session-unverifiable", f"session epoch {current} / prompt do not match candidate epoch {epoch}"
        )
    return None


def check_stop_failure(ev: ClaudeEvaluation) -> Outcome:
    """A StopFailure, or an API-error record found in the transcript, ends the task by definition."""
    if "claude-stopfailure" in ev.sources:
        return ev.promote_with(None, "StopFailure: terminal by definition", outcome="failed")
    if ev.record.get("outcome") != "failed" or not ev.sources & RECOVERY_SOURCES:
        return None
    # The transcript's isApiErrorMessage record, read by SessionEnd or the scanner: the same fact.
    since = ev.now - float(ev.record.get("updated_at") or ev.now)
    if ev.sources == {"claude-sessionend"} and since < SETTLE_SECONDS:
        # In -p the StopFailure hook races SessionEnd: let its richer payload merge first.
        return ev.busy("stopfailure-race", "SessionEnd came first; a StopFailure may follow", SETTLE_SECONDS - since)
    return ev.promote_with(None, "API error record in the transcript: terminal", outcome="failed")


def check_settle(ev: ClaudeEvaluation) -> Outcome:
    """Give the transcript time to catch up with the Stop hook."""
    since = ev.now - ev.stopped_at
    # A recovery candidate was written after the transcript had been quiet: nothing to settle.
    if since < SETTLE_SECONDS and not ev.sources <= RECOVERY_SOURCES:
        return ev.busy_until(
            "transcript-settling", "waiting for the transcript to catch up with the Stop", SETTLE_SECONDS - since
        )
    return None


def check_transcript(ev: ClaudeEvaluation) -> Outcome:
    """Read the transcript tail from our prompt on (through the scanner's index when it has one)."""
    if ev.transcript is None:
        return ev.unknown("no-transcript", "candidate has no transcript path") or SKIP_REST
    index = transcript_index(ev.ctx.state, ev.transcript)
    view = read_view(ev.transcript, ev.prompt_id, index_cap(index, ev.prompt_id, _size(ev.transcript)))
    if index is not None:
        apply_index(view, index, ev.prompt_id)
    if not view.exists or view.error:
        if ev.now - ev.stopped_at < LAG_SECONDS:
            return ev.busy("transcript-lag", "transcript not written yet", LAG_RETRY_SECONDS)
        return ev.unknown("transcript-missing", view.error or "transcript file missing") or SKIP_REST
    ev.view = view
    return None


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def check_goal_markers(ev: ClaudeEvaluation) -> Outcome:
    """The newest goal_status marker of our prompt (or an active baseline) decides or labels."""
    view = ev.view
    if view is None:
        return None
    baseline = ev.record.get("goal_baseline")
    marker = view.marker
    if marker is not None and not marker.same_as(baseline):
        if marker.state == "cleared":
            return Verdict.remove("goal-cleared", "goal_status met+sentinel: the user cleared the goal")
        if marker.state == "active":
            return _goal_wait(ev, view, "goal_status met:false after the prompt")
        ev.goal = marker.state  # "met" | "failed"
        return None
    if baseline_state(baseline) == "active":
        # Anchored to an active goal: only a different terminal marker proves finality.
        return _goal_wait(ev, view, "prompt began with an active goal and no newer marker")
    return None


def _goal_wait(ev: ClaudeEvaluation, view: TranscriptView, evidence: str) -> Outcome:
    """Hold for an active goal, unless the session has been silent for the orphan bound."""
    orphan_at = view.mtime + ev.settings.subagent_orphan_seconds
    if ev.now >= orphan_at:
        ev.goal = "active-orphaned"  # nobody drives it any more: the same liveness bound as a child
        return None
    return ev.busy("goal-active", evidence, GOAL_RETRY_SECONDS, orphan_at=orphan_at)


def check_newer_prompt(ev: ClaudeEvaluation) -> Outcome:
    """A later prompt in the transcript makes this one obsolete."""
    if ev.view is not None and ev.view.newer_prompt is not None:
        return Verdict.suppress("superseded", f"later prompt {ev.view.newer_prompt} in the transcript")
    return None


def check_turn_status(ev: ClaudeEvaluation) -> Outcome:
    """The transcript shows our prompt ended (or it lags an authoritative Stop)."""
    view = ev.view
    if view is None:
        return None
    lagging = ev.since_stop() < LAG_SECONDS
    if not view.reached_prompt:
        if lagging:
            return ev.busy("transcript-lag", "our prompt is not in the transcript yet", LAG_RETRY_SECONDS)
        return ev.unknown("prompt-not-in-transcript", f"no user record of prompt {ev.prompt_id} in the tail")
    if view.status.is_done or ev.goal is not None:
        return None
    if lagging:
        evidence = f"newest record is {view.status.event}: the transcript lags the Stop"
        return ev.busy("transcript-lag", evidence, LAG_RETRY_SECONDS)
    if view.status_meta:
        # A Stop hook blocked and the same prompt goes on; its next Stop refreshes this record.
        evidence = "newest record is a meta user record (Stop hook feedback)"
        return ev.busy("turn-continuing", evidence, GOAL_RETRY_SECONDS)
    return None


def check_quiet_window(ev: ClaudeEvaluation) -> Outcome:
    """The transcript unchanged for ``idle_grace_seconds``."""
    return None if ev.view is None else ev.quiet_window(ev.view.mtime, "transcript")


LADDER: ladder.Ladder[ClaudeEvaluation] = (
    ("identity", check_identity),
    ("prompt-epoch", check_prompt_epoch),
    ("stop-failure", check_stop_failure),
    ("settle", check_settle),
    ("transcript", check_transcript),
    ("goal-markers", check_goal_markers),
    ("newer-prompt", check_newer_prompt),
    ("turn-status", check_turn_status),
    ("quiet-window", check_quiet_window),
)


def evaluate(record: dict[str, Any], ctx: GateContext) -> Verdict:
    """Decide one Claude candidate (strict or balanced; ``off`` never gets here)."""
    return ladder.run(LADDER, ClaudeEvaluation(record, ctx))
