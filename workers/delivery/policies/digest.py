"""Digest notifications: several outbox records sent as one POST, crash-safely.

A digest is itself an outbox record (``kind: "digest"``, ``provider: "digest"``) that lists its
``members`` (outbox keys). Its key is derived from the member keys, so it is the same digest
whoever forms it again, and it carries one ``sequence_id`` that every attempt reuses. Members
stay in ``outbox/`` untouched until the digest is delivered; while a digest names them they are
never sent on their own.

After the 2xx: each member gets its own ``sent/`` receipt (``reason: "digest"``, the digest's
key and ``sequence_id`` in it), then the digest its receipt, then each record is removed. A crash
before the first member receipt repeats the same digest with the same ``sequence_id`` (ntfy shows
one notification); a crash after one is recovered without a new POST (a member receipt naming the
digest proves the POST succeeded).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from donebell.shared.config.view import SettingsLike
from donebell.shared.keys import sequence_id
from donebell.shared.records import new_receipt
from donebell.shared.statedir import DEAD, OUTBOX, RECEIPT_FOLDERS, SCHEMA_VERSION, SENT, InvalidRecord, StateDir, now
from donebell.shared.text.markdown_text import cut_utf8
from donebell.workers.delivery.payload import FAILED_TAG, MESSAGE_MAX_BYTES
from donebell.workers.delivery.render import render

if TYPE_CHECKING:
    from donebell.shared.record_types import ReceiptReason, ReceiptStatus

KIND = "digest"
#: One task's line in a digest (its title and message, cut).
LINE_MAX_BYTES = 300


def digest_key(members: list[str]) -> str:
    return hashlib.sha256(("donebell/v1|digest|" + ",".join(sorted(members))).encode()).hexdigest()


def is_digest(record: dict[str, Any]) -> bool:
    return record.get("kind") == KIND


def new_digest(members: list[str], why: str, **fields: Any) -> dict[str, Any]:
    """The outbox record of a digest of ``members`` (``why``: ``quiet-hours`` or ``burst``)."""
    key = digest_key(members)
    return {
        "schema": SCHEMA_VERSION,
        "kind": KIND,
        "key": key,
        "provider": KIND,
        "created_at": now(),
        "promoted_at": now(),
        "digest_of": why,
        "members": sorted(members),
        "sequence_id": sequence_id(KIND, key),
        "attempts": 0,
        "next_attempt_at": None,
        "last_error": None,
        **fields,
    }


def claimed_keys(state: StateDir) -> dict[str, str]:
    """member key -> digest key, for every digest still in ``outbox/``."""
    claimed: dict[str, str] = {}
    for key in state.keys(OUTBOX):
        try:
            record = state.read(OUTBOX, key)
        except InvalidRecord:
            continue
        if record and is_digest(record):
            for member in record.get("members") or []:
                if isinstance(member, str):
                    claimed[member] = key
    return claimed


def live_members(state: StateDir, digest: dict[str, Any]) -> list[dict[str, Any]]:
    """The member outbox records still waiting for this digest (no receipt yet)."""
    out = []
    for member in digest.get("members") or []:
        if not isinstance(member, str) or any(state.exists(f, member) for f in RECEIPT_FOLDERS):
            continue
        try:
            record = state.read(OUTBOX, member)
        except InvalidRecord:
            continue
        if record is not None:
            out.append(record)
    return out


def already_posted(state: StateDir, digest: dict[str, Any]) -> bool:
    """True when a member's ``sent/`` receipt names this digest: its POST was accepted before a crash."""
    for member in digest.get("members") or []:
        try:
            receipt = state.read(SENT, member) if isinstance(member, str) else None
        except InvalidRecord:
            continue
        if receipt and receipt.get("digest") == digest["key"]:
            return True
    return False


def render_digest(digest: dict[str, Any], members: list[dict[str, Any]], settings: SettingsLike) -> dict[str, Any]:
    """One ntfy message: "N tasks finished …" and one line per task, newest first, within budget."""
    ordered = sorted(members, key=_finished_at, reverse=True)
    lines: list[str] = []
    failed = False
    for member in ordered:
        payload = render(member, settings)
        failed |= FAILED_TAG in payload.get("tags", [])
        lines.append(cut_utf8(f"{payload['title']}: {payload['message']}".replace("\n", " "), LINE_MAX_BYTES))
    body = _fit(lines)
    count = len(members)
    noun = "task" if count == 1 else "tasks"
    when = {"quiet-hours": " overnight" if digest.get("overnight") else " during quiet hours"}.get(
        str(digest.get("digest_of")), ""
    )
    tags = [t for t in settings.tags if t]
    if failed:
        tags = [FAILED_TAG, *tags]
    if settings.host_tag:
        from donebell.workers.delivery.payload import host_tag

        tag = host_tag(ordered[0] if ordered else {}, settings)
        if tag:
            tags.append(tag)
    out: dict[str, Any] = {
        "topic": settings.topic,
        "title": f"{count} {noun} finished{when}",
        "message": body,
        "tags": tags,
        "sequence_id": digest["sequence_id"],
    }
    if settings.priority != 3:
        out["priority"] = settings.priority
    return out


def _fit(lines: list[str]) -> str:
    """Whole lines within the 3,500-byte budget; the rest counted as "… and N more"."""
    kept: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        left = len(lines) - index - 1
        tail = len(f"\n… and {left} more".encode()) if left else 0
        size = len(line.encode()) + (1 if kept else 0)
        if used + size + tail > MESSAGE_MAX_BYTES:
            kept.append(f"… and {len(lines) - index} more")
            break
        kept.append(line)
        used += size
    return "\n".join(kept)


def _finished_at(record: dict[str, Any]) -> float:
    for name in ("completed_at", "promoted_at", "created_at"):
        value = record.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return 0.0


def finish_members(
    state: StateDir, digest: dict[str, Any], *, status: ReceiptStatus, reason: ReceiptReason, **extra: Any
) -> int:
    """Receipt every live member of ``digest`` (before the digest's own receipt); how many."""
    folder = SENT if status == "sent" else DEAD
    done = 0
    for member in digest.get("members") or []:
        # A crash between a member's receipt and its removal: finish the removal.
        if (
            isinstance(member, str)
            and state.exists(OUTBOX, member)
            and any(state.exists(f, member) for f in RECEIPT_FOLDERS)
        ):
            state.remove(OUTBOX, member)
    for member in live_members(state, digest):
        receipt = new_receipt(
            member,
            status=status,
            reason=reason,
            digest=digest["key"],
            digest_sequence_id=digest["sequence_id"],
            digest_of=digest.get("digest_of"),
            **extra,
        )
        state.finish(OUTBOX, folder, receipt)
        done += 1
    return done
