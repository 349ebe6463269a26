"""The record types of the state directory, as plain JSON objects with a schema version.

Every record carries ``schema``, ``kind``, ``key``, ``provider`` and ``created_at``. They are
dicts (not classes) because the hook path must stay standard-library-only and fast; these
constructors are the one place their shape is defined.

Kinds and where they live:

``candidate``  (pending/)   evidence that a turn may have ended; the gate decides.
``outbox``     (outbox/)    idle-confirmed event + delivery metadata; never demoted.
``receipt``    (sent/, suppressed/, dead/)  compact final state with a stable ``reason``.
``dead-letter`` (dead/)     an unparsable file moved aside (see ``statedir``).
``cursor``     (watch/)     a rollout tail position.
``claude-session`` (claude/) a Claude session's prompt epoch.

Standard library only.
"""

from __future__ import annotations

import os
import sys

from donebell.shared.keys import sequence_id
from donebell.shared.statedir import SCHEMA_VERSION, now

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from donebell.shared.record_types import Candidate, OutboxRecord, Receipt, ReceiptReason, ReceiptStatus


#: Stable receipt reasons (``explain``, ``status`` and tests rely on these words): the run-time
#: list of ``record_types.ReceiptReason`` (``tests/test_records_typed.py`` keeps the two equal),
#: which mypy checks at every call of :func:`new_receipt`; :func:`new_receipt` checks it again at
#: run time for a reason that came from data (a remote gate worker's verdict), see :func:`_unknown`.
REASONS = (
    "sent",  # delivered (sent/)
    "subagent",  # a descendant thread/agent never notifies on its own
    "superseded",  # an older candidate of the same root, or an obsolete predecessor turn
    "technical-turn",  # no user message + final assistant message (legacy/watcher sources)
    "merged",  # a Codex Stop without turn_id, folded into its rollout turn's real key
    "unverifiable",  # strict mode could not verify the evidence within the probe grace
    "claude-session-unverifiable",  # Claude session record missing/corrupt at commit time
    "goal-cleared",  # a cleared Claude goal: the candidate is removed, no receipt (log word)
    "duplicate",  # the same key was already final
    "disabled",  # the provider is disabled in the config
    "invalid-record",  # a record that did not parse (dead/)
    "permanent-http-error",  # 3xx / other 4xx from the server (dead/)
    "max-attempts",  # positive max_attempts reached (dead/)
    "test",  # a `donebell test` record
    "too-short",  # min_task_seconds: a done task shorter than that (suppressed/)
    "user-returned",  # desk_grace_seconds: a new turn in the thread during the grace (suppressed/)
    "digest",  # sent inside one digest notification (quiet hours or a burst); the digest's key in it
    "answered-at-desk",  # desk_grace_seconds: the agent moved on from a needs-you request (suppressed/)
    "test-replaced",  # a queued `donebell test` a newer one replaced (suppressed/)
    "test-expired",  # a `donebell test` not sent before its expires_at (suppressed/)
)

#: ``notice`` of an outbox record that says the task waits for the user (docs/approvals.md).
NEEDS_YOU = "needs-you"

#: How long a ``donebell test`` record may wait in the outbox before it expires (seconds).
TEST_EXPIRY_SECONDS = 300.0


def expiry_of_test(record: dict[str, Any]) -> float:
    """When a test record stops being worth sending (its ``expires_at``; older records lack it)."""
    own = record.get("expires_at")
    if isinstance(own, (int, float)) and not isinstance(own, bool):
        return float(own)
    born = record.get("created_at")
    return (float(born) if isinstance(born, (int, float)) and not isinstance(born, bool) else 0.0) + TEST_EXPIRY_SECONDS


#: Terminal outcome of the turn a candidate describes, when the evidence says so (``None``: not
#: known yet); :func:`new_candidate` refuses any other.
OUTCOMES = ("done", "failed", "stopped")
#: The folders a receipt is written to, by its ``status``.
RECEIPT_STATUSES = ("sent", "suppressed", "dead")


def base(kind: str, key: str, provider: str) -> dict[str, Any]:
    return {"schema": SCHEMA_VERSION, "kind": kind, "key": key, "provider": provider, "created_at": now()}


def as_shape(record: Mapping[str, Any]) -> Any:
    """``record`` as the ``TypedDict`` (``record_types``) its caller declares: ``typing.cast``
    without importing ``typing`` on the hook path. For a record built here from ``**fields`` (the
    tests compare its fields with the shape) or one its caller has checked after reading it."""
    return record


def new_candidate(
    *,
    key: str,
    provider: str,
    source: str,
    weak_identity: bool = False,
    **fields: Any,
) -> Candidate:
    """A pending candidate. Common ``fields``:

    codex:  thread_id, turn_id, cwd, transcript_path (rollout), codex_home, sqlite_home,
            origin, outcome, error, last_message (only when include_message), has_user_message,
            has_final_message
    claude: session_id, prompt_id, cwd, transcript_path, claude_epoch, outcome, error,
            last_message, goal_baseline
    """
    outcome = fields.get("outcome")
    if outcome is not None and outcome not in OUTCOMES:
        _unknown("outcome", outcome)
    rec = base("candidate", key, provider)
    rec.update(
        {
            "source": source,
            "sources": [source],
            "weak_identity": weak_identity,
            "revision": 1,
            "updated_at": rec["created_at"],
            "probe": {"history": [], "next_probe_at": None, "attempts": 0},
        }
    )
    rec.update(fields)
    made: Candidate = as_shape(rec)
    return made


def to_outbox(candidate: Mapping[str, Any], *, verdict: str) -> OutboxRecord:
    """The immutable outbox form of an idle-confirmed candidate."""
    rec = dict(candidate)
    rec.update(
        {
            "kind": "outbox",
            "promoted_at": now(),
            "verdict": verdict,
            "sequence_id": sequence_id(candidate["provider"], candidate["key"]),
            "attempts": 0,
            "next_attempt_at": None,
            "last_error": None,
        }
    )
    made: OutboxRecord = as_shape(rec)
    return made


_RECEIPT_FIELDS = (
    "thread_id",
    "turn_id",
    "session_id",
    "prompt_id",
    "root_thread_id",
    "source",
    "sources",
    "outcome",
    "weak_identity",
    "test",
    "sequence_id",
    "attempts",
    "origin",
    "policy",
    "members",
    "digest_of",
    "promoted_at",  # with candidate_created_at below: `explain` tells a finished task's story in time order
    "notice",
    "agent_id",
    # a needs-you request's evidence, still read once it was sent: the desk check of a waiting
    # PermissionRequest hook and of a tapped Allow / Deny (docs/approvals.md)
    "tool_digest",
    "approval_until",
    "answer_path",
    "answer_offset",
    "claude_epoch",
)


def new_receipt(record: Mapping[str, Any], *, status: ReceiptStatus, reason: ReceiptReason, **extra: Any) -> Receipt:
    """A compact receipt for ``record``: ids and outcome only, never message text or secrets.

    ``reason`` and ``status`` are fixed vocabularies (:data:`REASONS`, :data:`RECEIPT_STATUSES`:
    the words ``explain`` and ``status`` show); another word is a programming error (:func:`_unknown`).
    """
    if reason not in REASONS:
        _unknown("receipt reason", reason)
    if status not in RECEIPT_STATUSES:
        _unknown("receipt status", status)
    rec = base("receipt", record["key"], record.get("provider", "unknown"))
    rec["status"] = status
    rec["reason"] = reason
    for name in _RECEIPT_FIELDS:
        if name in record:
            rec[name] = record[name]
    probe = record.get("probe")
    if isinstance(probe, dict) and probe.get("history"):
        rec["probe_history"] = probe["history"][-20:]
    if isinstance(probe, dict) and probe.get("ladder"):
        rec["probe_ladder"] = probe["ladder"]  # the gate's checks that decided (``explain``)
    if record.get("kind") in ("candidate", "outbox") and isinstance(record.get("created_at"), (int, float)):
        rec["candidate_created_at"] = record["created_at"]  # its own created_at is when it finished
    rec.update(extra)
    made: Receipt = as_shape(rec)
    return made


#: Set to ``1`` (tests/conftest.py does) to make an unknown vocabulary word raise (:func:`_unknown`).
STRICT_ENV = "DONEBELL_STRICT_RECORDS"


def _unknown(vocabulary: str, word: object) -> None:
    """A word outside a record vocabulary: a programming error, loud under test, survived in use.

    Under test (:data:`STRICT_ENV` set to ``1``) it raises ``ValueError``, so the test that made
    the record fails. In production the record is made all the same, the word kept as given, and
    the error goes to stderr (a role's stderr is the service log): raising here would leave the
    record where it is, and that is far worse than an odd word in ``explain`` (a notification the
    server accepted stays in ``outbox/`` and is sent again every pass; a decided candidate stays
    in ``pending/``; a hook's candidate is lost).
    """
    message = f"unknown {vocabulary} {word!r}"
    if os.environ.get(STRICT_ENV) == "1":
        raise ValueError(message)
    try:
        sys.stderr.write(f"donebell: {message}: a programming error; the record is written with it\n")
    except (AttributeError, OSError, ValueError):  # no usable stderr (None, closed): the record matters more
        pass
