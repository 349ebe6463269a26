"""One delivery attempt per due outbox record, with the state transitions of the guarantee.

Only the delivery role (under its role lock) changes ``outbox/`` records after promotion, so no
mutation lock is held across the network request. Every transition goes through ``StateDir``:
the receipt is created before the outbox record is removed, and a retry rewrites the record
atomically, so a crash at any point leaves the record, the receipt, or both.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from donebell.shared.config.view import SettingsLike
from donebell.shared.ntfy.client import Auth, NtfyClient, public_server, scrub
from donebell.shared.ntfy.retry import Decision, backoff_seconds, clean_text
from donebell.shared.records import expiry_of_test, new_receipt
from donebell.shared.statedir import DEAD, OUTBOX, RECEIPT_FOLDERS, SENT, InvalidRecord, StateDir, now
from donebell.workers import pass_control
from donebell.workers.delivery.policies import send as policy_send
from donebell.workers.delivery.policies.digest import is_digest
from donebell.workers.delivery.policies.sweep import plan as policy_plan
from donebell.workers.delivery.render import render
from donebell.workers.delivery.server_backoff import ServerBackoff
from donebell.workers.delivery.test_records import stale_or_newest

#: Removed outbox records whose folder flush is shared (one flush of ``outbox/`` per batch)...
REMOVALS_PER_FLUSH = 64
#: ...or per this much time, whichever comes first.
REMOVAL_WINDOW_SECONDS = 0.02

What = Literal["sent", "retried", "dead", "recovered", "invalid", "gone", "waiting", "blocked"]


@dataclass
class SendOutcome:
    """What happened to one record."""

    what: What
    next_attempt_at: float | None = None
    decision: Decision | None = None


@dataclass
class SendSummary:
    """What one sweep over ``outbox/`` did."""

    counters: dict[str, int] = field(default_factory=dict)
    next_due: float | None = None  # earliest next_attempt_at of a record still waiting
    left: int = 0  # records seen that are still in outbox/ (waiting, blocked, or not reached)
    blocked: int = 0  # records held back by a configuration problem
    more: bool = False  # the time budget ran out with due records left
    last_sent_at: float | None = None
    server_backoff: dict[str, Any] | None = None  # the whole outbox waits for the server (server_backoff.py)


class OutboxSender:
    """Attempts due outbox records with the given settings, client and credentials."""

    def __init__(
        self,
        state: StateDir,
        settings: SettingsLike,
        client: NtfyClient,
        auth: Auth | None,
        config_problem: str | None,
        rng: random.Random | None = None,
    ) -> None:
        self.state, self.settings, self.client, self.auth = state, settings, client, auth
        self.config_problem = config_problem
        self.rng = rng or random.Random()
        self.backoff = ServerBackoff.load(state)  # the whole outbox waits while the server fails
        self._removed = 0  # outbox records removed since the last flush of outbox/
        self._first_removed_at = 0.0  # monotonic time of the oldest of them
        self._sent_lines: list[tuple[str, str, dict[str, Any]]] = []  # their notify.log lines

    def deliver_due(self, at: float, *, budget_seconds: float | None = None) -> SendSummary:
        """Attempt every due record, oldest first; stop early after ``budget_seconds``."""
        summary = SendSummary()
        started = time.monotonic()
        held = policy_plan(self.state, self.settings, at)  # docs/delivery.md "Notification policies"
        summary.next_due = held.next_due
        stamped, strays = self.state.listing(OUTBOX)  # after the plan: a digest it formed is sent now
        for name in strays:  # not <key>.json: never deliverable, set aside
            self.state.dead_letter_invalid(OUTBOX, name, "not a <key>.json record file")
            summary.counters["invalid"] = summary.counters.get("invalid", 0) + 1
        outbox_keys = [key for key, _ in stamped]
        keys = [k for k in outbox_keys if k not in held.skip]
        summary.left += len(outbox_keys) - len(keys)
        for name, value in held.counters.items():
            summary.counters[name] = value
        backoff = self.backoff
        was_clear = not backoff.kind
        if backoff.head_key in keys:  # rate-limited: the record that met the 429 goes first
            keys.insert(0, keys.pop(keys.index(backoff.head_key)))
        try:
            self._sweep(keys, at, started, budget_seconds, summary)
        finally:
            self.flush_removals()
        if backoff.kind or not was_clear:
            backoff.save(self.state)
        summary.server_backoff = backoff.health()
        return summary

    def _sweep(
        self, keys: list[str], at: float, started: float, budget_seconds: float | None, summary: SendSummary
    ) -> None:
        """Attempt ``keys`` in order until the budget, a stop request or the server's wait."""
        backoff, cap = self.backoff, self.settings.retry_max_seconds
        for index, key in enumerate(keys):
            pass_control.heartbeat()
            if (
                budget_seconds is not None and time.monotonic() - started > budget_seconds
            ) or pass_control.stop_requested():
                summary.more = True
                summary.left += len(keys) - index
                break
            if backoff.holds(max(at, now()) if index else at, cap):  # the server, not the record
                summary.left += len(keys) - index
                self._clamp_waiting(keys[index:], at)
                summary.next_due = backoff.until if summary.next_due is None else min(summary.next_due, backoff.until)
                break
            outcome = self._attempt(key, max(at, now()) if index else at)
            waited = time.monotonic() - self._first_removed_at
            if self._removed >= REMOVALS_PER_FLUSH or (self._removed and waited >= REMOVAL_WINDOW_SECONDS):
                self.flush_removals()
            summary.counters[outcome.what] = summary.counters.get(outcome.what, 0) + 1
            if outcome.what in ("waiting", "retried", "blocked"):
                summary.left += 1
            if outcome.what == "blocked":
                summary.blocked += 1
            if outcome.what == "sent":
                summary.last_sent_at = now()
            due = outcome.next_attempt_at
            if due is not None and (summary.next_due is None or due < summary.next_due):
                summary.next_due = due

    def deliver_record(self, key: str, at: float, *, force: bool = False) -> SendOutcome:
        """Attempt ``outbox/<key>`` if it is due (or ``force``); apply the outcome durably."""
        try:
            return self._attempt(key, at, force=force)
        finally:
            self.flush_removals()

    def _attempt(self, key: str, at: float, *, force: bool = False) -> SendOutcome:
        """:meth:`deliver_record` whose outbox removal may still wait for :meth:`flush_removals`."""
        for folder in RECEIPT_FOLDERS:
            if self.state.exists(folder, key):
                # A crash after the receipt, before the removal: finish the removal, never resend.
                self.state.remove(OUTBOX, key)
                self.state.log(
                    "info", "outbox record already has a receipt; removed, not resent", key=key, receipt=folder
                )
                return SendOutcome("recovered")
        try:
            record = self.state.read(OUTBOX, key)
        except InvalidRecord as exc:
            self.state.dead_letter_invalid(OUTBOX, f"{key}.json", str(exc))
            return SendOutcome("invalid")
        if record is None or (record.get("test") is True and stale_or_newest(self.state, record, at)):
            return SendOutcome("gone")  # a replaced or expired `donebell test` is retired, never sent
        due = self._due(record, at)
        if due is not None and record.get("test") is True:
            due = min(due, expiry_of_test(record))  # looked at again when it expires, not at its next try
        if due is not None and not force:
            return SendOutcome("waiting", due)
        if self.config_problem is not None:
            return SendOutcome("blocked")
        try:
            if is_digest(record):
                what, digest = policy_send.payload_of(self.state, record, self.settings)
                if what is not None or digest is None:
                    return SendOutcome(what or "gone")
                payload = digest
            elif policy_send.waits_for_its_digest(self.state, record):
                return SendOutcome("waiting")
            else:
                payload = policy_send.silence(record, render(record, self.settings, state=self.state))
        except Exception as exc:  # noqa: BLE001 - a record we cannot render is an invalid record
            self.state.dead_letter_invalid(OUTBOX, f"{key}.json", f"cannot render: {type(exc).__name__}")
            return SendOutcome("invalid")
        policy_send.before_post(self.state, record, self.settings)
        decision = self.client.publish(self.settings.server, payload, self.auth)
        return self._apply(record, decision)

    def _clamp_waiting(self, keys: list[str], at: float) -> None:
        """While the server holds the outbox, still clamp a record's time a backward clock jump
        pushed past the cap (as :meth:`_due` does), so no record waits longer than one cap after
        the server-wide wait ends."""
        cap = self.settings.retry_max_seconds
        for key in keys:
            try:
                record = self.state.read(OUTBOX, key)
            except InvalidRecord:
                continue  # set aside by the pass that gets to send it
            raw = record.get("next_attempt_at") if record is not None else None
            late = isinstance(raw, (int, float)) and not isinstance(raw, bool) and raw > at + cap + 1.0
            if record is not None and late:
                self._due(record, at)

    def _due(self, record: dict[str, Any], at: float) -> float | None:
        """``next_attempt_at`` if in the future, else None (due now).

        A time further away than the backoff cap can only come from a clock that jumped back
        after it was written; it is clamped to ``at + retry_max_seconds`` and stored, so the
        record becomes due instead of waiting out the jump.
        """
        raw = record.get("next_attempt_at")
        if not isinstance(raw, (int, float)) or isinstance(raw, bool) or raw != raw or raw <= at:
            return None
        cap = self.settings.retry_max_seconds
        if raw > at + cap + 1.0:
            record["next_attempt_at"] = at + cap
            self.state.replace(OUTBOX, record)
            self.state.log(
                "warning",
                "next attempt was beyond the backoff cap (clock jump?); clamped",
                key=record["key"],
                was=raw,
                now=at,
            )
            return at + cap
        return float(raw)

    def _apply(self, record: dict[str, Any], decision: Decision) -> SendOutcome:
        attempts = _int(record.get("attempts")) + 1
        done_at = now()
        error = clean_text(scrub(decision.error, self.auth, self.settings))
        server_waits = self.backoff.observe(
            record["key"], replace(decision, error=error), done_at, self.settings.retry_max_seconds, self.rng
        )
        if decision.verdict == "sent":
            return self._sent(record, decision, attempts, done_at)
        max_attempts = self.settings.max_attempts
        if decision.verdict == "permanent" or (max_attempts > 0 and attempts >= max_attempts):
            return self._dead(record, decision, attempts, done_at, error)
        return self._retry(record, decision, attempts, done_at, error, server_waits)

    def _sent(self, record: dict[str, Any], decision: Decision, attempts: int, done_at: float) -> SendOutcome:
        """The server has it: its ``sent/`` receipt, then the outbox record goes (a digest's members first).

        The receipt is durable before the next POST (a crash resends at most the record in
        flight). The removal of a plain record's outbox copy shares one flush of ``outbox/`` with
        the pass's next removals (:meth:`flush_removals`): a removal lost in a crash leaves a
        record beside its receipt, which is removed on sight and never sent again.
        """
        own: Literal["test", "sent"] = "test" if record.get("test") is True else "sent"
        outcome = {
            "attempts": attempts,
            "sent_at": done_at,
            "http_status": decision.status,
            "message_id": decision.message_id,
        }  # the same on the digest's members and on it
        reason = policy_send.receipt_members(self.state, record, "sent", own, **outcome)
        receipt = new_receipt(
            record, status="sent", reason=reason, server=public_server(self.settings.server), **outcome
        )
        if is_digest(record):
            self.state.finish(OUTBOX, SENT, receipt)
            self.state.log_lines([_sent_line(record, attempts, decision)])
            return SendOutcome("sent", decision=decision)
        self.state.create(SENT, receipt)  # an existing receipt wins, as finish() does
        self.state.remove(OUTBOX, record["key"], sync=False)
        if not self._removed:
            self._first_removed_at = time.monotonic()
        self._removed += 1
        self._sent_lines.append(_sent_line(record, attempts, decision))
        return SendOutcome("sent", decision=decision)

    def flush_removals(self) -> None:
        """One flush of ``outbox/`` for the removals since the last one, and their log lines."""
        if self._removed:
            self.state.sync_folder(OUTBOX)
            self._removed = 0
        lines, self._sent_lines = self._sent_lines, []
        self.state.log_lines(lines)

    def _dead(
        self, record: dict[str, Any], decision: Decision, attempts: int, done_at: float, error: str
    ) -> SendOutcome:
        refused = decision.verdict == "permanent"  # the server refused it for good
        reason: Literal["permanent-http-error", "max-attempts"] = "permanent-http-error" if refused else "max-attempts"
        outcome = {"attempts": attempts, "failed_at": done_at, "http_status": decision.status, "last_error": error}
        policy_send.receipt_members(self.state, record, "dead", reason, **outcome)
        receipt = new_receipt(
            record,
            status="dead",
            reason=reason,
            ntfy_code=decision.ntfy_code,
            server=public_server(self.settings.server),
            **outcome,
        )
        self.state.finish(OUTBOX, DEAD, receipt)
        self.state.log(
            "error",
            "delivery failed for good; dead-lettered",
            key=record["key"],
            reason=reason,
            attempts=attempts,
            error=error,
        )
        return SendOutcome("dead", decision=decision)

    def _retry(
        self, record: dict[str, Any], decision: Decision, attempts: int, done_at: float, error: str, server_waits: bool
    ) -> SendOutcome:
        delay = backoff_seconds(
            attempts,
            self.settings.retry_max_seconds,
            ntfy_code=decision.ntfy_code,
            retry_after=decision.retry_after,
            rng=self.rng,
        )
        if server_waits:  # not before the server-wide wait ends (explain shows the real time)
            delay = max(delay, self.backoff.until - done_at)
        record.update(
            attempts=attempts,
            last_error=error,
            last_attempt_at=done_at,
            next_attempt_at=done_at + delay,
            last_http_status=decision.status,
        )
        self.state.replace(OUTBOX, record)
        self.state.log(
            "warning",
            "delivery failed; will retry",
            key=record["key"],
            attempts=attempts,
            error=error,
            retry_in=round(delay, 2),
        )
        return SendOutcome("retried", done_at + delay, decision)


def _sent_line(record: dict[str, Any], attempts: int, decision: Decision) -> tuple[str, str, dict[str, Any]]:
    """The ``sent`` line of ``notify.log`` for one record."""
    fields = {
        "key": record["key"],
        "sequence_id": record.get("sequence_id"),
        "attempts": attempts,
        "http_status": decision.status,
        "test": record.get("test") is True,
    }
    return "info", "sent", fields


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
