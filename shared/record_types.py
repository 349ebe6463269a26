"""The shapes of the state directory's records, for the type checker (docs/design.md, the field tables).

The records themselves stay plain JSON dicts (``shared/records.py`` builds them: the hook path
is standard library only and pays nothing for a class). These ``TypedDict``\\ s say which fields a
record kind has and of which type, so mypy reads a misspelled field or a wrong type where a
record is built or read through them. Import this module only under ``TYPE_CHECKING``: it is
never loaded at run time (``tests/test_records_typed.py`` checks that no module imports it outside
that guard, and that the hook's records carry the fields declared here).

The vocabularies with a run-time check live in ``records.py``: :data:`ReceiptReason` here is the
same list as ``records.REASONS`` (the test keeps them equal). mypy checks the word at every call of
:func:`~donebell.shared.records.new_receipt`; the function checks it again at run time for a word
that came from data (loud under test, reported in use: ``records._unknown`` says why).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

#: Why a record reached sent/, suppressed/ or dead/ (``explain``, ``status`` and tests rely on these words).
ReceiptReason = Literal[
    "sent",
    "subagent",
    "superseded",
    "technical-turn",
    "merged",
    "unverifiable",
    "claude-session-unverifiable",
    "goal-cleared",
    "duplicate",
    "disabled",
    "invalid-record",
    "permanent-http-error",
    "max-attempts",
    "test",
    "too-short",
    "user-returned",
    "digest",
    "answered-at-desk",
    "test-replaced",
    "test-expired",
]
#: The terminal outcome of a turn, when the evidence says so (``records.OUTCOMES``).
Outcome = Literal["done", "failed", "stopped"]
ReceiptStatus = Literal["sent", "suppressed", "dead"]


class Probe(TypedDict, total=False):
    """A candidate's probe state (the gate's; docs/gate.md)."""

    history: list[dict[str, Any]]
    next_probe_at: float | None
    attempts: int
    first_seen_at: float
    wait_kind: str
    waiting_for: dict[str, Any]
    ladder: list[dict[str, Any]]


class _Base(TypedDict):
    schema: int
    kind: str
    key: str
    provider: str
    created_at: float


class Candidate(_Base, total=False):
    """pending/: evidence that a turn may have ended (common, Codex and Claude fields)."""

    updated_at: float
    revision: int
    source: str
    sources: list[str]
    weak_identity: bool
    outcome: Outcome | None
    error: str | None
    last_message: str
    cwd: str | None
    transcript_path: str | None
    origin: str | None
    probe: Probe
    # Codex
    thread_id: str | None
    turn_id: str | None
    codex_home: str
    sqlite_home: str
    classification: str
    parent_thread_id: str | None
    root_thread_id: str | None
    has_user_message: bool | None
    has_final_message: bool
    # Claude
    session_id: str | None
    prompt_id: str | None
    claude_epoch: int
    goal_baseline: dict[str, Any] | None


class OutboxRecord(Candidate, total=False):
    """outbox/: an idle-confirmed candidate plus its delivery state."""

    promoted_at: float
    verdict: str
    sequence_id: str
    attempts: int
    next_attempt_at: float | None
    last_error: str | None
    last_attempt_at: float
    last_http_status: int
    notice: str
    test: bool


class Receipt(_Base, total=False):
    """sent/, suppressed/, dead/: the compact final state (ids and outcome, never message text)."""

    status: ReceiptStatus
    reason: ReceiptReason
    source: str
    sources: list[str]
    weak_identity: bool
    candidate_created_at: float
    probe_history: list[dict[str, Any]]
    probe_ladder: list[dict[str, Any]]
    thread_id: str | None
    turn_id: str | None
    session_id: str | None
    prompt_id: str | None
    sequence_id: str
    attempts: int
    outcome: Outcome | None
    # copied from the record when it has them (``records._RECEIPT_FIELDS``)
    root_thread_id: str | None
    test: bool
    origin: str | None
    policy: dict[str, Any]
    members: list[str]
    digest_of: str
    promoted_at: float
    notice: str
    agent_id: str | None
    tool_digest: str | None
    approval_until: float
    answer_path: str | None
    answer_offset: int | None
    claude_epoch: int


class CursorRecord(_Base, total=False):
    """watch/: where a rollout has been read to (``kit/jsonl_tail.Cursor.to_record``)."""

    updated_at: float
    path: str
    dev: int
    ino: int
    offset: int
    size: int
    mtime_ns: int
    skipping: bool
    thread_id: str | None
    meta: dict[str, Any] | None
    turns: dict[str, dict[str, Any]]
    current_turn: str | None
    invalid: dict[str, Any]
    terminals: int
    replay_floor: float | None
    line_fp: str | None


class ClaudeSession(_Base, total=False):
    """claude/: one Claude Code session's prompt epoch (the hook's, under the key's mutation lock)."""

    updated_at: float
    session_id: str
    epoch: int
    prompt_id: str | None
    recent_prompt_ids: list[str]
    goal_baseline: dict[str, Any] | None
    goal_scan: dict[str, Any]
    transcript_path: str | None
    cwd: str | None
    held_prompt_id: str | None
    held_reason: str | None
