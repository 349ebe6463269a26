"""``donebell test`` records in the outbox: a question asked now, so at most one is ever sent.

A test notification answers "does delivery work?" at the moment it was asked. One that could not
be sent then must not arrive minutes or hours later, nor pile up with the tests run while the
server was unreachable (each run would otherwise be one more push once it is fixed):

* a newer test record in ``outbox/`` replaces an older one: the older gets a ``suppressed/``
  receipt with reason ``test-replaced``;
* a test record still unsent at its ``expires_at`` (``donebell test --expire-after``, 300 s by
  default) gets a ``suppressed/`` receipt with reason ``test-expired``.

Only the delivery role's lock holder calls this (the sender before it attempts a test record:
:func:`stale_or_newest`), as for every other change of a promoted record; ``donebell test``
attempts its record through the delivery role's own code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from donebell.shared.records import expiry_of_test, new_receipt
from donebell.shared.statedir import OUTBOX, SUPPRESSED, InvalidRecord, StateDir

if TYPE_CHECKING:
    from donebell.shared.record_types import ReceiptReason


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def newer_test(state: StateDir, record: dict[str, Any]) -> str | None:
    """The key of a test record in ``outbox/`` created after ``record``, if there is one."""
    born = _number(record.get("created_at")) or 0.0
    for key in state.keys(OUTBOX):
        if key == record.get("key"):
            continue
        try:
            other = state.read(OUTBOX, key)
        except (InvalidRecord, OSError):
            continue
        if other is not None and other.get("test") is True and (_number(other.get("created_at")) or 0.0) > born:
            return key
    return None


def retire_if_stale(state: StateDir, record: dict[str, Any], at: float) -> str | None:
    """Give a replaced or expired test record its receipt and take it out of ``outbox/``.

    Returns the receipt's reason, or None when the record is still the test to send.
    """
    replaced_by = newer_test(state, record)
    reason: ReceiptReason
    if replaced_by is not None:
        reason, detail = "test-replaced", f"a newer `donebell test` ({replaced_by[:12]}) replaced it"
    elif at >= expiry_of_test(record):
        reason, detail = "test-expired", "not sent before it expired (a test answers for the moment it was asked)"
    else:
        return None
    extra = {"attempts": record.get("attempts") or 0, "detail": detail, "expires_at": expiry_of_test(record)}
    if record.get("last_error"):
        extra["last_error"] = record["last_error"]
    state.finish(OUTBOX, SUPPRESSED, new_receipt(record, status="suppressed", reason=reason, **extra))
    state.log("info", f"test notification {reason.removeprefix('test-')}; not sent", key=record["key"], reason=reason)
    return reason


def stale_or_newest(state: StateDir, record: dict[str, Any], at: float) -> bool:
    """Before a test record is attempted: retire it if it is replaced or expired (True), else
    retire every older test still queued (it is the one test that may arrive) and say False."""
    if retire_if_stale(state, record, at):
        return True
    retire_older_tests(state, str(record["key"]), at)
    return False


def retire_older_tests(state: StateDir, keep: str, at: float) -> int:
    """Retire every test record in ``outbox/`` but ``keep`` that is replaced or expired; how many."""
    retired = 0
    for key in state.keys(OUTBOX):
        if key == keep:
            continue
        try:
            record = state.read(OUTBOX, key)
        except (InvalidRecord, OSError):
            continue
        if record is not None and record.get("test") is True and retire_if_stale(state, record, at):
            retired += 1
    return retired
