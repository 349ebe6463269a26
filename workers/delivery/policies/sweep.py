"""The send-time policy pass over ``outbox/``, run by the delivery role before it sends anything.

:func:`plan` decides, for every outbox record, in the order of docs/delivery.md "Notification
policies": drop it (``too-short``, ``user-returned``, ``answered-at-desk``: a ``suppressed/`` receipt), hold it (desk
grace, quiet hours: a time, with the hold written into the record when it must outlive the
window's start), or let it go, alone or in a digest. It returns the keys the sender must not
send in this sweep. With every policy off it reads nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from donebell.shared.config.view import SettingsLike
from donebell.shared.records import NEEDS_YOU, new_receipt
from donebell.shared.statedir import OUTBOX, RECEIPT_FOLDERS, SUPPRESSED, InvalidRecord, StateDir
from donebell.workers.agents.registry import agent
from donebell.workers.delivery.policies import quiet_hours
from donebell.workers.delivery.policies.desk import user_returned
from donebell.workers.delivery.policies.digest import claimed_keys, is_digest, new_digest
from donebell.workers.delivery.policies.task_time import task_seconds
from donebell.workers.kit.needs_answered import needs_answered

if TYPE_CHECKING:
    from donebell.shared.record_types import ReceiptReason

QUIET = "quiet-hours"


@dataclass
class Plan:
    """What the policies decided for one sweep."""

    skip: set[str] = field(default_factory=set)  # outbox keys not to send now (held or in a digest)
    next_due: float | None = None  # the earliest hold that ends
    counters: dict[str, int] = field(default_factory=dict)

    def hold(self, key: str, until: float) -> None:
        self.skip.add(key)
        self.next_due = until if self.next_due is None else min(self.next_due, until)

    def count(self, name: str) -> None:
        self.counters[name] = self.counters.get(name, 0) + 1


def active(settings: SettingsLike) -> bool:
    return bool(
        settings.min_task_seconds > 0
        or settings.desk_grace_seconds > 0
        or settings.quiet_hours.strip()
        or settings.burst_digest_threshold > 0
    )


def plan(state: StateDir, settings: SettingsLike, at: float) -> Plan:
    result = Plan()
    if not active(settings):
        return result
    claimed = claimed_keys(state)
    result.skip.update(claimed)
    quiet_end = quiet_hours.window_end(at, settings)
    after_quiet: list[str] = []
    ready: list[tuple[str, float]] = []
    for key in state.keys(OUTBOX):
        if key in claimed or any(state.exists(f, key) for f in RECEIPT_FOLDERS):
            continue
        try:
            record = state.read(OUTBOX, key)
        except InvalidRecord:
            continue  # the sender dead-letters it
        if record is None or is_digest(record) or record.get("test") is True:
            continue
        if _due_later(record, at):
            continue  # a retry in backoff: its policies were decided before its first attempt
        verdict = _decide(state, settings, record, at, quiet_end, result)
        # A record that may have reached the server already goes alone under its own sequence_id:
        # in a digest it would be a second, unexplained notification.
        alone = bool(record.get("attempts")) or bool((record.get("policy") or {}).get("posted"))
        if verdict == "after-quiet" and not alone:
            after_quiet.append(key)
        elif isinstance(verdict, float) and not alone:
            ready.append((key, verdict))
    if len(after_quiet) >= 2:
        _form(state, after_quiet, QUIET, result, overnight=quiet_hours.crosses_midnight(settings))
    threshold = settings.burst_digest_threshold
    recent = [key for key, ready_at in ready if ready_at >= at - settings.burst_window_seconds]
    if threshold > 0 and len(recent) >= max(2, threshold):
        _form(state, recent, "burst", result)
    return result


def _decide(
    state: StateDir, settings: SettingsLike, record: dict[str, Any], at: float, quiet_end: float | None, result: Plan
) -> str | float | None:
    """None: dropped or held; ``"after-quiet"``: held by a window that ended; else its ready time."""
    key = record["key"]
    policy = dict(record.get("policy") or {})
    first = not record.get("attempts") and not policy.get("passed")
    needs = record.get("notice") == NEEDS_YOU  # never too short; the grace waits for the desk's answer
    done = not needs and record.get("outcome") in (None, "done")
    ready_at = _number(record.get("promoted_at"), at)
    if first and done and settings.min_task_seconds > 0:
        seconds = task_seconds(record, state)
        if seconds is not None and seconds < settings.min_task_seconds:
            _drop(
                state,
                record,
                "too-short",
                f"task took {seconds:.1f}s < min_task_seconds {settings.min_task_seconds:g}",
                task_seconds=round(seconds, 3),
            )
            result.count("too-short")
            return None
    grace = settings.desk_grace_seconds
    if first and grace > 0 and (done or needs or settings.desk_grace_failures):
        ready_at += grace
        if at < ready_at:
            result.hold(key, ready_at)
            return None
        returned = (
            needs_answered(state, record, agent(record.get("provider"))) if needs else user_returned(state, record)
        )
        if returned is not None:
            reason: ReceiptReason = "answered-at-desk" if needs else "user-returned"
            _drop(state, record, reason, returned, desk_grace_seconds=grace)
            result.count(reason)
            return None
    held_until = policy.get("quiet_until")
    if quiet_end is not None:
        if settings.quiet_hours_mode == "silent":
            if not policy.get("silent"):
                _note(state, record, policy, silent=True, passed=True)
            return ready_at
        if held_until != quiet_end:
            _note(state, record, policy, quiet_until=quiet_end, passed=True)
            state.log("info", "held by quiet hours", key=key, until=round(quiet_end, 3))
        result.hold(key, quiet_end)
        return None
    if isinstance(held_until, (int, float)):
        return "after-quiet"
    return ready_at


def _due_later(record: dict[str, Any], at: float) -> bool:
    raw = record.get("next_attempt_at")
    return isinstance(raw, (int, float)) and not isinstance(raw, bool) and raw > at


def _note(state: StateDir, record: dict[str, Any], policy: dict[str, Any], **changes: Any) -> None:
    """Write a policy decision into the outbox record (it outlives a restart and reaches the receipt)."""
    record["policy"] = {**policy, **changes}
    state.replace(OUTBOX, record)


def _drop(state: StateDir, record: dict[str, Any], reason: ReceiptReason, evidence: str, **extra: Any) -> None:
    receipt = new_receipt(
        record,
        status="suppressed",
        reason=reason,
        policy_evidence=evidence[:300],
        promoted_at=record.get("promoted_at"),
        **extra,
    )
    with state.mutation_lock(record["key"]):
        state.finish(OUTBOX, SUPPRESSED, receipt)
    state.log("info", "suppressed by a policy", key=record["key"], reason=reason, evidence=evidence[:200])


def _form(state: StateDir, members: list[str], why: str, result: Plan, **fields: Any) -> None:
    digest = new_digest(members, why, **fields)
    # Each member names its digest before the digest exists: once the digest may have reached
    # the server, a member is never sent on its own, whatever the policies become (with them
    # all off this sweep reads nothing, and only the member's own mark holds it back).
    for key in members:
        try:
            record = state.read(OUTBOX, key)
        except InvalidRecord:
            continue
        if record is not None:
            _note(state, record, dict(record.get("policy") or {}), digest=digest["key"])
    state.create(OUTBOX, digest)
    result.skip.update(members)
    result.count(f"digest-{why}")
    state.log(
        "info",
        "digest formed",
        key=digest["key"],
        digest_of=why,
        members=len(members),
        sequence_id=digest["sequence_id"],
    )


def _number(value: object, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default
