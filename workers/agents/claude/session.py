"""The Claude session record (``claude/<sha256(session_id)>.json``): prompt epochs and goal baselines.

Every UserPromptSubmit advances the session's ``epoch`` by one, names the new ``prompt_id``,
records the newest ``goal_status`` marker of the transcript tail as that prompt's
``goal_baseline``, and then finishes the session's *older* pending candidates into
``suppressed/`` with reason ``superseded`` (a receipt, not a silent delete, so ``explain`` can
say what happened; candidates of the current epoch or newer are kept). A candidate carries the
``claude_epoch`` it was written under; the gate compares it with this record before promotion.

Locks: the session record changes under the mutation lock of its own key; each candidate is
finished under *its* key's lock, taken after the session lock was released. The hook never
holds two mutation locks at once (two keys can share one of the 64 shard files, and ``flock``
on a second descriptor of the same file would wait for itself).

``recent_prompt_ids`` (the last :data:`RECENT_PROMPTS`) tells a late signal of an older prompt
(stale: ignored, a Stop as well as a late or repeated UserPromptSubmit) apart from a prompt whose
UserPromptSubmit was never seen (the epoch advances then, as if it had been).
"""

from __future__ import annotations

from donebell.shared.keys import claude_session_key
from donebell.shared.records import as_shape, base, new_receipt
from donebell.shared.statedir import CLAUDE, PENDING, SUPPRESSED, InvalidRecord, StateDir, now
from donebell.workers.agents.claude.goal_status import newest_goal_marker
from donebell.workers.agents.claude.outcome import goal_from_index

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any, Literal

    from donebell.shared.record_types import ClaudeSession

    PromptState = Literal["current", "advanced", "stale", "no-session"]

RECENT_PROMPTS = 16


def read_session(state: StateDir, session_id: str) -> ClaudeSession | None:
    """The session record, or None (absent, corrupt or not this session's)."""
    return _load(state, session_id)[0]


def _load(state: StateDir, session_id: str) -> tuple[ClaudeSession | None, bool]:
    """``(record, corrupt)``; only a caller holding the session lock may move a corrupt one aside."""
    try:
        record = state.read(CLAUDE, claude_session_key(session_id))
    except InvalidRecord:
        return None, True
    if record is None:
        return None, False
    if record.get("session_id") != session_id or not isinstance(record.get("epoch"), int):
        return None, True
    session: ClaudeSession = as_shape(record)  # its session and epoch checked: the fields the hook relies on
    return session, False


def advance(
    state: StateDir, session_id: str, prompt_id: str | None, transcript_path: str | None, cwd: str | None
) -> ClaudeSession:
    """Start a new prompt epoch (UserPromptSubmit); the same or an older prompt changes nothing."""
    marker, scan = newest_goal_marker(transcript_path)  # bounded read, outside the lock
    if marker is None:  # more than the window back: the scanner's index of the transcript knows
        marker, scan = goal_from_index(state, transcript_path, scan)
    key = claude_session_key(session_id)
    with state.mutation_lock(key):
        current, corrupt = _load(state, session_id)
        if corrupt:
            state.dead_letter_invalid(CLAUDE, f"{key}.json", "claude session record unreadable or incompatible")
        if current is not None and prompt_id is not None and current.get("prompt_id") == prompt_id:
            return current
        if current is not None and is_stale(current, prompt_id):
            return current  # a late or repeated UserPromptSubmit of an older prompt: no new epoch
        if current is None:
            # First prompt seen, or the record was lost: start above every epoch still pending.
            epoch = _highest_pending_epoch(state, session_id) + 1
            record = base("claude-session", key, "claude")
        else:
            epoch = int(current["epoch"]) + 1
            record = {**current}
        recent = [p for p in record.get("recent_prompt_ids") or [] if isinstance(p, str) and p != prompt_id]
        if prompt_id is not None:
            recent.append(prompt_id)
        record.update(
            {
                "session_id": session_id,
                "epoch": epoch,
                "prompt_id": prompt_id,
                "recent_prompt_ids": recent[-RECENT_PROMPTS:],
                "goal_baseline": marker,
                "goal_scan": scan,
                "transcript_path": transcript_path,
                "cwd": cwd,
                "updated_at": now(),
            }
        )
        state.replace(CLAUDE, record)
    made: ClaudeSession = as_shape(record)
    return made


def for_prompt(
    state: StateDir, session_id: str, prompt_id: str, transcript_path: str | None, cwd: str | None
) -> tuple[ClaudeSession | None, PromptState]:
    """The session record a Stop/StopFailure of ``prompt_id`` belongs to, and how it relates.

    ``current``: the latest prompt. ``stale``: an older prompt of this session (the signal is
    late; nothing should be written). ``advanced``: a prompt never announced by
    UserPromptSubmit — the epoch was advanced now. ``no-session``: no UserPromptSubmit was ever
    seen for this session (hook added mid-session): an epoch-0 compatibility candidate.
    """
    record, corrupt = _load(state, session_id)
    if record is None and not corrupt:
        return None, "no-session"
    if record is not None and record.get("prompt_id") == prompt_id:
        return record, "current"
    if record is not None and is_stale(record, prompt_id):
        return record, "stale"
    # A prompt never announced (or a corrupt record, repaired under the lock): start its epoch now.
    record = advance(state, session_id, prompt_id, transcript_path, cwd)
    supersede_older(state, session_id, int(record["epoch"]))
    return record, "advanced"


def is_stale(record: ClaudeSession, prompt_id: str | None) -> bool:
    """``prompt_id`` is an older prompt of this session (not the current one)."""
    return (
        prompt_id is not None
        and record.get("prompt_id") != prompt_id
        and prompt_id in (record.get("recent_prompt_ids") or [])
    )


def note_held(state: StateDir, session_id: str, prompt_id: str, reason: str) -> bool:
    """Record that the Stop hook saw ``prompt_id`` end with work still registered (not final).

    The transcript cannot show every kind of background work (monitors, workflows), so the
    local scanner's recovery defers to this: it never submits a prompt the hook held.
    """
    key = claude_session_key(session_id)
    with state.mutation_lock(key):
        current, _corrupt = _load(state, session_id)
        if current is None or current.get("prompt_id") != prompt_id:
            return False
        record = dict(current)
        record.update(held_prompt_id=prompt_id, held_reason=reason[:200], updated_at=now())
        state.replace(CLAUDE, record)
    return True


def supersede_older(state: StateDir, session_id: str, epoch: int) -> int:
    """Finish this session's pending candidates with ``claude_epoch < epoch``; returns how many."""
    finished = 0
    for key in state.keys(PENDING):
        try:
            record = state.read(PENDING, key)
        except InvalidRecord:
            continue  # the gate dead-letters it; not ours to judge here
        if record is None or record.get("provider") != "claude" or record.get("session_id") != session_id:
            continue
        if _epoch_of(record) < epoch and supersede_key(state, key, session_id, epoch):
            finished += 1
    return finished


def superseded_since(state: StateDir, key: str, session_id: str, epoch: int) -> bool:
    """A UserPromptSubmit advanced the session past ``epoch`` between a hook's read and its write
    of ``key``: finish that candidate as superseded (True when it was)."""
    latest = read_session(state, session_id)
    if latest is None or int(latest["epoch"]) <= epoch:
        return False
    return supersede_key(state, key, session_id, int(latest["epoch"]))


def supersede_key(state: StateDir, key: str, session_id: str, epoch: int) -> bool:
    """Under ``key``'s lock: finish it as ``superseded`` if it is still an older pending candidate."""
    with state.mutation_lock(key):
        if state.locate(key) != PENDING:
            return False  # promoted (immutable) or already final
        try:
            current = state.read(PENDING, key)
        except InvalidRecord:
            return False
        if current is None or current.get("session_id") != session_id or _epoch_of(current) >= epoch:
            return False
        receipt = new_receipt(current, status="suppressed", reason="superseded", superseded_by_epoch=epoch)
        state.finish(PENDING, SUPPRESSED, receipt)
    return True


def _epoch_of(record: dict[str, Any]) -> int:
    value = record.get("claude_epoch")
    return value if isinstance(value, int) else 0


def _highest_pending_epoch(state: StateDir, session_id: str) -> int:
    highest = 0
    for key in state.keys(PENDING):
        try:
            record = state.read(PENDING, key)
        except InvalidRecord:
            continue
        if record is not None and record.get("provider") == "claude" and record.get("session_id") == session_id:
            highest = max(highest, _epoch_of(record))
    return highest
