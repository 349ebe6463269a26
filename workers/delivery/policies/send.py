"""The sender's side of the policies: a digest's payload and receipts, quiet-hours silent priority.

:class:`~donebell.workers.delivery.outbox_sender.OutboxSender` calls these few functions; all the
decisions are here and in :mod:`.sweep`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from donebell.shared.config.view import SettingsLike
from donebell.shared.records import new_receipt
from donebell.shared.statedir import OUTBOX, SENT, StateDir
from donebell.workers.delivery.policies.digest import (
    already_posted,
    finish_members,
    is_digest,
    live_members,
    render_digest,
)

if TYPE_CHECKING:
    from donebell.shared.record_types import ReceiptReason, ReceiptStatus

#: ntfy's lowest priority: no sound, no vibration (quiet_hours_mode "silent").
SILENT_PRIORITY = 1


def payload_of(
    state: StateDir, record: dict[str, Any], settings: SettingsLike
) -> tuple[Literal["recovered", "gone"] | None, dict[str, Any] | None]:
    """The payload of a digest record, or what became of it (its POST already done, no member left)."""
    if already_posted(state, record):
        # A crash between the digest's 2xx and its last receipt: finish without a second POST.
        finished = finish_members(state, record, status="sent", reason="digest", recovered=True)
        state.finish(
            OUTBOX,
            SENT,
            new_receipt(
                record,
                status="sent",
                reason="digest",
                recovered=True,
                members=record.get("members"),
                digest_of=record.get("digest_of"),
            ),
        )
        state.log(
            "info",
            "digest already accepted before a crash; receipts finished, not resent",
            key=record["key"],
            members=finished,
        )
        return "recovered", None
    members = live_members(state, record)
    if not members:
        state.remove(OUTBOX, record["key"])
        state.log("warning", "digest without a waiting member removed", key=record["key"])
        return "gone", None
    return None, render_digest(record, members, settings)


def waits_for_its_digest(state: StateDir, record: dict[str, Any]) -> bool:
    """A member of a digest still in ``outbox/`` is sent only in it, under the digest's
    ``sequence_id``: sent alone it would reach the phone twice (issue 26 item 9)."""
    digest = (record.get("policy") or {}).get("digest")
    return isinstance(digest, str) and digest != record.get("key") and state.exists(OUTBOX, digest)


def before_post(state: StateDir, record: dict[str, Any], settings: SettingsLike) -> None:
    """With digests possible, note a first attempt before its POST: a record the server may have
    accepted (a crash before its receipt) is never put into a digest afterwards (:mod:`.sweep`)."""
    digests = settings.burst_digest_threshold > 0 or bool(settings.quiet_hours.strip())
    if (
        digests
        and not is_digest(record)
        and not record.get("attempts")
        and not (record.get("policy") or {}).get("posted")
    ):
        record["policy"] = {**(record.get("policy") or {}), "posted": True}
        state.replace(OUTBOX, record)


def silence(record: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """Priority 1 for a record sent inside quiet hours in ``silent`` mode."""
    if (record.get("policy") or {}).get("silent"):
        payload["priority"] = SILENT_PRIORITY
    return payload


def receipt_members(
    state: StateDir, record: dict[str, Any], status: ReceiptStatus, reason: ReceiptReason, **fields: Any
) -> ReceiptReason:
    """Receipt a digest's members before the digest itself; the digest's own reason (else ``reason``)."""
    if not is_digest(record):
        return reason
    finish_members(state, record, status=status, reason="digest" if status == "sent" else reason, **fields)
    return "digest" if status == "sent" else reason
