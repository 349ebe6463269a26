"""Applying a gate verdict to the state directory, revision-safely.

Every change happens under the key's mutation lock after re-reading the pending record: if its
``revision`` differs from the snapshot the decision was made on, new evidence arrived (a hook
merged into it) and the decision is dropped; the next pass re-evaluates. Promotion additionally
re-runs the whole evaluation on a *second fresh snapshot* inside the lock and promotes only if it
still says ``promote`` with the same evidence fingerprint (design.md "Promote").

A pass's promotions are made durable together (:class:`Promotions`, a group commit): the outbox
record is staged under the lock right after the second snapshot; then one flush covers every
staged record, each is linked into ``outbox/`` under its lock again if its ``revision`` is still
the one the second snapshot saw, one flush of ``outbox/`` makes the links durable, and only then
are the pending copies removed. Two flushes for a batch instead of four per promotion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, cast

from donebell.shared import records
from donebell.shared.statedir import OUTBOX, PENDING, SUPPRESSED, GroupCommit, InvalidRecord, StateDir
from donebell.workers.kit import probe_schedule
from donebell.workers.kit.probe_schedule import first_seen
from donebell.workers.kit.verdict import Verdict
from donebell.workers.kit.weak_merge import MERGED, merge_into

if TYPE_CHECKING:
    from donebell.shared.record_types import OutboxRecord, ReceiptReason

Applied = Literal["promoted", "staged", "suppressed", "removed", "waiting", "raced", "gone"]

HISTORY_LIMIT = 50


def record_decision(record: dict[str, Any], verdict: Verdict, now: float) -> dict[str, Any]:
    """``record`` with ``verdict`` appended to ``probe.history`` (repeats fold into one entry)."""
    probe = dict(record.get("probe") or {})
    history = list(probe.get("history") or [])
    entry: dict[str, Any] = {
        "at": round(now, 3),
        "decision": verdict.action,
        "reason": verdict.reason,
        "evidence": verdict.evidence[:500],
    }
    last = history[-1] if history else None
    if last and (last.get("decision"), last.get("reason"), last.get("evidence")) == (
        verdict.action,
        verdict.reason,
        verdict.evidence,
    ):
        # The same wait seen again: keep the first time, count the repeats, note the latest.
        last = {**last, "last_at": entry["at"], "count": int(last.get("count") or 1) + 1}
        history[-1] = last
    else:
        history.append(entry)
    probe["history"] = history[-HISTORY_LIMIT:]
    probe.update(verdict.probe_update)
    probe["revision_seen"] = record.get("revision")  # new evidence (a merge) makes it due at once
    probe["waiting_for"] = verdict.detail if verdict.action == "wait" else None
    probe["attempts"] = int(probe.get("attempts") or 0) + 1
    probe.setdefault("first_seen_at", first_seen(record, now))
    out = dict(record)
    out["probe"] = probe
    return out


def next_probe_delay(record: dict[str, Any], verdict: Verdict, *, retry_max: float) -> float:
    """Seconds until the next probe: the verdict's hint, else the probe schedule; within ``retry_max``."""
    if verdict.retry_in is not None:
        return probe_schedule.capped(verdict.retry_in, retry_max)
    return probe_schedule.unknown_delay(probe_schedule.attempts_of(record), retry_max)


def _reread(state: StateDir, key: str, revision: object) -> dict[str, Any] | None | Literal["raced"]:
    try:
        current = state.read(PENDING, key)
    except InvalidRecord as exc:
        state.dead_letter_invalid(PENDING, f"{key}.json", str(exc))
        return None
    if current is None:
        return None
    if current.get("revision") != revision:
        return "raced"
    return current


def apply(
    state: StateDir,
    snapshot: dict[str, Any],
    verdict: Verdict,
    now: float,
    *,
    retry_max: float,
    recheck: Callable[[dict[str, Any]], Verdict],
    promotions: Promotions | None = None,
) -> tuple[Applied, Verdict]:
    """Apply ``verdict`` (made on ``snapshot``); returns what happened and the verdict applied.

    With ``promotions`` a promotion is only staged (``"staged"``): :meth:`Promotions.commit`
    makes it happen, or finds it raced.
    """
    key = snapshot["key"]
    if verdict.action == "suppress" and verdict.reason == MERGED:
        merge_into(state, snapshot, verdict.fields)  # the real key first, under its own lock
    with state.mutation_lock(key):
        current = _reread(state, key, snapshot.get("revision"))
        if current is None:
            return "gone", verdict
        if current == "raced":
            return "raced", verdict
        if verdict.action == "promote":
            fresh = recheck(current)  # the second fresh snapshot, inside the lock
            if fresh.action != "promote" or fresh.fingerprint != verdict.fingerprint:
                if fresh.action == "promote":
                    fresh = Verdict.wait("changed", "evidence changed between snapshots", retry_in=0.0)
                verdict = fresh
            else:
                verdict = fresh
            if promotions is not None and verdict.action == "promote":
                promotions.stage(current, _outbox_record(current, verdict, now), verdict)
                return "staged", verdict
        return _apply_locked(state, current, verdict, now, retry_max), verdict


def _outbox_record(current: dict[str, Any], verdict: Verdict, now: float) -> OutboxRecord:
    """The ``outbox/`` record a promotion of ``current`` creates."""
    promoted = record_decision(current, verdict, now)
    promoted["probe"] = {**promoted["probe"], "next_probe_at": None}
    promoted.update(verdict.fields)
    return records.to_outbox(promoted, verdict=verdict.reason)


class Promotions:
    """A pass's promotions, made durable together (group commit; see the module docstring)."""

    #: Promotions per commit: bounds the open temp files and the work a crash may repeat.
    LIMIT = 64

    def __init__(self, state: StateDir) -> None:
        self.state = state
        self._batch: GroupCommit | None = None
        self._staged: list[tuple[str, object, Verdict]] = []  # key, revision seen, verdict

    def full(self) -> bool:
        return len(self._staged) >= self.LIMIT

    def stage(self, current: dict[str, Any], outbox_record: OutboxRecord, verdict: Verdict) -> None:
        """Called under the key's lock, right after the second snapshot said ``promote``."""
        if self._batch is None:
            self._batch = self.state.group_commit(OUTBOX)
        self._batch.stage(outbox_record)
        self._staged.append((current["key"], current.get("revision"), verdict))

    def commit(self) -> tuple[int, int]:
        """Make the staged promotions happen; returns (promoted, raced: new evidence since)."""
        batch, staged = self._batch, self._staged
        self._batch, self._staged = None, []
        if batch is None:
            return 0, 0
        try:
            batch.flush()
            linked = []
            for key, revision, verdict in staged:
                with self.state.mutation_lock(key):
                    if isinstance(_reread(self.state, key, revision), dict):
                        batch.link(key)  # an existing outbox record wins, as create() does
                        linked.append((key, verdict))
                    else:
                        batch.discard(key)  # merged meanwhile (judged again at once) or gone
            batch.sync()  # the outbox records are durable: only now may their pending copies go
            for key, _ in linked:
                with self.state.mutation_lock(key):
                    self.state.remove(PENDING, key, sync=False)
            if linked:
                self.state.sync_folder(PENDING)
        finally:
            batch.close()
        self.state.log_lines(
            [
                ("info", "promoted", {"key": key, "verdict": verdict.reason, "evidence": verdict.evidence[:200]})
                for key, verdict in linked
            ]
        )
        return len(linked), len(staged) - len(linked)


def _apply_locked(state: StateDir, current: dict[str, Any], verdict: Verdict, now: float, retry_max: float) -> Applied:
    key = current["key"]
    decided = record_decision(current, verdict, now)
    if verdict.action == "promote":
        state.create(OUTBOX, _outbox_record(current, verdict, now))
        state.remove(PENDING, key)
        state.log("info", "promoted", key=key, verdict=verdict.reason, evidence=verdict.evidence[:200])
        return "promoted"
    if verdict.action == "suppress":
        state.finish(
            PENDING,
            SUPPRESSED,
            records.new_receipt(
                decided,
                status="suppressed",
                # Verdict.suppress takes a ReceiptReason only; one rebuilt from a remote gate
                # worker's answer (remote.from_wire) is checked by new_receipt at run time.
                reason=cast("ReceiptReason", verdict.reason),
                candidate_created_at=current.get("created_at"),
            ),
        )
        state.log("info", "suppressed", key=key, reason=verdict.reason, evidence=verdict.evidence[:200])
        return "suppressed"
    if verdict.action == "remove":
        state.remove(PENDING, key)
        state.log("info", verdict.reason, key=key, evidence=verdict.evidence[:200])
        return "removed"
    delay = next_probe_delay(current, verdict, retry_max=retry_max)
    decided["probe"] = {
        **decided["probe"],
        # Not rounded: a probe woken a fraction of a millisecond before a quiet window ends finds
        # it not over yet, and the one after it waits out the delivery role's pass gap.
        "next_probe_at": now + delay,
        "wait_kind": verdict.wait_kind,
        "watch": [str(p) for p in verdict.watch][:32],
    }
    state.replace(PENDING, decided)
    return "waiting"
