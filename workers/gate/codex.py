"""The Codex logical-idle gate (strict / balanced): is this root turn's task really over?

Checks, in order (docs/gate.md); the first that does not pass decides:

1. root classification       known subagent -> suppress ``subagent``; unknown -> unknown evidence
2. matching completion       our turn's task_complete / turn_aborted in the root rollout; an open
                             turn (a Stop arrives before task_complete) waits; silent -> unknown
3. no later open turn        a later task_started -> suppress ``superseded`` (coalescing)
4. goal not active           ``goals_1.thread_goals.status == 'active'`` holds (goal_aware)
5. technical turn            legacy/watcher-only candidate without a person's message, or without
                             a final message on a "done" turn -> suppress ``technical-turn``
6. no active descendants     recursive; running/partial/invalid child holds until orphaned
7. quiet window              rollout unchanged for ``idle_grace_seconds``

Unknown evidence waits with exponential retries until ``idle_probe_grace_seconds`` after the gate
first saw the candidate; then strict suppresses ``unverifiable`` and balanced treats that check as
passed (recorded as an assumption). Invalid evidence (malformed / invalid UTF-8 / partial record
after our completion) is never promoted: after the grace it is ``unverifiable`` in both modes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from donebell.shared import codex_db
from donebell.shared.keys import event_key
from donebell.workers.gate import weak_match
from donebell.workers.gate.codex_sources import Homes, classify_thread, find_rollout, goal_status, homes
from donebell.workers.gate.commit import RETRY_BASE_SECONDS, first_seen
from donebell.workers.gate.context import GateContext
from donebell.workers.gate.descendants import ChildState, descendants, tails
from donebell.workers.gate.rollout import Tail
from donebell.workers.gate.turn_view import TurnView, needs_more, view
from donebell.workers.gate.verdict import Verdict

#: A Stop candidate's task_complete follows the hook by tens of milliseconds: look again soon.
COMPLETION_RETRY_SECONDS = 0.25
GOAL_RETRY_SECONDS = 5.0
ORPHANED_GOAL = "active-orphaned"
#: Goal states that end a task: its last (often message-less) continuation turn is not "technical".
TERMINAL_GOALS = ("complete", "paused", "blocked", "usage_limited", "budget_limited", ORPHANED_GOAL)


class _Blocked(Exception):
    """Carries the verdict of the first check that did not pass."""

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict


class CodexGate:
    """One evaluation of one candidate (a fresh object per snapshot)."""

    def __init__(self, record: dict[str, Any], ctx: GateContext) -> None:
        self.record = record
        self.ctx = ctx
        self.settings = ctx.settings
        self.now = ctx.now
        self.first_seen = first_seen(record, ctx.now)
        self.deadline = self.first_seen + self.settings.idle_probe_grace_seconds
        self.assumed: list[str] = []
        self.passed: list[str] = []
        self.watch: list[Path] = []
        self.homes: Homes = homes(record)

    # --- outcomes of a check -----------------------------------------------------------

    def _retry_in(self, *, ignore_grace: bool = False) -> float:
        """Exponential from 0.5 s, capped by unknown_retry_max_seconds and (unless told) the grace end."""
        attempts = int((self.record.get("probe") or {}).get("attempts") or 0)
        exponential = float(RETRY_BASE_SECONDS * (2 ** min(attempts, 20)))
        cap = self.settings.unknown_retry_max_seconds or exponential
        until_grace = float("inf") if ignore_grace else max(0.0, self.deadline - self.now)
        return max(0.05, min(exponential, cap, until_grace))

    def unknown(self, reason: str, evidence: str, **detail: Any) -> None:
        """Unknown evidence: wait within the grace; then strict suppresses, balanced goes on."""
        if self.now < self.deadline:
            raise _Blocked(
                self._wait(reason, evidence, "unknown", self._retry_in(), grace_deadline=self.deadline, **detail)
            )
        if self.settings.idle_detection_mode == "strict":
            raise _Blocked(Verdict.suppress("unverifiable", f"{reason}: {evidence}; unresolved after the probe grace"))
        self.assumed.append(f"{reason}: {evidence}")

    def invalid(self, reason: str, evidence: str) -> None:
        """Malformed / half-written evidence: never promoted in strict or balanced."""
        if self.now < self.deadline:
            raise _Blocked(self._wait(reason, evidence, "invalid", self._retry_in(), grace_deadline=self.deadline))
        raise _Blocked(Verdict.suppress("unverifiable", f"{reason}: {evidence}; still invalid after the probe grace"))

    def busy(self, reason: str, evidence: str, retry_in: float, **detail: Any) -> None:
        raise _Blocked(self._wait(reason, evidence, "busy", retry_in, **detail))

    def _wait(self, reason: str, evidence: str, kind: Any, retry_in: float, **detail: Any) -> Verdict:
        return Verdict.wait(
            reason,
            evidence,
            kind=kind,
            retry_in=retry_in,
            watch=list(self.watch),
            detail={"reason": reason, **detail},
        )

    # --- the checks ---------------------------------------------------------------------

    def run(self) -> Verdict:
        try:
            return self._run()
        except _Blocked as blocked:
            return blocked.verdict

    def _run(self) -> Verdict:
        thread_id, turn_id = self.record.get("thread_id"), self.record.get("turn_id")
        if not (isinstance(thread_id, str) and thread_id and isinstance(turn_id, str) and turn_id):
            if isinstance(thread_id, str) and thread_id:
                self._check_weak_turn(thread_id)
            self.unknown("no-ids", "candidate lacks a thread id or turn id (weak identity)")
            return self._promote(None, None, None, {})
        rollout = find_rollout(self.ctx, self.homes, thread_id, self.record.get("transcript_path"))
        if rollout is not None:
            self.watch.append(rollout)
        root = self._check_root(thread_id, rollout)
        tail, turn = self._check_completion(rollout, turn_id)
        goal = self._check_goal(root, tail)
        if turn is not None:
            self._check_technical(turn, goal)
        children = self._check_descendants(root)
        observed = self._check_quiet(tail)
        return self._promote(tail, turn, goal, observed, children)

    def _check_weak_turn(self, thread_id: str) -> None:
        """A Stop without turn_id: merge it into the rollout turn nearest its capture (weak_match.py)."""
        rollout = find_rollout(self.ctx, self.homes, thread_id, self.record.get("transcript_path"))
        tail = tails(self.ctx).get(str(rollout), need=weak_match.enough) if rollout is not None else None
        if rollout is None or tail is None or tail.error:
            return
        self.watch.append(rollout)
        created = self.record.get("created_at")
        turn = weak_match.nearest_turn(tail.items, float(created) if isinstance(created, (int, float)) else self.now)
        if turn is None or turn.turn_id is None:
            return
        key = event_key("codex", thread_id, turn.turn_id)
        raise _Blocked(
            Verdict.suppress(
                weak_match.MERGED,
                f"no turn_id: matched to turn {turn.turn_id} ({turn.kind} nearest the capture); merged into {key}",
                fields={"turn_id": turn.turn_id, "merged_into": key},
            )
        )

    def _check_root(self, thread_id: str, rollout: Path | None) -> str:
        ident = classify_thread(self.ctx, self.homes, thread_id, rollout)
        if ident.classification == "subagent":
            raise _Blocked(Verdict.suppress("subagent", ident.evidence))
        if ident.classification == "unknown" and self.record.get("classification") != "root":
            self.unknown("classification-unknown", ident.evidence)
        self.passed.append(f"root ({ident.evidence or 'classified root at capture'})")
        return thread_id

    def _check_completion(self, rollout: Path | None, turn_id: str) -> tuple[Tail | None, TurnView | None]:
        if rollout is None:
            self.unknown("rollout-missing", "root rollout not found")
            return None, None
        tail = tails(self.ctx).get(str(rollout), need=lambda items: not needs_more(items, turn_id))
        if tail is None or tail.error:
            self.unknown("rollout-unreadable", (tail.error if tail else None) or "rollout vanished")
            return None, None
        turn = view(tail.items, turn_id, at_file_start=tail.at_file_start)
        later = turn.later_started
        if turn.terminal is None:
            if turn.started is not None and later is not None:
                raise _Blocked(
                    Verdict.suppress("superseded", f"turn never completed; later turn {later.turn_id} started")
                )
            if turn.started is not None:
                silent = self.now - tail.mtime
                if silent < self.settings.idle_probe_grace_seconds:
                    self.busy(
                        "awaiting-completion",
                        f"turn {turn_id} open (task_started, no terminal yet)",
                        COMPLETION_RETRY_SECONDS,
                    )
                self.unknown("turn-open-silent", f"turn {turn_id} has no terminal record; rollout silent {silent:.0f}s")
                return tail, None
            if later is not None and not tail.at_file_start:
                raise _Blocked(
                    Verdict.suppress(
                        "superseded",
                        f"turn not in the last {tail.complete_end - tail.scanned_from} bytes; later turn {later.turn_id}",
                    )
                )
            self.unknown("completion-not-found", f"no record of turn {turn_id} in the rollout")
            return tail, None
        if later is not None:
            raise _Blocked(
                Verdict.suppress("superseded", f"later turn {later.turn_id} {later.kind} after {turn.terminal.kind}")
            )
        if turn.malformed_after:
            self.invalid("malformed-after-completion", f"{turn.malformed_after} malformed line(s) after the completion")
        if tail.partial:
            if self.now - tail.mtime < self.settings.idle_probe_grace_seconds:
                self.busy(
                    "partial-record", "a record after the completion is still being written", COMPLETION_RETRY_SECONDS
                )
            self.invalid("partial-record", "a half-written record after the completion")
        self.passed.append(f"{turn.terminal.kind} {turn_id}")
        return tail, turn

    def _check_goal(self, root: str, tail: Tail | None) -> str | None:
        if not self.settings.goal_aware:
            return None
        status, evidence = goal_status(self.ctx, self.homes, root)
        for name in (codex_db.GOALS_DB, codex_db.GOALS_DB + "-wal"):
            self.watch.append(self.homes.sqlite_home / name)
        if status == "active":
            # Nobody drives a goal whose thread has been silent this long (e.g. `codex exec` exited
            # and aborted the continuation turn): the same liveness bound as an orphaned child.
            orphan_at = tail.mtime + self.settings.subagent_orphan_seconds if tail else None
            if orphan_at is not None and self.now >= orphan_at:
                self.passed.append(f"goal active but the thread silent {self.now - tail.mtime:.0f}s: orphaned goal")  # type: ignore[union-attr]
                return ORPHANED_GOAL
            # The rollout and goals_1.sqlite-wal are watched; polling only backs that up, so it backs off.
            retry = max(GOAL_RETRY_SECONDS, self._retry_in(ignore_grace=True))
            self.busy("goal-active", evidence, retry, thread=root, orphan_at=orphan_at)
        self.passed.append(evidence)
        return status

    def _check_technical(self, turn: TurnView, goal: str | None) -> None:
        sources = set(self.record.get("sources") or [self.record.get("source")])
        if not self.settings.suppress_technical_turns or "codex-stop" in sources:
            return
        if goal in TERMINAL_GOALS:
            self.passed.append("terminal goal state: not a technical turn")
            return
        if not turn.markers_complete:
            self.passed.append("turn start beyond the scan window: technical-turn check skipped")
            return
        done = turn.terminal is not None and turn.terminal.kind == "complete" and not turn.terminal.error
        if not turn.user or (done and not turn.agent):
            missing = "a user message" if not turn.user else "a final assistant message"
            raise _Blocked(Verdict.suppress("technical-turn", f"{sorted(sources)} candidate without {missing}"))
        self.passed.append("user and final messages present")

    def _check_descendants(self, root: str) -> list[ChildState]:
        children, notes = descendants(self.ctx, self.homes, root)
        for child in children:
            if child.path is not None:
                self.watch.append(child.path)
        order = {"invalid": 0, "running": 1, "partial": 1, "unknown": 2}
        holding = sorted((c for c in children if c.state in order), key=lambda c: order[c.state])
        for child in holding:
            detail = {"child": child.thread_id, "state": child.state, "since": child.since, "orphan_at": child.deadline}
            cap = self.settings.unknown_retry_max_seconds or 60.0
            until = max(0.05, (child.deadline or self.now) - self.now)
            if child.state == "invalid":
                self.busy("child-invalid", f"child {child.thread_id}: {child.evidence}", min(cap, until), **detail)
            if child.state in ("running", "partial"):
                retry = COMPLETION_RETRY_SECONDS * 4 if child.state == "partial" else min(cap, until)
                self.busy(f"child-{child.state}", f"child {child.thread_id}: {child.evidence}", retry, **detail)
            self.unknown("child-unknown", f"child {child.thread_id}: {child.evidence}", **detail)
        orphaned = [c.thread_id for c in children if c.state == "orphaned"]
        self.passed.append(
            f"{len(children)} descendant(s), none active"
            + (f" ({len(orphaned)} orphaned)" if orphaned else "")
            + "".join(f"; {n}" for n in notes)
        )
        return children

    def _check_quiet(self, tail: Tail | None) -> dict[str, Any]:
        if tail is None:
            return {}
        grace = self.settings.idle_grace_seconds
        seen = (self.record.get("probe") or {}).get("observed") or {}
        stat = {"size": tail.size, "mtime_ns": tail.mtime_ns}
        same = seen.get("size") == tail.size and seen.get("mtime_ns") == tail.mtime_ns
        since = float(seen.get("since") or self.now) if same else self.now
        if since > self.now:  # the clock went back: restart the window in the new clock's terms
            since = self.now
        observed = {**stat, "since": since}
        quiet_for = max(self.now - tail.mtime, self.now - since)
        if quiet_for < grace:
            verdict = self._wait(
                "quiet-window", f"rollout changed {quiet_for:.2f}s ago (< {grace}s)", "busy", grace - quiet_for
            )
            verdict.probe_update = {"observed": observed}
            raise _Blocked(verdict)
        self.passed.append(f"rollout quiet {quiet_for:.1f}s")
        return observed

    def _promote(
        self,
        tail: Tail | None,
        turn: TurnView | None,
        goal: str | None,
        observed: dict[str, Any],
        children: list[ChildState] | None = None,
    ) -> Verdict:
        fields: dict[str, Any] = {}
        if turn is not None and turn.terminal is not None:
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
        elif self.record.get("error"):
            fields["outcome"] = "failed"
        fields["root_thread_id"] = self.record.get("root_thread_id") or self.record.get("thread_id")
        reason = "balanced" if self.assumed else "idle"
        evidence = "; ".join(self.passed + [f"assumed after grace: {a}" for a in self.assumed])
        fingerprint = (
            tail.path if tail else None,
            tail.size if tail else None,
            tail.mtime_ns if tail else None,
            goal,
            tuple((c.thread_id, c.state) for c in children or []),
        )
        return Verdict.promote(
            reason,
            evidence,
            fields=fields,
            fingerprint=fingerprint,
            probe_update={"observed": observed} if observed else {},
        )


def evaluate(record: dict[str, Any], ctx: GateContext) -> Verdict:
    """Decide one Codex candidate (strict or balanced; ``off`` never gets here)."""
    return CodexGate(record, ctx).run()
