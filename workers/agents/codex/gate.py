"""The Codex logical-idle gate (strict / balanced): is this root turn's task really over?

A ladder of checks (:mod:`.ladder`; docs/gate.md, "Codex decision order"); the first that does
not pass decides:

1. identity            thread id + turn id; a Stop without turn_id is merged into the rollout turn
                       nearest its capture (``merged``), else unknown evidence (weak identity)
2. root                known subagent -> suppress ``subagent``; unknown -> unknown evidence
3. completion          our turn's task_complete / turn_aborted in the root rollout; an open
                       turn (a Stop arrives before task_complete) waits; silent -> unknown;
                       a later task_started -> suppress ``superseded`` (coalescing)
4. goal                ``goals_1.thread_goals.status == 'active'`` holds (goal_aware)
5. technical-turn      legacy/watcher-only candidate without a person's message, or without
                       a final message on a "done" turn -> suppress ``technical-turn``
6. descendants         recursive; running/partial/invalid child holds until orphaned
7. quiet-window        rollout unchanged for ``idle_grace_seconds``

Unknown evidence waits on the probe schedule (:mod:`.probe_schedule`) until
``idle_probe_grace_seconds`` after the gate first saw the candidate; then strict suppresses
``unverifiable`` and balanced treats that check as passed (recorded as an assumption). Invalid
evidence (malformed / invalid UTF-8 / partial record after our completion) is never promoted:
after the grace it is ``unverifiable`` in both modes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from donebell.shared.keys import event_key
from donebell.workers.agents.codex import db, weak_match
from donebell.workers.agents.codex.descendants import ChildState, descendants, tails
from donebell.workers.agents.codex.rollout import Tail
from donebell.workers.agents.codex.sources import Homes, classify_thread, find_rollout, goal_status, homes
from donebell.workers.agents.codex.turn_view import TurnView, needs_more, view
from donebell.workers.kit import ladder
from donebell.workers.kit.gate_context import GateContext
from donebell.workers.kit.ladder import SKIP_REST, Evaluation, Outcome
from donebell.workers.kit.probe_schedule import attempts_of, capped, unknown_delay
from donebell.workers.kit.verdict import Verdict
from donebell.workers.kit.weak_merge import MERGED

#: A Stop candidate's task_complete follows the hook by tens of milliseconds: look again soon.
COMPLETION_RETRY_SECONDS = 0.25
GOAL_RETRY_SECONDS = 5.0
ORPHANED_GOAL = "active-orphaned"
#: Goal states that end a task: its last (often message-less) continuation turn is not "technical".
TERMINAL_GOALS = ("complete", "paused", "blocked", "usage_limited", "budget_limited", ORPHANED_GOAL)
#: Which holding child decides first: bad evidence, then work in progress, then missing evidence.
_CHILD_ORDER = {"invalid": 0, "running": 1, "partial": 1, "unknown": 2}


class CodexEvaluation(Evaluation):
    """The evidence the Codex checks gather about one candidate, in ladder order."""

    def __init__(self, record: dict[str, Any], ctx: GateContext) -> None:
        super().__init__(record, ctx)
        self.homes: Homes = homes(record)
        self.passed: list[str] = []  # each passed check's evidence, in order (the promotion's text)
        self.thread_id = ""
        self.turn_id = ""
        self.rollout: Path | None = None
        self.tail: Tail | None = None
        self.turn: TurnView | None = None
        self.goal: str | None = None
        self.children: list[ChildState] = []
        self.observed: dict[str, Any] = {}

    def promote(self) -> Verdict:
        tail, turn = self.tail, self.turn
        fields = _outcome_fields(turn, self.record)
        fields["root_thread_id"] = self.record.get("root_thread_id") or self.record.get("thread_id")
        reason = "balanced" if self.assumed else "idle"
        evidence = "; ".join(self.passed + [f"assumed after grace: {a}" for a in self.assumed])
        fingerprint = (
            tail.path if tail else None,
            tail.size if tail else None,
            tail.mtime_ns if tail else None,
            self.goal,
            tuple((c.thread_id, c.state) for c in self.children),
        )
        return Verdict.promote(
            reason,
            evidence,
            fields=fields,
            fingerprint=fingerprint,
            probe_update={"observed": self.observed} if self.observed else {},
        )


def _outcome_fields(turn: TurnView | None, record: dict[str, Any]) -> dict[str, Any]:
    """``outcome``, ``error``, ``completed_at`` and ``stats`` of the completed turn."""
    fields: dict[str, Any] = {}
    if turn is None or turn.terminal is None:
        if record.get("error"):
            fields["outcome"] = "failed"
        return fields
    term = turn.terminal
    if term.kind == "aborted":
        fields["outcome"] = "stopped"
    elif term.error:
        fields["outcome"], fields["error"] = "failed", term.error[:200]
    else:
        fields["outcome"] = "done"
    if term.at:
        fields["completed_at"] = term.at
    if turn.stats:
        fields["stats"] = {k: turn.stats[k] for k in ("duration_ms", "total_tokens")}
    return fields


# --- the checks, in ladder order -------------------------------------------------------------


def check_identity(ev: CodexEvaluation) -> Outcome:
    """Thread and turn id; a Stop without turn_id is merged into its rollout turn (weak_match.py)."""
    thread_id, turn_id = ev.record.get("thread_id"), ev.record.get("turn_id")
    if isinstance(thread_id, str) and thread_id and isinstance(turn_id, str) and turn_id:
        ev.thread_id, ev.turn_id = thread_id, turn_id
        return None
    if isinstance(thread_id, str) and thread_id:
        merged = _merge_weak_turn(ev, thread_id)
        if merged is not None:
            return merged
    return ev.unknown("no-ids", "candidate lacks a thread id or turn id (weak identity)") or SKIP_REST


def _merge_weak_turn(ev: CodexEvaluation, thread_id: str) -> Verdict | None:
    rollout = find_rollout(ev.ctx, ev.homes, thread_id, ev.record.get("transcript_path"))
    tail = tails(ev.ctx).get(str(rollout), need=weak_match.enough) if rollout is not None else None
    if rollout is None or tail is None or tail.error:
        return None
    ev.watch.append(rollout)
    created = ev.record.get("created_at")
    turn = weak_match.nearest_turn(tail.items, float(created) if isinstance(created, (int, float)) else ev.now)
    if turn is None or turn.turn_id is None:
        return None
    key = event_key("codex", thread_id, turn.turn_id)
    return Verdict.suppress(
        MERGED,
        f"no turn_id: matched to turn {turn.turn_id} ({turn.kind} nearest the capture); merged into {key}",
        fields={"turn_id": turn.turn_id, "merged_into": key},
    )


def check_root(ev: CodexEvaluation) -> Outcome:
    """The thread is a root: a known subagent never notifies on its own."""
    ev.rollout = find_rollout(ev.ctx, ev.homes, ev.thread_id, ev.record.get("transcript_path"))
    if ev.rollout is not None:
        ev.watch.append(ev.rollout)
    ident = classify_thread(ev.ctx, ev.homes, ev.thread_id, ev.rollout)
    if ident.classification == "subagent":
        return Verdict.suppress("subagent", ident.evidence)
    if ident.classification == "unknown" and ev.record.get("classification") != "root":
        waiting = ev.unknown("classification-unknown", ident.evidence)
        if waiting is not None:
            return waiting
    ev.passed.append(f"root ({ident.evidence or 'classified root at capture'})")
    return None


def check_completion(ev: CodexEvaluation) -> Outcome:
    """Our turn's terminal record in the root rollout, and no later turn after it."""
    if ev.rollout is None:
        return ev.unknown("rollout-missing", "root rollout not found")
    turn_id = ev.turn_id
    tail = tails(ev.ctx).get(str(ev.rollout), need=lambda items: not needs_more(items, turn_id))
    if tail is None or tail.error:
        return ev.unknown("rollout-unreadable", (tail.error if tail else None) or "rollout vanished")
    ev.tail = tail
    turn = view(tail.items, turn_id, at_file_start=tail.at_file_start)
    later = turn.later_started
    if turn.terminal is None:
        return _without_terminal(ev, tail, turn)
    if later is not None:
        return Verdict.suppress("superseded", f"later turn {later.turn_id} {later.kind} after {turn.terminal.kind}")
    if turn.malformed_after:
        return ev.invalid(
            "malformed-after-completion", f"{turn.malformed_after} malformed line(s) after the completion"
        )
    if tail.partial:
        if ev.now - tail.mtime < ev.settings.idle_probe_grace_seconds:
            return ev.busy(
                "partial-record", "a record after the completion is still being written", COMPLETION_RETRY_SECONDS
            )
        return ev.invalid("partial-record", "a half-written record after the completion")
    ev.passed.append(f"{turn.terminal.kind} {turn_id}")
    ev.turn = turn
    return None


def _without_terminal(ev: CodexEvaluation, tail: Tail, turn: TurnView) -> Outcome:
    """Our turn has no terminal record (yet): open, superseded, or not in the rollout at all."""
    later, turn_id = turn.later_started, ev.turn_id
    if turn.started is not None and later is not None:
        return Verdict.suppress("superseded", f"turn never completed; later turn {later.turn_id} started")
    if turn.started is not None:
        silent = ev.now - tail.mtime
        if silent < ev.settings.idle_probe_grace_seconds:
            return ev.busy(
                "awaiting-completion", f"turn {turn_id} open (task_started, no terminal yet)", COMPLETION_RETRY_SECONDS
            )
        return ev.unknown("turn-open-silent", f"turn {turn_id} has no terminal record; rollout silent {silent:.0f}s")
    if later is not None and not tail.at_file_start:
        return Verdict.suppress(
            "superseded",
            f"turn not in the last {tail.complete_end - tail.scanned_from} bytes; later turn {later.turn_id}",
        )
    return ev.unknown("completion-not-found", f"no record of turn {turn_id} in the rollout")


def check_goal(ev: CodexEvaluation) -> Outcome:
    """An active Codex goal holds the task open (goal_aware), unless its thread went silent."""
    if not ev.settings.goal_aware:
        return None
    status, evidence = goal_status(ev.ctx, ev.homes, ev.thread_id)
    for name in (db.GOALS_DB, db.GOALS_DB + "-wal"):
        ev.watch.append(ev.homes.sqlite_home / name)
    if status == "active":
        # Nobody drives a goal whose thread has been silent this long (e.g. `codex exec` exited
        # and aborted the continuation turn): the same liveness bound as an orphaned child.
        orphan_at = None
        if ev.tail is not None:
            orphan_at = ev.tail.mtime + ev.settings.subagent_orphan_seconds
            if ev.now >= orphan_at:
                ev.passed.append(f"goal active but the thread silent {ev.now - ev.tail.mtime:.0f}s: orphaned goal")
                ev.goal = ORPHANED_GOAL
                return None
        # The rollout and goals_1.sqlite-wal are watched; polling only backs that up, so it backs off
        # (to the orphan time at the latest, when the goal stops holding).
        until = orphan_at - ev.now if orphan_at is not None else float("inf")
        poll = unknown_delay(attempts_of(ev.record), ev.settings.unknown_retry_max_seconds, until=until)
        return ev.busy("goal-active", evidence, max(GOAL_RETRY_SECONDS, poll), thread=ev.thread_id, orphan_at=orphan_at)
    ev.passed.append(evidence)
    ev.goal = status
    return None


def check_technical_turn(ev: CodexEvaluation) -> Outcome:
    """A watcher-only turn without a person's message (or a final answer) is not a task."""
    turn = ev.turn
    sources = set(ev.record.get("sources") or [ev.record.get("source")])
    if turn is None or not ev.settings.suppress_technical_turns or "codex-stop" in sources:
        return None
    if ev.goal in TERMINAL_GOALS:
        ev.passed.append("terminal goal state: not a technical turn")
        return None
    if not turn.markers_complete:
        ev.passed.append("turn start beyond the scan window: technical-turn check skipped")
        return None
    done = turn.terminal is not None and turn.terminal.kind == "complete" and not turn.terminal.error
    if not turn.user or (done and not turn.agent):
        missing = "a user message" if not turn.user else "a final assistant message"
        return Verdict.suppress("technical-turn", f"{sorted(sources)} candidate without {missing}")
    ev.passed.append("user and final messages present")
    return None


def check_descendants(ev: CodexEvaluation) -> Outcome:
    """No child (recursively) still running, writing, or with unreadable evidence."""
    children, notes = descendants(ev.ctx, ev.homes, ev.thread_id)
    ev.children = children
    for child in children:
        if child.path is not None:
            ev.watch.append(child.path)
    holding = sorted((c for c in children if c.state in _CHILD_ORDER), key=lambda c: _CHILD_ORDER[c.state])
    for child in holding:
        waiting = _child_wait(ev, child)
        if waiting is not None:
            return waiting
    orphaned = [c.thread_id for c in children if c.state == "orphaned"]
    ev.passed.append(
        f"{len(children)} descendant(s), none active"
        + (f" ({len(orphaned)} orphaned)" if orphaned else "")
        + "".join(f"; {n}" for n in notes)
    )
    return None


def _child_wait(ev: CodexEvaluation, child: ChildState) -> Verdict | None:
    """How one holding child holds its root (None: balanced assumed its unknown evidence)."""
    detail = {"child": child.thread_id, "state": child.state, "since": child.since, "orphan_at": child.deadline}
    evidence = f"child {child.thread_id}: {child.evidence}"
    # Until the orphan timeout at most: then the child no longer holds.
    until_orphan = capped(max(0.05, (child.deadline or ev.now) - ev.now), ev.settings.unknown_retry_max_seconds)
    if child.state == "invalid":
        return ev.busy("child-invalid", evidence, until_orphan, **detail)
    if child.state == "partial":
        return ev.busy("child-partial", evidence, COMPLETION_RETRY_SECONDS * 4, **detail)
    if child.state == "running":
        return ev.busy("child-running", evidence, until_orphan, **detail)
    return ev.unknown("child-unknown", evidence, **detail)


def check_quiet_window(ev: CodexEvaluation) -> Outcome:
    """The root rollout unchanged for ``idle_grace_seconds`` (by mtime, or by our own observation)."""
    tail = ev.tail
    if tail is None:
        return None
    grace = ev.settings.idle_grace_seconds
    seen = (ev.record.get("probe") or {}).get("observed") or {}
    same = seen.get("size") == tail.size and seen.get("mtime_ns") == tail.mtime_ns
    since = float(seen.get("since") or ev.now) if same else ev.now
    if since > ev.now:  # the clock went back: restart the window in the new clock's terms
        since = ev.now
    observed = {"size": tail.size, "mtime_ns": tail.mtime_ns, "since": since}
    quiet_for = max(ev.now - tail.mtime, ev.now - since)
    if quiet_for < grace:
        verdict = ev.busy("quiet-window", f"rollout changed {quiet_for:.2f}s ago (< {grace}s)", grace - quiet_for)
        verdict.probe_update = {"observed": observed}
        return verdict
    ev.passed.append(f"rollout quiet {quiet_for:.1f}s")
    ev.observed = observed
    return None


LADDER: ladder.Ladder[CodexEvaluation] = (
    ("identity", check_identity),
    ("root", check_root),
    ("completion", check_completion),
    ("goal", check_goal),
    ("technical-turn", check_technical_turn),
    ("descendants", check_descendants),
    ("quiet-window", check_quiet_window),
)


def evaluate(record: dict[str, Any], ctx: GateContext) -> Verdict:
    """Decide one Codex candidate (strict or balanced; ``off`` never gets here)."""
    return ladder.run(LADDER, CodexEvaluation(record, ctx))
